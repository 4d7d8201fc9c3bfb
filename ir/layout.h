// Given layouts: where an application's data already is when it asks for a schedule
// (`--layout TENSOR=SPEC`). A spec is one of
//   block          the schedule lays the tensor out as it likes (today's default)
//   cyclic(MB,NB)  ScaLAPACK's 2D block-cyclic layout of a matrix: MB x NB blocks dealt
//                  round-robin over a P x Q process grid, P and Q the sizes of the mesh's
//                  first two axes (Q = 1 on a one-axis mesh), process (p, q) the rank at
//                  coordinates (p, q, 0, ...) (row-major ranks, as the runtime numbers
//                  them); ranks off coordinate 0 on later axes hold nothing. Each process
//                  keeps its blocks in a column-major local matrix of LOCr x LOCc
//                  elements, leading dimension max(1, LOCr), as PSGEMM's descriptors say
//                  (RSRC = CSRC = 0).
//   replicated     every rank holds the whole tensor (row-major)
//   root           rank 0 holds the whole tensor (row-major); the others nothing
//   grid(A0,A1,..) one mesh axis per dim (or * for a dim kept whole): dim d is cut into
//                  ceil(extent / size) blocks over axis Ad, the rank at coordinate c holding
//                  block c (the last ones partial or empty), row-major; ranks along axes
//                  no dim names hold the same copy. E.g. grid(x,y) on x=2,y=2 is the
//                  2D block layout a schedule's `shard(T, i@x, j@y)` gives.
// This file parses specs and says, for the fixed layouts (all but block), which rank holds
// which element and where in its local storage. Plain values; thread-safe to read.
#ifndef MESHTUNE_IR_LAYOUT_H_
#define MESHTUNE_IR_LAYOUT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/given_layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"

namespace meshtune::ir {

// Parses one spec. InvalidArgument quoting it (at most 80 characters) when it is none of
// the five, when cyclic's block sizes are not two integers from 1 to 2^31 - 1, or when a
// grid's axis is neither a name nor '*' or is named twice.
absl::StatusOr<GivenLayout> ParseLayout(absl::string_view spec);

// Splits one `--layout` flag "TENSOR=SPEC" at its first '='. InvalidArgument quoting it
// when it has none.
absl::Status SplitLayoutFlag(const std::string& flag, std::string* tensor, std::string* spec);

// Parses `--layout` flags "TENSOR=SPEC" for `problem`: a layout per named tensor (tensors
// not named are block). InvalidArgument for a flag without '=', a tensor the problem does
// not have (the message lists those it has), a tensor given twice, a bad spec, cyclic
// for a tensor that is not a matrix (2 dims), or a grid with a count of axes other than the
// tensor's dims.
absl::StatusOr<std::map<std::string, GivenLayout>> ParseLayoutFlags(
    const std::vector<std::string>& flags, const Problem& problem);

// ParseLayoutFlags, then the fixed layouts (not block) into `problem->layouts`, replacing
// what it held. The same errors.
absl::Status SetLayouts(const std::vector<std::string>& flags, Problem* problem);

// InvalidArgument when a grid layout of `problem` names an axis `mesh` does not have.
absl::Status CheckLayoutAxes(const Problem& problem, const Mesh& mesh);

// The in-place form of a problem whose tensors are all matrices in block-cyclic layouts
// (`--in-place`): the same computation over permuted indices and transposed tensors, in
// which each process's column-major local matrix is, byte for byte, its block of the
// tensor in grid(Y,X) (Y, X the mesh's second and first axes; * without a second), so that
// a schedule of it runs on the application's arrays with nothing redistributed. Index i
// of a tensor's rows (blocks MB over P) or columns (NB over Q) becomes i' = its position
// among the indices in process order (those of process 0 first, each in order); the
// statement keeps its tensors and indices with each access reversed (a product of two with
// its operands swapped where that keeps the matmul form), e.g. C[m,n] += A[m,k] * B[k,n]
// becomes C[n,m] += B[n,k] * A[k,m]. FailedPrecondition
// naming the first obstacle when a tensor is not a cyclic matrix, the mesh has more than
// two axes, an index is dealt with different block sizes or over grids of different sizes
// in two places, or an extent is not a multiple of its block times its processes (every
// process then holds as many).
absl::StatusOr<Problem> InPlaceForm(const Problem& problem, const Mesh& mesh);

// ScaLAPACK's NUMROC: how many of `n` elements, dealt in blocks of `nb` over `nprocs`
// processes from process 0, process `iproc` holds.
int64_t Numroc(int64_t n, int64_t nb, int64_t iproc, int64_t nprocs);

// Where the fixed layout `layout` (not block) of a tensor of `shape` puts its elements on
// `mesh`. For cyclic the tensor is a matrix.
class Placement {
 public:
  Placement(GivenLayout layout, std::vector<int64_t> shape, const Mesh& mesh);

  // The elements of the local storage of the rank at `coords` (its LOCr * LOCc for cyclic,
  // the whole tensor's or 0 for replicated and root).
  int64_t LocalElements(const std::vector<int64_t>& coords) const;
  // Whether the rank at `coords` holds the element at `index` (one index per dim).
  bool Holds(const std::vector<int64_t>& coords, const std::vector<int64_t>& index) const;
  // The offset of the element at `index` in the local storage of a rank that holds it.
  int64_t LocalOffset(const std::vector<int64_t>& index) const;
  // For cyclic: the process grid's rows and columns (P, Q).
  int64_t grid_rows() const { return p_; }
  int64_t grid_cols() const { return q_; }
  // For grid: the box the rank at `coords` holds, its first index and extent per dim
  // (an extent 0: nothing).
  void GridBox(const std::vector<int64_t>& coords, std::vector<int64_t>* start,
               std::vector<int64_t>* extent) const;

 private:
  GivenLayout layout_;
  std::vector<int64_t> shape_;
  int64_t p_ = 1, q_ = 1;
  // For grid, per dim: the mesh axis (-1: whole), its size and the block.
  std::vector<int> axis_;
  std::vector<int64_t> parts_, block_;
};

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_LAYOUT_H_
