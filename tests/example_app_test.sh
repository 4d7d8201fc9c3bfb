#!/usr/bin/env bash
# Runs an example MPI application (examples/bazel_app's main.cc, built here with the in-tree
# meshtune_kernel macro) on 4 ranks and expects its success line.
# Usage: example_app_test.sh PROGRAM
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
out=$(mpirun -n 4 --oversubscribe "$1" 2>&1) || { echo "$out"; echo "FAIL: $1 exited non-zero"; exit 1; }
echo "$out"
grep -qx "gemm: verified on 4 ranks" <<<"$out" || { echo "FAIL: no success line"; exit 1; }
