#!/usr/bin/env bash
# The tuner's pick against ScaLAPACK PSGEMM and one process of OpenBLAS: for each shape,
# `meshtune tune --allow-idle-ranks` chooses a schedule and a mesh for C[m,n] += A[m,k] *
# B[k,n] (f32) on RANKS ranks (a mesh may leave some idle, as PSGEMM's grids may), then
# //bench:tuned_vs_psgemm times that schedule against PSGEMM at its best block size and
# grid, and OpenBLAS with 2 threads, in one mpirun job — RUNS times. The last table gives,
# per shape, the median over the runs of each job's medians.
#
#   bash bench/tuned_vs_psgemm.sh [M,N,K ...]
#       default shapes: 2048,2048,2048 8192,512,512 65536,256,256 512,512,65536
#   RANKS=2 bash bench/tuned_vs_psgemm.sh ...      # 2 ranks (default 4)
#   LAYOUT='A=cyclic(64,64) B=cyclic(64,64) C=cyclic(64,64)' MESH=x=2,y=2 \
#       bash bench/tuned_vs_psgemm.sh 2048,2048,2048
#       # the data given in ScaLAPACK's NB-64 layout on the mesh's 2x2 grid: the tune and
#       # the timed run start from it and end in it (--layout); MESH fixes the mesh the
#       # layouts are over (default: every mesh of RANKS ranks, some idle)
#   IN_PLACE=1 LAYOUT=... MESH=...: tune and time the layouts' in-place form (--in-place)
#
# Uses the hardware profile "ranksN" (N = RANKS) under $MESHTUNE_HOME (~/.meshtune when
# unset) and calibrates it first when missing (CALIBRATE=1: always). REPS (default 5) sets each job's repetitions, RUNS
# (default 3) the jobs per shape.
set -euo pipefail
cd "$(dirname "$0")/.."

ranks="${RANKS:-4}"
reps="${REPS:-5}"
runs="${RUNS:-3}"
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(2048,2048,2048 8192,512,512 65536,256,256 512,512,65536)

export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Unbound: Open MPI binds each rank to a core when the ranks fit the cores, which would
# leave the 2-thread OpenBLAS run on rank 0 one core.
mpirun_args=(-n "$ranks" --bind-to none)
[ "$(nproc)" -ge "$ranks" ] || mpirun_args+=(--oversubscribe)

bazel build -c opt //cli:meshtune //runtime:meshtune_worker //bench:tuned_vs_psgemm
meshtune=bazel-bin/cli/meshtune

profile="ranks$ranks"
if [ "${CALIBRATE:-0}" = 1 ] || [ ! -f "${MESHTUNE_HOME:-$HOME/.meshtune}/profiles/$profile.json" ]; then
  "$meshtune" calibrate --ranks "$ranks" --name "$profile"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for shape in "${shapes[@]}"; do
  IFS=, read -r m n k <<<"$shape"
  echo "=== m=$m n=$n k=$k on $ranks ranks"
  layout_args=()
  for l in ${LAYOUT:-}; do layout_args+=(--layout "$l"); done
  mesh_args=(--ranks "$ranks" --allow-idle-ranks)
  in_place=()
  [ "${IN_PLACE:-0}" != 1 ] || in_place=(--in-place)
  [ -z "${MESH:-}" ] || mesh_args=(--mesh "$MESH")
  "$meshtune" tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents "m=$m,n=$n,k=$k" \
    "${mesh_args[@]}" "${layout_args[@]}" "${in_place[@]}" --profile "$profile" --top-k 4 --reps 3 --json >"$work/tune.json" || { cat "$work/tune.json"; exit 1; }
  python3 - "$work/tune.json" "$work/best.trace" "$work/best.mesh" "$work/family" <<'PY'
import json, sys
# A meshtune.v1.TuneResult in protobuf's JSON mapping (64-bit integers are strings).
result = json.load(open(sys.argv[1]))
best = result["record"]
open(sys.argv[2], "w").write(best["trace"]["text"])
open(sys.argv[3], "w").write(best["mesh"])
open(sys.argv[4], "w").write(", ".join(best["patterns"]))
print("tuner: %.1f s, %d costed, %d measured; best on mesh %s predicted %.4f s, measured %s s (%s)"
      % (result["seconds"], int(result["costed"]), len(result["measurements"]), best["mesh"],
         best["predicted_s"], best.get("measured_s"), ", ".join(best["patterns"])))
PY
  for run in $(seq "$runs"); do
    echo "--- run $run of $runs"
    mpirun "${mpirun_args[@]}" bazel-bin/bench/tuned_vs_psgemm --m "$m" --n "$n" --k "$k" \
      --mesh "$(cat "$work/best.mesh")" --trace "$work/best.trace" --reps "$reps" "${layout_args[@]}" --in-place "${IN_PLACE:-0}" |
      tee "$work/run.txt"
    grep '^summary:' "$work/run.txt" | sed "s/^summary:/$m $n $k $(cat "$work/best.mesh")/" \
      >>"$work/summaries"
  done
  echo
done

echo "=== medians over $runs runs per shape ($ranks ranks, f32; each run a median of $reps)"
python3 - "$work/summaries" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    key = (f[0], f[1], f[2], f[3])
    vals = dict(zip(f[4::2], f[5::2]))
    rows.setdefault(key, []).append(vals)
print("| shape | mesh | tuned | best PSGEMM | tuned / PSGEMM | OpenBLAS 2 threads | tuned / OpenBLAS | copied |")
print("|---|---|---|---|---|---|---|---|")
for (m, n, k, mesh), runs in rows.items():
    med = lambda name: statistics.median(float(r[name]) for r in runs)
    tuned, ps, ob = med("tuned"), med("best_psgemm"), med("openblas2")
    configs = sorted(set(r["psgemm_config"] for r in runs))
    print("| %s x %s x %s | %s | %.4f s | %.4f s (%s) | %.3f | %.4f s | %.3f | %s |"
          % (m, n, k, mesh, tuned, ps, " / ".join(configs), tuned / ps, ob, tuned / ob,
             "/".join(sorted(set(r["copied"] for r in runs)))))
PY
