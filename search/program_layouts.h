// The layouts of a program's intermediates as the program tuner sees them: which boxes of
// an intermediate each rank holds under a statement's schedule (from the replayed
// computation's sharding: ir::Sharding, the lowering's source), and what moving it from
// the producer's boxes to a consumer's costs (runtime::PlanRedistribution's per-rank loads,
// cost::MoveSeconds) — nothing when the boxes are the same on every rank. Moves are cached by
// (mesh, tensor, layouts). Not thread-safe.
#ifndef MESHTUNE_SEARCH_PROGRAM_LAYOUTS_H_
#define MESHTUNE_SEARCH_PROGRAM_LAYOUTS_H_

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "ir/computation.h"
#include "ir/trace.h"
#include "runtime/redistribution.h"

namespace meshtune::search {

// The boxes tensor `tensor` of `base`'s problem is held in under `schedule`, by row-major
// rank (the whole tensor on every rank when the schedule shards it nowhere). InvalidArgument
// when the schedule does not replay.
absl::StatusOr<std::vector<runtime::Box>> HeldBoxes(const ir::Computation& base,
                                                    const ir::Trace& schedule,
                                                    const std::string& tensor);

// What moving a tensor of `shape` and `dtype_bytes` elements from boxes `from` to boxes
// `to` (by row-major rank of `mesh`) costs: whether nothing moves (the same boxes on every
// rank), the bytes the busiest rank sends, and the model's seconds for it.
struct MoveCost {
  bool in_place = false;
  int64_t bytes_max = 0;
  double seconds = 0;
};
absl::StatusOr<MoveCost> CostMove(const std::vector<int64_t>& shape, int dtype_bytes,
                                  const ir::Mesh& mesh, const std::vector<runtime::Box>& from,
                                  const std::vector<runtime::Box>& to,
                                  const cost::CostParams& params);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_PROGRAM_LAYOUTS_H_
