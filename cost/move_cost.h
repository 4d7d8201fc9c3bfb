// What a redistribution costs one rank: the model's charge for a rank's share of moving a
// tensor between two distributions (runtime::LoadOf of a runtime::PlanRedistribution) —
// the exchange (at alpha and beta, or the calibrated all-to-all line where calibration
// timed one), the local copies, packing and unpacking. The cost walker charges a given
// layout's moves with it, and the program search the moves between statements. Pure.
#ifndef MESHTUNE_COST_MOVE_COST_H_
#define MESHTUNE_COST_MOVE_COST_H_

#include <cstdint>

#include "cost/cost_params.h"
#include "runtime/given_layouts.h"

namespace meshtune::cost {

// Seconds rank load `l` takes, elements of `dtype_bytes`, in an exchange among `ranks` ranks;
// `across`: its peers may be on other nodes (alpha_node, beta_node).
double MoveSeconds(const runtime::RankLoad& l, int dtype_bytes, const CostParams& params,
                   bool across, int64_t ranks);

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_MOVE_COST_H_
