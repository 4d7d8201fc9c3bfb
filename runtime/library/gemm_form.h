// Problems of matmul form, as ScaLAPACK's GEMM takes them (runtime/library/library_gemm.h runs it):
// C[i,j] = or += A * B with one index summed, either operand stored transposed; and the
// process grids and block sizes it runs with. No MPI here: the tuner decides with it whether
// and how to measure the library. Pure functions; thread-safe.
#ifndef MESHTUNE_RUNTIME_LIBRARY_GEMM_FORM_H_
#define MESHTUNE_RUNTIME_LIBRARY_GEMM_FORM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/oracle.h"

namespace meshtune::runtime {

// A problem of matmul form: C (m x n) = op(A) op(B), with A holding C's first index and the
// summed one, B the summed one and C's second.
struct GemmForm {
  std::string c, a, b;        // the tensors (A holds C's first index, B its second)
  bool a_transposed = false;  // A is stored [k, m] rather than [m, k]
  bool b_transposed = false;  // B is stored [n, k] rather than [k, n]
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;  // '+=': C starts from its own values
};

// OK when ScaLAPACK's GEMM (int extents) can take `form`; InvalidArgument naming its
// extents otherwise.
absl::Status CheckLibraryExtents(const GemmForm& form);

// The matmul form of `problem`; nullopt for any other problem (a sum, more or fewer than
// two operands, an operand or output that is not a matrix, not exactly one summed index, a
// tensor read twice).
std::optional<GemmForm> GemmFormOf(const ProblemSpec& problem);

// The matmul forms of a program's statements, in order, as a chain of library calls runs
// them (runtime/library/library_run.h). InvalidArgument naming the statement that is not of
// matmul form ("statement 2 (Y) is not of matmul form"), a tensor written twice ("statement
// 2 writes H, which statement 1 writes too") or read by a statement before a later one
// writes it ("statement 1 reads Y, which statement 2 writes after it").
absl::StatusOr<std::vector<GemmForm>> GemmChainOf(const std::vector<ProblemSpec>& statements);

// A process grid and block size: prow x pcol ranks in row-major order, nb x nb blocks; the
// grid's rows split the matrices' rows (C's first index).
struct LibraryGemmConfig {
  int prow = 1, pcol = 1, nb = 64;
};

// "2x2, NB 64".
std::string ConfigText(const LibraryGemmConfig& c);

// The most promising configurations of `form` on `ranks` ranks, best first: the two grids
// whose ranks receive the fewest words in a SUMMA over them (k (m / prow + n / pcol)), each
// with block sizes 64 and 256 where the blocks fit a rank's share (else the largest power of
// two that does, at least 1); at most 4.
std::vector<LibraryGemmConfig> LibraryGemmConfigs(const GemmForm& form, int64_t ranks);

// One rank's part of a block-cyclic matrix (the given layout cyclic(NB,NB),
// runtime/library/library_gemm.h): its local rows and columns (LOCr, LOCc), and where local element
// (li, lj) lies in the matrix.
struct CyclicPart {
  int64_t rows = 0, cols = 0;              // the whole matrix's
  int64_t local_rows = 0, local_cols = 0;  // this rank's
  int64_t row = 0, col = 0;                // this rank's grid coordinates
  int64_t prow = 1, pcol = 1, nb = 1;

  int64_t lld() const { return local_rows > 0 ? local_rows : 1; }
  int64_t LocalElements() const { return lld() * local_cols; }
  int64_t GlobalRow(int64_t li) const { return ((li / nb) * prow + row) * nb + li % nb; }
  int64_t GlobalCol(int64_t lj) const { return ((lj / nb) * pcol + col) * nb + lj % nb; }
};

// The part of a rows x cols matrix on the rank at (row, col) of `config`'s grid.
CyclicPart CyclicPartOf(int64_t rows, int64_t cols, const LibraryGemmConfig& config, int64_t row,
                        int64_t col);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LIBRARY_GEMM_FORM_H_
