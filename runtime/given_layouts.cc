#include "runtime/given_layouts.h"

#include <set>
#include <string>
#include <utility>

#include "runtime/box.h"

namespace meshtune::runtime {

Box ShardBox(const codegen::Program& p, const codegen::TensorInfo& t, const Coords& coords) {
  if (!codegen::OnLayer(p, t, coords)) return Box{};  // holds no result (LayerAxes)
  return Box{codegen::ShardStartAt(p, t, coords), t.local_shape};
}

absl::StatusOr<GivenPlans> PlanGiven(const codegen::Program& p, const codegen::TensorInfo& t) {
  return PlanBoxes(
      t.given, t.name, t.shape, MeshOf(p.axis_names, p.axis_sizes),
      [&](const std::vector<int64_t>& c) { return ShardBox(p, t, c); }, t.is_output, p.accumulate);
}

std::shared_ptr<const GivenSpec> MakeGivenSpec(const codegen::TensorInfo& t, GivenPlans plans,
                                               int rank, int dtype_bytes) {
  return SpecOf(t.given, t.shape, t.is_output, std::move(plans), rank, dtype_bytes);
}

std::vector<RankLoad> LoadOf(const std::vector<Piece>& plan, int64_t ranks) {
  std::vector<RankLoad> load(static_cast<size_t>(ranks));
  std::set<std::pair<int, int>> pairs;
  for (const Piece& p : plan) {
    const bool strided_from = p.length > 1 && p.from_stride != 1;
    const bool strided_to = p.length > 1 && p.to_stride != 1;
    if (p.from == p.to) {
      load[static_cast<size_t>(p.to)].copied += p.length;
      if (strided_from || strided_to) load[static_cast<size_t>(p.to)].strided += p.length;
      continue;
    }
    load[static_cast<size_t>(p.from)].sent += p.length;
    load[static_cast<size_t>(p.to)].received += p.length;
    if (strided_from) load[static_cast<size_t>(p.from)].strided += p.length;
    if (strided_to) load[static_cast<size_t>(p.to)].strided += p.length;
    if (pairs.insert({p.from, p.to}).second) {
      ++load[static_cast<size_t>(p.from)].sends;
      ++load[static_cast<size_t>(p.to)].receives;
    }
  }
  return load;
}

}  // namespace meshtune::runtime
