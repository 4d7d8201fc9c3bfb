// Runs of the library a tune measures against and a plan binds: ScaLAPACK's GEMM for one
// statement of matmul form, or a chain of GEMMs for a program whose statements all are. A
// chain runs on one grid and block size, every matrix in the given layout cyclic(NB,NB) on
// that grid (runtime/library/library_gemm.h), so the matrix one call writes is the next
// call's operand where it lies: nothing moves between the calls. A measured run's inputs are
// filled from the global formula (runtime/fill.h) and every statement's output is checked by
// the oracle (runtime/oracle.h) against the program's serial reference
// (runtime/program_values.h). Not thread-safe (BLACS).
#ifndef MESHTUNE_RUNTIME_LIBRARY_LIBRARY_RUN_H_
#define MESHTUNE_RUNTIME_LIBRARY_LIBRARY_RUN_H_

#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/launch/repetitions.h"
#include "runtime/library/gemm_form.h"
#include "runtime/library/library_gemm.h"
#include "runtime/oracle.h"

namespace meshtune::runtime {

// A GEMM on this rank's local matrices (c, a, b), as LibraryGemmCall::Run or an emitted
// kernel (codegen/emit/emit_library.h) calls it.
using LibraryKernel = std::function<void(void* c, const void* a, const void* b, MPI_Comm comm)>;

// One tensor of a chain: its matrix's part on this rank, and what the chain does to it.
struct LibraryChainTensor {
  std::string name;
  CyclicPart part;
  bool written = false;      // some call's C
  bool accumulated = false;  // a '+=' call's C: it starts from its own values
};

// The calls of a program of statements of matmul form, bound to one communicator and grid.
class LibraryChain {
 public:
  // A call per form on `comm` (size config.prow * config.pcol), in f32 (4) or f64 (8).
  // InvalidArgument when a tensor's matrix differs in shape between two calls, or as
  // LibraryGemmCall::Create. Collective.
  static absl::StatusOr<std::unique_ptr<LibraryChain>> Create(const std::vector<GemmForm>& forms,
                                                              int dtype_bytes,
                                                              const LibraryGemmConfig& config,
                                                              MPI_Comm comm);

  // The program's tensors in the order they first appear (each call's C, A, B).
  const std::vector<LibraryChainTensor>& tensors() const { return tensors_; }
  // The index of tensor `name` in tensors(), or -1.
  int IndexOf(const std::string& name) const;
  // Tensor `c`, `a` or `b` (0, 1, 2) of call `s`, as an index into tensors().
  int Operand(size_t s, int which) const { return operands_[s][which]; }
  size_t calls() const { return calls_.size(); }

  // Every call in order on this rank's local matrices (`locals`, one per tensor in tensors()
  // order, column-major at their parts' lld). `kernel` (when set) makes each call instead of
  // LibraryGemmCall::Run. Collective over `comm`, the communicator the chain was made on.
  void Run(const std::vector<void*>& locals, MPI_Comm comm,
           const LibraryKernel& kernel = nullptr) const;

 private:
  LibraryChain() = default;
  std::vector<std::unique_ptr<LibraryGemmCall>> calls_;
  std::vector<std::array<int, 3>> operands_;
  std::vector<LibraryChainTensor> tensors_;
};

// How a library run went: the median over its timed repetitions of the slowest rank's time,
// each repetition's, and "" or the first error the oracle found (the lowest rank's; for a
// chain, "statement 2: ...").
struct LibraryGemmRun {
  double seconds = 0;
  std::vector<double> repetitions;
  std::string error;
};

// Collective over `comm`, whose size must be config.prow * config.pcol: the chain of
// `forms` (one per statement of `statements`, GemmChainOf) with every input filled
// from `seed` and every '+=' output refilled before each repetition (outside its time); after
// the last repetition each statement's output is checked on every rank against the serial
// reference of `statements`. `dtype_bytes` 4 (PSGEMM) or 8 (PDGEMM). `kernel` makes each call
// (null: LibraryGemmCall); `gate` (when not nullptr) decides the repetitions instead of
// warmup and reps (runtime/launch/repetitions.h).
LibraryGemmRun RunLibraryChain(const std::vector<ProblemSpec>& statements,
                               const std::vector<GemmForm>& forms, int dtype_bytes,
                               const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                               MPI_Comm comm, const LibraryKernel& kernel = nullptr,
                               RepetitionGate* gate = nullptr);

// One statement's GEMM: RunLibraryChain of `problem` alone, called as `form` says (a form
// other than the problem's own is a wrong call, which the oracle must catch).
LibraryGemmRun RunLibraryGemm(const ProblemSpec& problem, const GemmForm& form, int dtype_bytes,
                              const LibraryGemmConfig& config, int reps, int warmup, uint64_t seed,
                              MPI_Comm comm, const LibraryKernel& kernel = nullptr,
                              RepetitionGate* gate = nullptr);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LIBRARY_LIBRARY_RUN_H_
