#!/usr/bin/env bash
# RunLibraryGemm under mpirun on 4 ranks: every case of library_gemm_probe verifies (384:
# 6 shapes, f32 and f64, the 8 grids of 1 to 4 ranks, 4 block sizes), and every planted
# wrong transpose is caught by the oracle.
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
out=$(timeout 240 mpirun -n 4 --oversubscribe runtime/library_gemm_probe --plant 2>&1)
if grep -q "ERROR\|MISSED\|not of matmul form\|cannot parse" <<<"$out"; then
  grep "ERROR\|MISSED\|not of matmul form\|cannot parse" <<<"$out" | head -20
  exit 1
fi
last=$(tail -1 <<<"$out")
if [[ $last != "cases 384 failed 0" ]]; then
  echo "expected 'cases 384 failed 0', got: $last"
  exit 1
fi
caught=$(grep -c " planted: caught " <<<"$out" || true)
# The square shape (6x6x6) on 8 grids, 4 block sizes, 2 dtypes.
if [[ $caught != 64 ]]; then
  echo "expected 64 planted errors caught, got $caught"
  exit 1
fi
echo "library_gemm_mpi_test: 384 cases verified, 64 planted errors caught"
