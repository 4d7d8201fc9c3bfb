#!/usr/bin/env bash
# The tuner's pick against ScaLAPACK PSGEMM: for each shape, `meshtune tune` chooses a
# schedule and a mesh for C[m,n] += A[m,k] * B[k,n] (f32) on 4 ranks, then
# //bench:tuned_vs_psgemm times that schedule against PSGEMM at its best block size and
# grid in one mpirun job.
#
#   bash bench/tuned_vs_psgemm.sh [M,N,K ...]      # default: 2048,2048,2048 8192,512,512
#
# Uses the hardware profile "default" under $MESHTUNE_HOME (~/.meshtune when unset) and
# calibrates it first when missing. REPS (default 5) sets the benchmark's repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."

ranks=4
reps="${REPS:-5}"
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(2048,2048,2048 8192,512,512)

export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun_args=(-n "$ranks")
[ "$(nproc)" -ge "$ranks" ] || mpirun_args+=(--oversubscribe)

bazel build -c opt //cli:meshtune //runtime:meshtune_worker //bench:tuned_vs_psgemm
meshtune=bazel-bin/cli/meshtune

profile="${MESHTUNE_HOME:-$HOME/.meshtune}/profiles/default.json"
[ -f "$profile" ] || "$meshtune" calibrate --ranks "$ranks"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for shape in "${shapes[@]}"; do
  IFS=, read -r m n k <<<"$shape"
  echo "=== m=$m n=$n k=$k on $ranks ranks"
  "$meshtune" tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents "m=$m,n=$n,k=$k" \
    --ranks "$ranks" --top-k 4 --reps 3 --json >"$work/tune.json" || { cat "$work/tune.json"; exit 1; }
  python3 - "$work/tune.json" "$work/best.trace" "$work/best.mesh" <<'EOF'
import json, sys
# A meshtune.v1.TuneResult in protobuf's JSON mapping (64-bit integers are strings).
result = json.load(open(sys.argv[1]))
best = result["record"]
open(sys.argv[2], "w").write(best["trace"]["text"])
open(sys.argv[3], "w").write(best["mesh"])
print("tuner: %.1f s, %d costed, %d measured; best on mesh %s predicted %.4f s, measured %s s (%s)"
      % (result["seconds"], int(result["costed"]), len(result["measurements"]), best["mesh"],
         best["predicted_s"], best.get("measured_s"), ", ".join(best["patterns"])))
EOF
  mpirun "${mpirun_args[@]}" bazel-bin/bench/tuned_vs_psgemm --m "$m" --n "$n" --k "$k" \
    --mesh "$(cat "$work/best.mesh")" --trace "$work/best.trace" --reps "$reps"
  echo
done
