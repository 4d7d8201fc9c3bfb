#!/usr/bin/env bash
# The main job: tune C[m,n] += A[m,k] * B[k,n] (m=n=k=1024) on 4 ranks — every mesh of 4
# ranks searched, the model's top 3 measured under mpirun, the verified winner printed, and
# last ScaLAPACK's PSGEMM at its most promising grids and blocks, measured in the same job,
# with the answer's time over the library's (installs missing packages first). Extra arguments go to `meshtune tune` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
bazel build -c opt //cli:meshtune //runtime:meshtune_worker
exec bazel-out/k8-opt/bin/cli/meshtune tune \
  --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=1024,n=1024,k=1024 --ranks 4 --top-k 3 "$@"
