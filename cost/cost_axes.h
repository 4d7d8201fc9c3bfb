// Where a Program's ranks sit for the cost model: the ranks of a node and the mesh axes
// whose neighbours may be on other nodes (cost/cost_params.h's node-and-core hierarchy).
#ifndef MESHTUNE_COST_COST_AXES_H_
#define MESHTUNE_COST_COST_AXES_H_

#include <cstdint>
#include <vector>

#include "codegen/program.h"
#include "cost/cost_params.h"

namespace meshtune::cost {

// The ranks of a node for `p` under `params`: the ranks of the axes after an axis named
// `node` (e.g. 8 for node=4,core=8), else params.node_ranks (0: one level).
int64_t NodeRanks(const codegen::Program& p, const CostParams& params);

// Per mesh axis of `p`, whether two ranks along it may sit on different nodes (NodeRanks
// not a multiple of the ranks the axis and those after it span); all false without a
// hierarchy (NodeRanks 0, or no inter-node numbers).
std::vector<bool> OuterAxes(const codegen::Program& p, const CostParams& params);

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_COST_AXES_H_
