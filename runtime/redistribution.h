// Redistribution: moving a tensor from one distribution over a mesh's ranks to another —
// from the layout an application's data has (ir/layout.h: ScaLAPACK's block-cyclic, one
// rank, every rank) into the boxes a schedule works on, and its result back.
//
// A distribution is described row by row: the tensor seen as rows (every index but the
// last, row-major) of `cols` elements (the last dim), and for each row the runs of columns
// each rank holds and where they sit in its local storage. A plan is a list of pieces, each
// a run of one row that one rank sends to another (or copies locally); it is a pure
// function of the two distributions, so every rank can compute it alone. Plain values.
#ifndef MESHTUNE_RUNTIME_REDISTRIBUTION_H_
#define MESHTUNE_RUNTIME_REDISTRIBUTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "runtime/comm.h"

namespace meshtune::runtime {

// Columns [begin, end) of a row held by rank `rank` (row-major over the mesh), column
// `begin` at local offset `offset` and each next column `stride` further.
struct Run {
  int64_t begin = 0, end = 0;
  int rank = 0;
  int64_t offset = 0;
  int64_t stride = 1;
};

class Distribution {
 public:
  virtual ~Distribution() = default;
  // The tensor's rows (the product of every extent but the last; 1 for a vector).
  virtual int64_t rows() const = 0;
  // The runs of row `row` on every rank that holds part of it; a column held by several
  // ranks (replicated) is in a run of each.
  virtual std::vector<Run> Row(int64_t row) const = 0;
  // The elements of rank `rank`'s local storage.
  virtual int64_t LocalElements(int rank) const = 0;
};

// The distribution of a fixed given layout (not block) of a tensor of `shape` on `mesh`.
std::unique_ptr<Distribution> GivenDistribution(const ir::GivenLayout& layout,
                                                std::vector<int64_t> shape, const ir::Mesh& mesh);

// A box of a tensor: its first index and extent per dim.
struct Box {
  std::vector<int64_t> start, extent;
};

// Each rank holding the box `box_of(coords)` of a tensor of `shape` (empty extents: none),
// row-major in a local array of the box's shape, as a schedule's shards are. Only the part
// of a box within `shape` is held: where blocks do not divide an extent a shard's box
// reaches past it (codegen/program.h), and its elements there are padding, neither sent
// nor written.
std::unique_ptr<Distribution> BoxDistribution(
    std::vector<int64_t> shape, const ir::Mesh& mesh,
    std::function<Box(const std::vector<int64_t>& coords)> box_of);

// One run a rank sends (or, when from == to, copies locally).
struct Piece {
  int from = 0, to = 0;
  int64_t length = 0;
  int64_t from_offset = 0, from_stride = 1;
  int64_t to_offset = 0, to_stride = 1;
};

// The pieces that give every rank of `to` every element it holds, from `from`: from the
// rank itself when it holds the element in `from` (a local copy), else from the lowest
// rank that does; in row order, and within a row by column. InvalidArgument when the two
// have different rows, or when no rank of `from` holds an element a rank of `to` needs.
absl::StatusOr<std::vector<Piece>> PlanRedistribution(const Distribution& from,
                                                      const Distribution& to);

// Runs `plan` on the rank `comm` is: packs the pieces it sends into one buffer per peer (in
// plan order), exchanges with every peer at once (Comm::Alltoallv), copies its local pieces
// and unpacks what it receives. `from` is this rank's local storage in the plan's source
// distribution, `to` its storage in the target (they must not overlap). Every rank of the
// mesh calls it with the same plan. T is float or double.
template <typename T>
void Redistribute(const std::vector<Piece>& plan, const T* from, T* to, Comm& comm);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_REDISTRIBUTION_H_
