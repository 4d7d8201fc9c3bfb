#!/usr/bin/env bash
# The main job: explain the SUMMA reference trace on an 8x8 mesh (installs missing
# packages first). Extra arguments go to `meshtune explain` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
bazel build -c opt //service:meshtune
exec bazel-bin/service/meshtune explain \
  --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=512,n=1024,k=2048 --mesh x=8,y=8 \
  --trace examples/summa.trace "$@"
