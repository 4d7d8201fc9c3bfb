// The library a tune measures its schedules against, and serves when it is faster:
// ScaLAPACK's PSGEMM (f32) or PDGEMM (f64) on block-cyclic shards, for problems of matmul
// form (runtime/library/gemm_form.h). Every matrix is in the given layout cyclic(NB,NB) on the
// prow x pcol grid (ir/given_layout.h: the tensor [i, j] is the matrix's element (i, j);
// grid row-major over the ranks; each local matrix column-major, leading dimension
// max(1, LOCr)). runtime/library/library_run.h runs it, alone or in a chain, filled and
// checked like every run. Not thread-safe (BLACS).
#ifndef MESHTUNE_RUNTIME_LIBRARY_LIBRARY_GEMM_H_
#define MESHTUNE_RUNTIME_LIBRARY_LIBRARY_GEMM_H_

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
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

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LIBRARY_LIBRARY_GEMM_H_
