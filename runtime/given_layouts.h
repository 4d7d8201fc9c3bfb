// A lowered program's given layouts at run time: for each tensor the application holds in
// a layout of its own (codegen::TensorInfo::given), the redistributions from that layout
// into the schedule's shards and from the output's shards back (runtime/given_spec.h),
// and what they move, for the cost model. Plain values; thread-safe to read.
#ifndef MESHTUNE_RUNTIME_GIVEN_LAYOUTS_H_
#define MESHTUNE_RUNTIME_GIVEN_LAYOUTS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "runtime/given_spec.h"

namespace meshtune::runtime {

// The box of tensor `t` of `p` that the rank at `coords` holds (its shard's storage, of
// local_shape: BoxDistribution holds only its part within t.shape); empty off an output's
// layer (codegen::LayerAxes), where the shard holds no result.
Box ShardBox(const codegen::Program& p, const codegen::TensorInfo& t, const Coords& coords);

// The plans of tensor `t` of `p` (PlanBoxes over its shards). Callers skip a tensor whose
// layout is its sharding (codegen::InPlace): nothing moves.
absl::StatusOr<GivenPlans> PlanGiven(const codegen::Program& p, const codegen::TensorInfo& t);

// SpecOf for tensor `t`.
std::shared_ptr<const GivenSpec> MakeGivenSpec(const codegen::TensorInfo& t, GivenPlans plans,
                                               int rank, int dtype_bytes);

// What a plan makes each rank do: messages and elements it sends and receives, and
// elements it copies locally.
struct RankLoad {
  int64_t sends = 0, receives = 0;             // peers
  int64_t sent = 0, received = 0, copied = 0;  // elements
  // Of the elements it packs, unpacks or copies, those read or written with a stride.
  int64_t strided = 0;
};

// The load of `plan` on each of `ranks` ranks.
std::vector<RankLoad> LoadOf(const std::vector<Piece>& plan, int64_t ranks);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_GIVEN_LAYOUTS_H_
