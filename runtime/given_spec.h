// Given layouts at run time, without a Program: the redistributions of one tensor between
// the layout the application holds it in (ir/layout.h) and the boxes a schedule's ranks
// hold (runtime/redistribution.h), and the runtime's GivenSpec that runs them
// (runtime/rank/rank.h). runtime/given_layouts.h derives the same from a lowered Program;
// emitted programs (codegen/emit/emit_cpp.h) call GivenSpecOf. Plain values; thread-safe to read.
#ifndef MESHTUNE_RUNTIME_GIVEN_SPEC_H_
#define MESHTUNE_RUNTIME_GIVEN_SPEC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/given_layout.h"
#include "ir/mesh.h"
#include "runtime/rank/rank.h"
#include "runtime/redistribution.h"

namespace meshtune::runtime {

// A mesh of these axes.
ir::Mesh MeshOf(const std::vector<std::string>& names, const std::vector<int64_t>& sizes);

// The plans of one tensor in a given layout.
struct GivenPlans {
  std::unique_ptr<Distribution> given;  // the application's layout
  std::vector<Piece> in;   // given layout to shards: inputs and a `+=` output; else empty
  std::vector<Piece> out;  // shards to given layout: the output; else empty
};

// The plans of tensor `name` of `shape` in `layout`, whose shard on the rank at `coords` is
// `box_of(coords)` on `mesh`. InvalidArgument when `layout` is block, or cannot lay out
// the tensor (a scalar; cyclic of a tensor that is not a matrix).
absl::StatusOr<GivenPlans> PlanBoxes(const ir::GivenLayout& layout, const std::string& name,
                                     const std::vector<int64_t>& shape, const ir::Mesh& mesh,
                                     const std::function<Box(const std::vector<int64_t>&)>& box_of,
                                     bool is_output, bool accumulate);

// Whether `plans` move nothing: every element stays on its rank at the same offset, and
// each rank's storage in the given layout is as large as its shard (the given layout is
// the schedule's own sharding, e.g. grid(x,y) for shard(T, i@x, j@y)). The shard is then
// the application's storage itself.
bool IsIdentity(const GivenPlans& plans, const std::vector<int64_t>& shard_elements);

// The runtime's spec of `plans` (of a tensor in `layout` of `shape`) on rank `rank`: the
// storage map, and moves that run the plans in `dtype_bytes`-byte elements (4 float,
// 8 double).
std::shared_ptr<const GivenSpec> SpecOf(const ir::GivenLayout& layout,
                                        const std::vector<int64_t>& shape, bool is_output,
                                        GivenPlans plans, int rank, int dtype_bytes);

// The spec from what an emitted program has: the layout's spec text (ir::ParseLayout, not
// block) and the runtime's TensorSpec of the tensor, on a mesh of these axes (codegen emits
// it only for tensors not in place, codegen::InPlace). nullptr when the text does not parse
// or cannot lay out the tensor (codegen emits only layouts lowering took).
std::shared_ptr<const GivenSpec> GivenSpecOf(const std::string& layout, const TensorSpec& t,
                                             bool accumulate,
                                             const std::vector<std::string>& axis_names,
                                             const std::vector<int64_t>& axis_sizes, int rank,
                                             int dtype_bytes);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_GIVEN_SPEC_H_
