// The C++ emitted when the answer to a workload is the library rather than a schedule:
// ScaLAPACK's PSGEMM (f32) or PDGEMM (f64) on the tensors in the given layout cyclic(NB,NB)
// (ir/given_layout.h), as a callable kernel or a standalone MPI program.
//
// Layout (the one runtime/library/library_gemm.h measures): every tensor T[d0,d1] is ScaLAPACK's
// matrix of d0 rows and d1 columns, element [i,j] at (i,j), in nb x nb blocks dealt
// cyclically over a prow x pcol BLACS grid in "Row" order (MPI rank r at grid row r / pcol,
// column r % pcol), first block on grid row and column 0; each rank's local matrix is
// column-major with leading dimension max(1, LOCr) (LOCr, LOCc: ScaLAPACK's numroc).
//
// The emitted code declares the BLACS and ScaLAPACK functions it calls itself (Debian's
// libscalapack-openmpi-dev has no C header) and links -lscalapack-openmpi and MPI. Pure
// functions of their arguments; thread-safe.
#ifndef MESHTUNE_CODEGEN_EMIT_EMIT_LIBRARY_H_
#define MESHTUNE_CODEGEN_EMIT_EMIT_LIBRARY_H_

#include <cstdint>
#include <string>

#include "codegen/emit/emit_cpp.h"
#include "ir/problem.h"

namespace meshtune::codegen {

// One GEMM as ScaLAPACK takes it: C (m x n) = op(A) op(B), plus C when `accumulate`. The
// caller fills it from the problem's matmul form (runtime::GemmFormOf) and the library's
// configuration; the emitters trust it (prow, pcol, nb, m, n, k >= 1 and within int).
struct LibraryKernelSpec {
  std::string c, a, b;   // the tensors: A holds C's first index, B its second
  bool b_first = false;  // the statement names B before A: the kernel takes (C, B, A)
  int64_t m = 0, n = 0, k = 0;
  bool a_transposed = false;  // A is stored [k, m] (a k x m matrix): op(A) = A^T
  bool b_transposed = false;  // B is stored [n, k] (an n x k matrix): op(B) = B^T
  bool accumulate = false;    // '+=': beta = 1, else 0
  int prow = 1, pcol = 1, nb = 64;
  int dtype_bytes = 4;  // 4: PSGEMM on float; 8: PDGEMM on double
};

// "PSGEMM" or "PDGEMM", as the spec's dtype says.
std::string LibraryRoutine(const LibraryKernelSpec& spec);

// The callable kernel `name` (a C identifier) calling the library, declared extern "C" in the
// header:
//   int NAME(float* C, const float* A, const float* B, MPI_Comm comm);
// (double for f64) one pointer per tensor in the statement's order, the output first, as
// EmitCallable's kernels take them; each this rank's local matrix in the layout above. It
// returns 0; 1 when comm's size is not prow * pcol; 2 when BLACS or a descriptor fails (a
// message on stderr). Collective; every call sets up and leaves its own BLACS grid, nothing
// is kept between calls. And
//   int NAME_local(const char* tensor, int rank, int64_t* rows, int64_t* cols);
// a rank's local matrix of a tensor (LOCr, LOCc): 0, or -1 for an unknown tensor or rank.
// `title` goes into the header comment; `header_name` is how the source includes the header
// ("" includes none: the caller puts the header first).
CallableKernel EmitLibraryCallable(const LibraryKernelSpec& spec, const std::string& title,
                                   const std::string& name, const std::string& header_name);

// A standalone MPI program (same flags as EmitCpp's: --reps, --warmup, --seed) with the
// kernel above, run through runtime::RunLibraryGemm: inputs filled from the global formula,
// C checked by the oracle against `problem` as stated (not against the spec). Rank 0 prints
// one JSON line, a meshtune.v1.RunResult. Bazel: a cc_binary depending on
// //runtime:library_gemm and //runtime:run_result.
std::string EmitLibraryCpp(const ir::Problem& problem, const LibraryKernelSpec& spec,
                           const std::string& title);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_EMIT_EMIT_LIBRARY_H_
