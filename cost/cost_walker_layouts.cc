// The cost model's once-a-run charges for layouts (cost_walker.h): the copies of replicated
// inputs and the redistributions of tensors in given layouts (their loads: given_loads.h).
#include <algorithm>
#include <memory>

#include "cost/cost_walker.h"
#include "cost/move_cost.h"

namespace meshtune::cost::internal {

void CostWalker::CostCopies() {
  for (const codegen::TensorInfo& t : p_.tensors) {
    if (t.is_output || t.given.kind != ir::GivenLayout::Kind::kBlock) continue;
    const std::vector<int> axes = codegen::ReplicatedAxes(p_, t);
    if (axes.empty()) continue;
    int64_t elements = 1;
    for (int64_t e : t.local_shape) elements *= e;
    CommPattern pattern;
    pattern.kind = Kind::kBroadcast;
    pattern.axes = axes;
    const int64_t n = values_.ranks();
    tallies_.push_back({t.name, "copies", pattern, 0, false, params_.scales.collective, 0,
                        std::vector<double>(n), Values(n), Values(n), TermClass::kCollective});
    const double seconds = CollectiveSeconds(Collective::kBroadcast, axes,
                                             static_cast<double>(elements * p_.dtype_bytes), false);
    for (int64_t r = 0; r < n; ++r) Charge(tallies_.back(), r, seconds, elements, 1, 1);
  }
}

void CostWalker::CostGiven() {
  for (const codegen::TensorInfo& t : p_.tensors) {
    if (!codegen::Redistributed(p_, t)) continue;
    const std::shared_ptr<const GivenLoads> loads = LoadsOf(p_, t);
    ChargeLoads(t.name, "layout", loads->in);
    ChargeLoads(t.name, "layout-out", loads->out);
  }
}

void CostWalker::ChargeLoads(const std::string& tensor, const std::string& loop,
                             const std::vector<runtime::RankLoad>& loads) {
  if (loads.empty()) return;
  CommPattern pattern;
  pattern.kind = Kind::kSendRecv;
  pattern.axes = AllAxes();
  const int64_t n = values_.ranks();
  tallies_.push_back({tensor, loop, pattern, 0, false, params_.scales.point_to_point, 0,
                      std::vector<double>(n), Values(n), Values(n)});
  // Between nodes when the mesh spans them (a rank's peers may be anywhere).
  const bool across = Across(pattern.axes);
  for (int64_t r = 0; r < n; ++r) {
    const runtime::RankLoad& l = loads[static_cast<size_t>(values_.Self(r))];
    const double seconds = MoveSeconds(l, p_.dtype_bytes, params_, across, p_.Ranks());
    Charge(tallies_.back(), r, seconds, l.received, std::max(l.sends, l.receives), 1);
  }
}

}  // namespace meshtune::cost::internal
