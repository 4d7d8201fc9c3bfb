#include "cost/move_cost.h"

#include <algorithm>

namespace meshtune::cost {

double MoveSeconds(const runtime::RankLoad& l, int dtype_bytes, const CostParams& params,
                   bool across, int64_t ranks) {
  const double bytes = dtype_bytes;
  const double alpha = across ? params.alpha_node : params.alpha;
  const double beta = across ? params.beta_node : params.beta;
  const double moved = bytes * static_cast<double>(std::max(l.sent, l.received));
  double exchange = alpha * static_cast<double>(std::max(l.sends, l.receives)) + beta * moved;
  // Where calibration timed MPI_Alltoall itself: its line over the ranks, for a rank's box
  // of which it sends and receives the larger share (the exchange waits for its slowest
  // pair as the collective does).
  if (params.collectives.Has(Collective::kAllToAll) && ranks > 1) {
    exchange = moved > 0
                   ? params.collectives.Seconds(
                         Collective::kAllToAll, ranks,
                         moved * static_cast<double>(ranks) / static_cast<double>(ranks - 1), false)
                   : 0;
  }
  const double passed = bytes * static_cast<double>(l.sent + l.received + l.copied);
  const double strided = bytes * static_cast<double>(l.strided);
  const double gather = params.gather > 0 ? params.gather : params.copy;
  return exchange + params.copy * (passed - strided) + gather * strided;
}

}  // namespace meshtune::cost
