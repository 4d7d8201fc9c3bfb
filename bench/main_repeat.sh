#!/usr/bin/env bash
# The main job again and again: `bash tools/main.sh` (1024^3 on 4 ranks, every mesh, the
# model's top 3 and ScaLAPACK's PSGEMM measured side by side) RUNS times in a row, each
# answer with its decision ("separated" or "tie within noise") and vs_library with its
# interval; then the truth measured alone: the chosen schedule of the last run and the
# fastest PSGEMM configuration, each by `meshtune run --reps 4` in its own job, the two
# alternating PAIRS times (so that a slow spell of the machine falls on both), and the
# median of the pairs' ratios with its 95% interval, which every run's vs_library should
# match.
#
#   bash bench/main_repeat.sh          # RUNS=5
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}"
pairs="${PAIRS:-8}"
bash tools/deps.sh
bazel build -c opt //cli:meshtune //runtime:meshtune_worker //runtime:meshtune_calibrate >/dev/null
meshtune="$PWD/bazel-out/k8-opt/bin/cli/meshtune"  # not bazel-bin: the last build's mode
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
expr='C[m,n] += A[m,k] * B[k,n]'
extents='m=1024,n=1024,k=1024'
echo "| run | answer | decision | leader vs runner-up (95% CI) | vs_library (95% CI) |"
echo "|---|---|---|---|---|"
for ((r = 1; r <= runs; r++)); do
  bash tools/main.sh --json --no-db >"$work/tune-$r.json" 2>"$work/err.txt" ||
    { echo "| $r | failed: $(tail -1 "$work/err.txt") |"; continue; }
  python3 - "$work/tune-$r.json" "$r" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
rec = t["record"]
lib = rec.get("library")
place = [i + 1 for i, m in enumerate(t["measurements"])
         if m["trace"]["text"] == rec["trace"]["text"] and m["mesh"] == rec["mesh"]]
answer = ("PSGEMM %dx%d NB %d" % (lib["prow"], lib["pcol"], lib["nb"]) if lib
          else "%s #%s" % (rec["mesh"], place[0] if place else "?"))
c = t.get("comparison", {})
cmp = "%s vs %s: %.3f (%.3f-%.3f, %d rounds)" % (
    c.get("leader", "-"), c.get("runner_up", "-"), c.get("ratio", 0), c.get("ratio_ci_low", 0),
    c.get("ratio_ci_high", 0), c.get("rounds", 0))
vs = "-"
if "vs_library" in t:
    vs = "%.3f" % t["vs_library"]
    if "vs_library_ci_low" in t:
        vs += " (%.3f-%.3f)" % (t["vs_library_ci_low"], t["vs_library_ci_high"])
print("| %s | %s | %s | %s | %s |" % (sys.argv[2], answer, t.get("decision", ""), cmp, vs))
PY
done
last="$work/tune-$runs.json"
[ -f "$last" ] || exit 0
python3 - "$last" "$work" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
rec = t["record"]
open(sys.argv[2] + "/trace", "w").write(rec["trace"]["text"])
open(sys.argv[2] + "/mesh", "w").write(rec["mesh"])
libs = [l for l in t.get("library", []) if "measured_s" in l]
best = min(libs, key=lambda l: l["measured_s"])
open(sys.argv[2] + "/library", "w").write("%dx%d,%d" % (best["prow"], best["pcol"], best["nb"]))
PY
for ((p = 1; p <= pairs; p++)); do
  "$meshtune" run --expr "$expr" --extents "$extents" --mesh "$(cat "$work/mesh")" \
    --trace "$work/trace" --reps 4 --json >"$work/schedule-$p.json"
  "$meshtune" run --expr "$expr" --extents "$extents" --library "$(cat "$work/library")" \
    --reps 4 --json >"$work/library-$p.json"
done
python3 - "$work" "$pairs" "$(cat "$work/mesh")" "$(cat "$work/library")" <<'PY'
import json, math, sys
work, pairs = sys.argv[1], int(sys.argv[2])
s = [json.load(open("%s/schedule-%d.json" % (work, p)))["median_s"] for p in range(1, pairs + 1)]
l = [json.load(open("%s/library-%d.json" % (work, p)))["median_s"] for p in range(1, pairs + 1)]
r = sorted(a / b for a, b in zip(s, l))
n = len(r)
# The median's 95% interval from order statistics (as base/sample_stats.h).
def cdf(k):
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
j = 1
while j + 1 <= (n + 1) // 2 and cdf(j) <= 0.025:
    j += 1
med = r[n // 2] if n % 2 else (r[n // 2 - 1] + r[n // 2]) / 2
print()
print("alone, alternating %d pairs: the chosen schedule on %s median %.4g s (%.4g-%.4g), "
      "PSGEMM %s median %.4g s (%.4g-%.4g); their ratio %.3f (95%% interval %.3f-%.3f, "
      "coverage %.2f)" % (n, sys.argv[3], sorted(s)[n // 2], min(s), max(s), sys.argv[4],
                         sorted(l)[n // 2], min(l), max(l), med, r[j - 1], r[n - j],
                         1 - 2 * cdf(j - 1)))
PY
