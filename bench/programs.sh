#!/usr/bin/env bash
# Programs of several statements (issue 40), RUNS times each, in a fresh MESHTUNE_HOME
# calibrated on first use:
#   1. the two-GEMM MLP H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e] at b=2048,
#      d=1024, f=4096, e=1024 tuned on 4 ranks and measured under MPI (--top-k 3): the best
#      program's measured time and whether H moves between the statements;
#   2. the three-statement chain H = X*W1; G = H + Bias; Y = G*W2 at b=1024, d=8, f=8192,
#      e=8 on 4 ranks (--top-k 2, 10 repetitions): the joint best and "separate" (each
#      statement's own best, then the moves) measured in the same tune, and their ratio;
#   3. a model-only tune of the MLP on 64 ranks: its wall time.
# Prints a table row per run and the medians.
#
#   bash bench/programs.sh            # RUNS=3
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
mlp='H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]'
chain='H[b,f] = X[b,d] * W1[d,f]; G[b,f] = H[b,f] + Bias[b,f]; Y[b,e] = G[b,f] * W2[f,e]'

echo "| run | MLP 4 ranks: best measured s | H moved | chain: joint s | separate s | separate/joint | MLP 64 ranks model-only s |"
echo "|---|---|---|---|---|---|---|"
for ((r = 1; r <= runs; r++)); do
  "$meshtune" tune --expr "$mlp" --extents b=2048,d=1024,f=4096,e=1024 --ranks 4 --top-k 3 \
    --no-db --json >"$work/mlp$r.json" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
  "$meshtune" tune --expr "$chain" --extents b=1024,d=8,f=8192,e=8 --ranks 4 --top-k 2 \
    --reps 10 --no-db --json >"$work/chain$r.json" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
  start=$(date +%s.%N)
  "$meshtune" tune --expr "$mlp" --extents b=2048,d=1024,f=4096,e=1024 --ranks 64 --model-only \
    --no-db --json >"$work/m64.json" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
  end=$(date +%s.%N)
  python3 - "$work/mlp$r.json" "$work/chain$r.json" "$r" "$start" "$end" >>"$work/rows.txt" <<'PY'
import json, sys
mlp = json.load(open(sys.argv[1]))["program"]
chain = json.load(open(sys.argv[2]))["program"]
best = mlp["best"]
moved = "no" if all(m.get("inPlace", m.get("in_place")) for m in best.get("moves", [])) else "yes"
j = chain["best"].get("measuredS", chain["best"].get("measured_s", 0))
s = chain["separate"].get("measuredS", chain["separate"].get("measured_s", 0))
ratio = chain.get("separateOverBest", chain.get("separate_over_best", 0))
print(sys.argv[3], best.get("measuredS", best.get("measured_s", 0)), moved, j, s, ratio,
      float(sys.argv[5]) - float(sys.argv[4]))
PY
  tail -1 "$work/rows.txt" | awk '{printf "| %s | %.4g | %s | %.4g | %.4g | %.2f | %.2f |\n", $1, $2, $3, $4, $5, $6, $7}'
done
python3 - "$work/rows.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
col = lambda i: statistics.median(float(r[i]) for r in rows)
print("| median | %.4g | | %.4g | %.4g | %.2f | %.2f |" % (col(1), col(3), col(4), col(5), col(6)))
PY
