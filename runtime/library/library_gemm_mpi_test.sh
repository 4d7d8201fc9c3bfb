#!/usr/bin/env bash
# RunLibraryGemm and RunLibraryChain under mpirun on 4 ranks: every case of
# library_gemm_probe verifies (384 statements: 6 shapes, f32 and f64, the 8 grids of 1 to 4
# ranks, 4 block sizes; 96 chains: 3 programs, f32 and f64, 8 grids, 2 block sizes), and every
# planted wrong transpose is caught by the oracle, a chain's in the statement it is in.
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
out=$(timeout 240 mpirun -n 4 --oversubscribe runtime/library_gemm_probe --plant 2>&1)
if grep -q "ERROR\|MISSED\|not of matmul form\|cannot parse" <<<"$out"; then
  grep "ERROR\|MISSED\|not of matmul form\|cannot parse" <<<"$out" | head -20
  exit 1
fi
last=$(tail -1 <<<"$out")
if [[ $last != "cases 480 failed 0" ]]; then
  echo "expected 'cases 480 failed 0', got: $last"
  exit 1
fi
caught=$(grep -c " planted: caught " <<<"$out" || true)
# The square shape (6x6x6) on 8 grids, 4 block sizes, 2 dtypes; the chain whose last B is
# square (W2, 4x4) on 8 grids, 2 block sizes, 2 dtypes.
if [[ $caught != 96 ]]; then
  echo "expected 96 planted errors caught, got $caught"
  exit 1
fi
in_statement=$(grep -c " planted: caught statement 2: " <<<"$out" || true)
if [[ $in_statement != 32 ]]; then
  echo "expected the chain's 32 planted errors caught in statement 2, got $in_statement"
  exit 1
fi
echo "library_gemm_mpi_test: 480 cases verified, 96 planted errors caught"
