// What a program's given layouts cost to move: the redistributions from the
// application's layouts into the schedule's shards and from the output's shards back
// (runtime/given_layouts.h), as per-rank loads the cost model charges. Plans depend only
// on the layout and the shards' boxes, which many schedules share, so loads are cached
// by both. Thread-safe.
#ifndef MESHTUNE_COST_GIVEN_LOADS_H_
#define MESHTUNE_COST_GIVEN_LOADS_H_

#include <memory>
#include <vector>

#include "codegen/program.h"
#include "runtime/given_layouts.h"

namespace meshtune::cost {

// The loads, by row-major rank, of the redistributions of tensor `t` of `p` (given, not
// block, and not in place: codegen::InPlace tensors move nothing and are not asked about): `in`
// (given layout to shards; empty for an output assigned with `=`) and `out` (shards to given
// layout; empty for an input).
struct GivenLoads {
  std::vector<runtime::RankLoad> in, out;
};
std::shared_ptr<const GivenLoads> LoadsOf(const codegen::Program& p, const codegen::TensorInfo& t);

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_GIVEN_LOADS_H_
