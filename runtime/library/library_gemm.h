// The library a tune measures its schedules against, and serves when it is faster:
// ScaLAPACK's PSGEMM (f32) or PDGEMM (f64) on block-cyclic shards, for problems of matmul
// form (runtime/library/gemm_form.h). Every matrix is in the given layout cyclic(NB,NB) on the
// prow x pcol grid (ir/given_layout.h: the tensor [i, j] is the matrix's element (i, j);
// grid row-major over the ranks; each local matrix column-major, leading dimension
// max(1, LOCr)). A measured run's inputs are filled from the same global formula as every
// run (runtime/fill.h) and its output is checked by the same oracle (runtime/oracle.h): the
// values each rank holds, and that every element is held. Not thread-safe (BLACS).
#ifndef MESHTUNE_RUNTIME_LIBRARY_LIBRARY_GEMM_H_
#define MESHTUNE_RUNTIME_LIBRARY_LIBRARY_GEMM_H_

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/launch/repetitions.h"
#include "runtime/library/gemm_form.h"
#include "runtime/oracle.h"

namespace meshtune::runtime {

// ScaLAPACK's GEMM bound to a communicator: the BLACS grid and the three descriptors.
class LibraryGemmCall {
 public:
  // On `comm` (size config.prow * config.pcol; the call keeps no reference to it beyond
  // BLACS's own). InvalidArgument when the sizes disagree or an extent exceeds ScaLAPACK's
  // int. Collective.
  static absl::StatusOr<std::unique_ptr<LibraryGemmCall>> Create(const GemmForm& form,
                                                                 int dtype_bytes,
                                                                 const LibraryGemmConfig& config,
                                                                 MPI_Comm comm);
  ~LibraryGemmCall();  // leaves the grid (unless MPI is finalized)

  // This rank's part of tensor c, a or b of the form (their matrices as stored: A is k x m
  // when transposed).
  const CyclicPart& c() const { return parts_[0]; }
  const CyclicPart& a() const { return parts_[1]; }
  const CyclicPart& b() const { return parts_[2]; }

  // One GEMM on this rank's local matrices (float or double as the dtype). Collective.
  void Run(void* c, const void* a, const void* b) const;

 private:
  LibraryGemmCall() = default;
  GemmForm form_;
  int dtype_bytes_ = 4;
  int handle_ = -1, context_ = -1;
  CyclicPart parts_[3];
  int desc_[3][9] = {};
};

// How a library call went: the median over `reps` timed calls (after `warmup`) of the
// slowest rank's time, each call's, and "" or the first error the oracle found (the lowest
// rank's).
struct LibraryGemmRun {
  double seconds = 0;
  std::vector<double> repetitions;
  std::string error;
};

// A GEMM on this rank's local matrices (c, a, b), as LibraryGemmCall::Run or an emitted
// kernel (codegen/emit/emit_library.h) calls it.
using LibraryKernel = std::function<void(void* c, const void* a, const void* b, MPI_Comm comm)>;

// Collective over `comm`, whose size must be config.prow * config.pcol: every matrix of
// `form` block-cyclic as above, filled from `seed`, C refilled before each call (outside its
// time); the last call's output checked on every rank against the reference of `problem`.
// `dtype_bytes` 4 (PSGEMM) or 8 (PDGEMM). `kernel` runs each call (null: LibraryGemmCall);
// `gate` (when not nullptr) decides the calls instead of warmup and reps
// (runtime/launch/repetitions.h).
LibraryGemmRun RunLibraryGemm(const ProblemSpec& problem, const GemmForm& form, int dtype_bytes,
                              const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                              MPI_Comm comm, const LibraryKernel& kernel = nullptr,
                              RepetitionGate* gate = nullptr);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LIBRARY_LIBRARY_GEMM_H_
