#!/usr/bin/env bash
# Out of the box against the library: for each shape, in a fresh MESHTUNE_HOME (so the tune
# calibrates itself first, as a new user's does), `meshtune tune --ranks 4 --top-k 4` on
# C[m,n] += A[m,k] * B[k,n], which also times ScaLAPACK's PSGEMM at its most promising grids
# and block sizes in the same tune (runtime::LibraryGemmConfigs). Prints per shape and run
# the answer's measured time (the library's when it beat every schedule by more than 5%),
# the fastest schedule's, the fastest PSGEMM's, the answer's ratio to it (vs_library), the
# fastest schedule's ratio to it, and the answer; then the medians over RUNS runs.
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
echo "| m,n,k | run | answer s | fastest schedule s | PSGEMM s (config) | vs_library | schedule / PSGEMM | answer |"
echo "|---|---|---|---|---|---|---|---|"
for shape in "${shapes[@]}"; do
  [[ -z "$only" || "$shape" == *"$only"* ]] || continue
  IFS=, read -r m n k <<<"$shape"
  ratios=()
  schedule_ratios=()
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
answer = r["record"].get("measured_s")
runs = [m["measured_s"] for m in r.get("measurements", []) if m.get("verified") and "measured_s" in m]
schedule = min(runs) if runs else None
library = r["record"].get("library")
print("%s|%s|%s|%s|%s|%s" % (
    "%.4g" % answer if answer else "-",
    "%.4g" % schedule if schedule else "-",
    "%.4g (%dx%d NB %d)" % (best["measured_s"], best.get("prow", 0), best.get("pcol", 0),
                            best.get("nb", 0)) if best else "-",
    "%.3f" % r["vs_library"] if "vs_library" in r else "-",
    "%.3f" % (schedule / best["measured_s"]) if schedule and best else "-",
    "PSGEMM %dx%d NB %d" % (library["prow"], library["pcol"], library["nb"]) if library
    else "schedule on " + r["record"]["mesh"]))
PY
)
    IFS='|' read -r answer schedule lib ratio schedule_ratio what <<<"$line"
    echo "| $shape | $r | $answer | $schedule | $lib | $ratio | $schedule_ratio | $what |"
    [[ "$ratio" == "-" ]] || ratios+=("$ratio")
    [[ "$schedule_ratio" == "-" ]] || schedule_ratios+=("$schedule_ratio")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  if ((${#ratios[@]} > 0)); then
    echo "| $shape | median of ${#ratios[@]} | | | | $(median "${ratios[@]}") | $(median "${schedule_ratios[@]}") | |"
  fi
done
