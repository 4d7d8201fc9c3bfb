#!/usr/bin/env bash
# meshtune.Plan.execute from Python against Plan::Execute from C++ on the same plan (the
# wisdom record of //bench:plan_bench_inputs: C[m,n] += A[m,k] * B[k,n], 2048 cubed, f32, 4
# ranks), ROUNDS rounds of two mpirun jobs in alternating order: bench/plan_bench.cc
# --plan-only 1 and bench/python_execute.py, each the median of REPS executes after a
# warm-up. Prints a row per round (both medians, Python / C++) and the medians over rounds.
#
#   bash bench/python_vs_cpp.sh        # ROUNDS=5 REPS=7
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
reps=${REPS:-7}
bazel build -c opt //bench:plan_bench //bench:plan_bench_inputs //python >/dev/null 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export PYTHONPATH=$PWD/bazel-bin/python
wisdom=$PWD/bazel-bin/bench/plan_bench_wisdom.jsonl
mpi=(mpirun -n 4 --oversubscribe --bind-to none)
cpp() { "${mpi[@]}" bazel-bin/bench/plan_bench --wisdom "$wisdom" --reps "$reps" --plan-only 1; }
py() { "${mpi[@]}" /usr/bin/python3 bench/python_execute.py --wisdom "$wisdom" --reps "$reps"; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "| round | C++ Execute s | Python execute s | Python / C++ |"
echo "|---|---|---|---|"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    c=$(cpp | sed -n 's/.*median \([0-9.]*\) s.*/\1/p'); p=$(py | sed -n 's/.*median \([0-9.]*\) s.*/\1/p')
  else
    p=$(py | sed -n 's/.*median \([0-9.]*\) s.*/\1/p'); c=$(cpp | sed -n 's/.*median \([0-9.]*\) s.*/\1/p')
  fi
  ratio=$(awk -v p="$p" -v c="$c" 'BEGIN {printf "%.3f", p / c}')
  echo "$c $p $ratio" >>"$rows"
  echo "| $r | $c | $p | $ratio |"
done
echo "| median | $(cut -d' ' -f1 "$rows" | median) | $(cut -d' ' -f2 "$rows" | median) | $(cut -d' ' -f3 "$rows" | median) |"
