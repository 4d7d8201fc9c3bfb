// The library a tune measures its schedules against: ScaLAPACK's PSGEMM (f32) or PDGEMM
// (f64) on block-cyclic shards, for problems of matmul form (runtime/gemm_form.h). Its inputs are
// filled from the same global formula as every run (runtime/fill.h) and its output is checked by
// the same oracle (runtime/oracle.h): the values each rank holds, and that every element is held.
// Not thread-safe (BLACS).
#ifndef MESHTUNE_RUNTIME_LIBRARY_GEMM_H_
#define MESHTUNE_RUNTIME_LIBRARY_GEMM_H_

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/gemm_form.h"
#include "runtime/oracle.h"

namespace meshtune::runtime {

// How a library call went: the median over `reps` timed calls (after `warmup`) of the
// slowest rank's time, each call's, and "" or the first error the oracle found (the lowest
// rank's).
struct LibraryGemmRun {
  double seconds = 0;
  std::vector<double> repetitions;
  std::string error;
};

// Collective over `comm`, whose size must be config.prow * config.pcol: every matrix of
// `form` block-cyclic with nb x nb blocks on the grid (ScaLAPACK's column-major view of the
// row-major tensors), filled from `seed`, C refilled before each call (outside its time);
// the last call's output checked on every rank against the reference of `problem`.
// `dtype_bytes` 4 (PSGEMM) or 8 (PDGEMM).
LibraryGemmRun RunLibraryGemm(const ProblemSpec& problem, const GemmForm& form, int dtype_bytes,
                              const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                              MPI_Comm comm);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LIBRARY_GEMM_H_
