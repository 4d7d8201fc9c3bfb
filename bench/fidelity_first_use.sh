#!/usr/bin/env bash
# The model out of the box: in a fresh MESHTUNE_HOME, a few tunes on 2 ranks (the first
# calibrates itself, each keeps its measured runs and may refit the profile's term scales),
# then `meshtune fidelity` on x=2 at 1024 cubed, RUNS times, with no `calibrate` step.
# Prints the refit notes, then per run Spearman's rho and Kendall's tau with their 95%
# bootstrap intervals (of the times as measured, side by side in rounds), the pairs apart
# beyond the noise the model orders right, the rounds' own rho, the median error and the
# seconds it took; then the medians over the runs. KEEP=DIR keeps each run's
# FidelityResult there (DIR/fN.json) for `fidelity_bench --replay`.
#
#   bash bench/fidelity_first_use.sh          # RUNS=3
#   RUNS=5 KEEP=/tmp/runs bash bench/fidelity_first_use.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-3}"
bazel build -c opt //cli:meshtune //runtime:meshtune_worker //runtime:meshtune_calibrate >/dev/null 2>&1
meshtune="$PWD/bazel-bin/cli/meshtune"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset MESHTUNE_CALIBRATE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export MESHTUNE_HOME="$work/home"
mkdir -p "$MESHTUNE_HOME"
expr='C[m,n] += A[m,k] * B[k,n]'

for extents in m=1024,n=1024,k=1024 m=512,n=2048,k=768 m=2048,n=512,k=1024; do
  "$meshtune" tune --expr "$expr" --extents "$extents" --ranks 2 --top-k 4 --json \
    >/dev/null 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
  grep '^meshtune: \(no hardware profile\|refitted\|kept the cost model\)' "$work/err.txt" || true
done

echo "| run | rho [95%] | tau [95%] | separable pairs ordered right | rounds' own rho | median error | seconds |"
echo "|---|---|---|---|---|---|---|"
for ((r = 1; r <= runs; r++)); do
  start=$(date +%s.%N)
  "$meshtune" fidelity --expr "$expr" --extents m=1024,n=1024,k=1024 --mesh x=2 --json \
    >"$work/f$r.json" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
  end=$(date +%s.%N)
  if [[ -n "${KEEP:-}" ]]; then mkdir -p "$KEEP" && cp "$work/f$r.json" "$KEEP/f$r.json"; fi
  grep '^meshtune: \(refitted\|kept the cost model\)' "$work/err.txt" || true
  python3 - "$work/f$r.json" "$r" "$start" "$end" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
get = lambda k: "%.3f" % d[k] if k in d else "-"
ci = lambda k: ("%s [%.3f, %.3f]" % (get(k), d[k + "_ci_low"], d[k + "_ci_high"])
                if k + "_ci_low" in d else get(k))
pairs = int(d.get("separable_pairs", 0))
separable = ("%d of %d (%.1f%%)" % (int(d.get("separable_agree", 0)), pairs,
                                    100 * d["separable_share"]) if pairs else "none")
print("| %s | %s | %s | %s | %s | %s | %.0f |" % (sys.argv[2], ci("spearman_rho"),
      ci("kendall_tau"), separable, get("round_spearman_rho"), get("median_relative_error"),
      float(sys.argv[4]) - float(sys.argv[3])))
PY
done | tee "$work/table.txt"
python3 - "$work/table.txt" <<'PY'
import statistics, sys
rows = [l.split("|")[2:7] for l in open(sys.argv[1]) if l.startswith("| ") and l[2].isdigit()]
cols = list(zip(*rows))
def med(c, first=lambda x: x.split()[0]):
    v = [float(first(x)) for x in c if x.strip() not in ("-", "none")]
    return "%.3f" % statistics.median(v) if v else "-"
share = lambda x: float(x.split("(")[1].rstrip("%) ")) / 100
print("medians: rho %s, tau %s, separable share %s, rounds' own rho %s, median error %s" %
      (med(cols[0]), med(cols[1]), med(cols[2], share), med(cols[3]), med(cols[4])))
PY
