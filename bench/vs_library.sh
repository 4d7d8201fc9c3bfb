#!/usr/bin/env bash
# Out of the box against the library: for each shape, in a fresh MESHTUNE_HOME (so the tune
# calibrates itself first, as a new user's does), `meshtune tune --ranks 4 --top-k 4` on
# C[m,n] += A[m,k] * B[k,n], which also times ScaLAPACK's PSGEMM at its most promising grids
# and block sizes in the same tune (runtime::LibraryGemmConfigs). Prints per shape and run
# the winner's measured time, the fastest PSGEMM's, their ratio (vs_library) and the winner,
# then the median ratio over RUNS runs.
#
#   bash bench/vs_library.sh              # RUNS=3
#   RUNS=5 ONLY=65536 bash bench/vs_library.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-3}"
only="${ONLY:-}"
ranks="${RANKS:-4}"
bazel build -c opt //cli:meshtune //runtime:meshtune_worker //runtime:meshtune_calibrate \
  >/dev/null 2>&1 || bazel build -c opt //cli:meshtune //runtime:meshtune_worker
meshtune="$PWD/bazel-bin/cli/meshtune"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset MESHTUNE_CALIBRATE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shapes=(65536,256,256 2048,2048,2048 4096,4096,512 512,512,65536 1001,999,997 8192,512,2048)
echo "| m,n,k | run | tuned s | PSGEMM s (config) | vs_library | winner mesh |"
echo "|---|---|---|---|---|---|"
for shape in "${shapes[@]}"; do
  [[ -z "$only" || "$shape" == *"$only"* ]] || continue
  IFS=, read -r m n k <<<"$shape"
  ratios=()
  for ((r = 1; r <= runs; r++)); do
    home="$work/home-$shape-$r"
    mkdir -p "$home"
    MESHTUNE_HOME="$home" "$meshtune" tune --expr 'C[m,n] += A[m,k] * B[k,n]' \
      --extents "m=$m,n=$n,k=$k" --ranks "$ranks" --top-k 4 --no-db --json \
      >"$work/out.json" 2>"$work/err.txt" || { cat "$work/err.txt"; continue; }
    line=$(python3 - "$work/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lib = [l for l in r.get("library", []) if "measured_s" in l]
best = min(lib, key=lambda l: l["measured_s"]) if lib else None
tuned = r["record"].get("measured_s")
print("%s|%s|%s|%s" % (
    "%.4g" % tuned if tuned else "-",
    "%.4g (%dx%d NB %d)" % (best["measured_s"], best.get("prow", 0), best.get("pcol", 0),
                            best.get("nb", 0)) if best else "-",
    "%.3f" % r["vs_library"] if "vs_library" in r else "-",
    r["record"]["mesh"]))
PY
)
    IFS='|' read -r tuned lib ratio mesh <<<"$line"
    echo "| $shape | $r | $tuned | $lib | $ratio | $mesh |"
    [[ "$ratio" == "-" ]] || ratios+=("$ratio")
  done
  if ((${#ratios[@]} > 0)); then
    median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "| $shape | median of ${#ratios[@]} | | | $median | |"
  fi
done
