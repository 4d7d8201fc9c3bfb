#!/usr/bin/env bash
# Search breadth: how fast a model-only tune answers for every problem structure the space
# generates, not only matmul. For a fixed list of problems at 4 to 4,096 ranks it runs
# `meshtune tune --model-only --no-db --json` RUNS times (built-in machine numbers, no
# database) and prints, per problem, the median wall time, the peak resident memory (the
# largest of the runs), the legal count ("~" when estimated from a sample), what decided
# legality (tensor checks by closed forms / by isl, and legal points isl lowered for
# costing), how the winner was checked, and its words per rank against the lower bound
# where one exists (matmul-like problems).
#
#   bash bench/breadth.sh            # every problem, RUNS=3
#   RUNS=1 ONLY=ttm bash bench/breadth.sh   # the problems whose name contains "ttm"
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${RUNS:-3}"
only="${ONLY:-}"
bazel build -c opt //cli:meshtune >/dev/null 2>&1 || bazel build -c opt //cli:meshtune
meshtune="$PWD/bazel-bin/cli/meshtune"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export MESHTUNE_HOME="$home"

# name | expression | extents | ranks
problems=(
  "contract4-4|T[a,b] = U[a,c,d] * V[c,d,b]|a=512,b=512,c=64,d=64|4"
  "contract4-16|T[a,b] = U[a,c,d] * V[c,d,b]|a=512,b=512,c=64,d=64|16"
  "mttkrp-8|D[i,j] = A[i,k,l] * B[k,j] * C[l,j]|i=1024,j=64,k=256,l=256|8"
  "mttkrp-64|D[i,j] = A[i,k,l] * B[k,j] * C[l,j]|i=1024,j=64,k=256,l=256|64"
  "ttm-8|Y[i,j,r] = X[i,j,k] * U[k,r]|i=256,j=256,k=256,r=32|8"
  "ttm-64|Y[i,j,r] = X[i,j,k] * U[k,r]|i=256,j=256,k=256,r=32|64"
  "fan-16|E[a,b,c] = F[a,d] * G[d,b,c]|a=128,b=128,c=128,d=128|16"
  "batched-8|C[b,m,n] = A[b,m,k] * B[b,k,n]|b=32,m=512,n=512,k=512|8"
  "add-16|C[i,j] = A[i,j] + B[i,j]|i=4096,j=4096|16"
  "matvec-64|y[i] += A[i,j] * x[j]|i=8192,j=8192|64"
  "matmul-ragged-7|C[m,n] += A[m,k] * B[k,n]|m=1001,n=999,k=997|7"
  "matmul-64|C[m,n] += A[m,k] * B[k,n]|m=4096,n=4096,k=4096|64"
  "matmul-1024|C[m,n] += A[m,k] * B[k,n]|m=8192,n=8192,k=8192|1024"
  "matmul-4096|C[m,n] += A[m,k] * B[k,n]|m=8192,n=8192,k=8192|4096"
  "contract4-1024|T[a,b] = U[a,c,d] * V[c,d,b]|a=512,b=512,c=64,d=64|1024"
)

printf '| problem | ranks | time (median of %s) | peak memory | legal | checks closed / isl | isl lowerings | checked | words vs lower bound |\n' "$runs"
printf '|---|---|---|---|---|---|---|---|---|\n'
for p in "${problems[@]}"; do
  IFS='|' read -r name expr extents ranks <<<"$p"
  [ -z "$only" ] || [[ "$name" == *"$only"* ]] || continue
  times=() peak=0 out=""
  for ((r = 0; r < runs; r++)); do
    out=$(/usr/bin/time -f '%e %M' -o "$home/time" "$meshtune" tune --expr "$expr" \
      --extents "$extents" --ranks "$ranks" --model-only --no-db --no-calibrate --json 2>/dev/null) || {
      printf '| `%s` | %s | failed | | | | | | |\n' "$expr" "$ranks"
      continue 2
    }
    read -r t m <"$home/time"
    times+=("$t")
    [ "$m" -le "$peak" ] || peak=$m
  done
  median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%s' "$out" >"$home/out.json"
  python3 - "$expr" "$extents" "$ranks" "$median" "$peak" "$home/out.json" <<'PY'
import json, sys
expr, extents, ranks, median, peak, path = sys.argv[1:]
d = json.load(open(path))
legal = ("~" if d.get("legal_estimated") else "") + str(d.get("legal", 0))
ratio = d.get("lower_bound_ratio")
rec = d["record"]
print(f"| `{expr}` {extents} | {ranks} | {float(median):.2f} s | {int(peak) // 1024} MiB | {legal} "
      f"| {d.get('checks_closed_form', 0)} / {d.get('checks_isl', 0)} | {d.get('lowerings_isl', 0)} "
      f"| {rec.get('checked', '-')} | {'-' if ratio is None else f'{ratio:.2f}'} |")
PY
done
