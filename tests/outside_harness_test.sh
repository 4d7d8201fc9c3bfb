#!/usr/bin/env bash
# Runs the outside harness (tests/outside_harness.cc) on 8 ranks: generated callable kernels
# sampled from whole spaces, each checked with the harness's own fill, reference and
# coverage. Usage: outside_harness_test.sh HARNESS
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
out=$(timeout 600 mpirun -n 8 --oversubscribe "$1" 2>&1) || { echo "$out"; echo "FAIL: $1 exited non-zero"; exit 1; }
echo "$out"
grep -q "FAILED" <<<"$out" && { echo "FAIL: a kernel failed"; exit 1; }
grep -qE "^kernels: ([0-9]+) verified of \1$" <<<"$out" || { echo "FAIL: no success line"; exit 1; }
