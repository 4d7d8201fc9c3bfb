#!/usr/bin/env bash
# Physics against the measurements: over five GEMM shapes on 4 and on 2 ranks, every time a
# tune prints (each measured schedule's and library configuration's median and fastest
# sample, the record's) and the winner's time run alone, against the floor 2mnk / peak, the
# peak being one process of OpenBLAS on every core at 2048^3 (bench/gemm_peak.cc, its best
# of 5). Prints a row per shape and rank count: how many times there were, how many fell
# below the floor (must be 0), the smallest time over its floor, and the answer.
#
#   bash bench/measured_floor.sh            # RANKS="4 2"
#   RANKS=4 ONLY=1024 bash bench/measured_floor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
only="${ONLY:-}"
bazel build -c opt //cli:meshtune //runtime:meshtune_worker //runtime:meshtune_calibrate \
  //bench:gemm_peak >/dev/null
bin="$PWD/bazel-out/k8-opt/bin"  # not bazel-bin, which follows the last build's mode
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset MESHTUNE_CALIBRATE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
peaks="$work/peaks"
peak() {
  OPENBLAS_NUM_THREADS= "$bin/bench/gemm_peak" --reps 5 | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["best_gflops"])' >>"$peaks"
}
: >"$work/rows"
for ranks in ${RANKS:-4 2}; do
  home="$work/home-$ranks"
  mkdir -p "$home"
  for shape in 1024,1024,1024 2048,2048,2048 65536,256,256 1001,999,997 512,512,65536; do
    [[ -z "$only" || "$shape" == *"$only"* ]] || continue
    IFS=, read -r m n k <<<"$shape"
    expr='C[m,n] += A[m,k] * B[k,n]'
    peak
    MESHTUNE_HOME="$home" "$bin/cli/meshtune" tune --expr "$expr" --extents "m=$m,n=$n,k=$k" \
      --ranks "$ranks" --top-k 3 --json >"$work/tune.json" 2>"$work/err.txt" ||
      { echo "| $ranks | $shape | tune failed: $(tail -1 "$work/err.txt") |"; continue; }
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["record"]["id"])' \
      "$work/tune.json")
    MESHTUNE_HOME="$home" "$bin/cli/meshtune" run --record "$id" --expr "$expr" \
      --extents "m=$m,n=$n,k=$k" --reps 8 --json >"$work/run.json" 2>>"$work/err.txt" || true
    python3 - "$work/tune.json" "$work/run.json" "$m" "$n" "$k" "$ranks" >>"$work/rows" <<'PY'
import json, sys
tune = json.load(open(sys.argv[1]))
try:
    run = json.load(open(sys.argv[2]))
except Exception:
    run = {}
m, n, k = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
times = []
def add(x):
    if "measured_s" in x:
        times.append(x["measured_s"])
    s = x.get("sample", {})
    if s.get("n", 0) > 0:
        times.append(s["min_s"])
for c in tune.get("measurements", []):
    add(c)
for l in tune.get("library", []):
    add(l)
add(tune["record"])
if run.get("median_s"):
    times.append(run["median_s"])
    times.append(run["sample"]["min_s"])
lib = tune["record"].get("library")
answer = ("PSGEMM %dx%d NB %d" % (lib["prow"], lib["pcol"], lib["nb"]) if lib
          else "schedule on " + tune["record"]["mesh"]) + " (" + (tune.get("decision") or "-") + ")"
alone = ("%.4g (%.4g-%.4g)" % (run["median_s"], run["sample"]["ci_low_s"],
                               run["sample"]["ci_high_s"]) if run.get("median_s") else "-")
print(json.dumps({"ranks": sys.argv[6], "flops": 2.0 * m * n * k, "shape": "%d,%d,%d" % (m, n, k),
                  "times": times, "answer": answer, "alone": alone}))
PY
  done
done
peak
python3 - "$work/rows" "$peaks" <<'PY'
import json, sys
peak = max(float(x) for x in open(sys.argv[2]) if x.strip())
print("peak: one process of OpenBLAS on every core, 2048^3 f32, the best of %d measurements: "
      "%.1f GF/s" % (sum(1 for x in open(sys.argv[2]) if x.strip()), peak))
print()
print("| ranks | m,n,k | floor s | times | below floor | least time / floor | answer | answer alone s (95% CI) |")
print("|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    floor = r["flops"] / (peak * 1e9)
    t = r["times"]
    print("| %s | %s | %.4g | %d | %d | %.2f | %s | %s |" % (
        r["ranks"], r["shape"], floor, len(t), sum(1 for x in t if x < floor),
        min(t) / floor if t else 0, r["answer"], r["alone"]))
PY
