#include "search/program_layouts.h"

#include <algorithm>

#include "runtime/box.h"
#include "runtime/given_layouts.h"
#include "search/move_cost.h"

namespace meshtune::search {

namespace {

// The row-major rank of `coords` on a mesh of `sizes`.
int64_t RankAt(const std::vector<int64_t>& sizes, const std::vector<int64_t>& coords) {
  int64_t r = 0;
  for (size_t a = 0; a < sizes.size(); ++a) r = r * sizes[a] + coords[a];
  return r;
}

std::vector<int64_t> SizesOf(const ir::Mesh& mesh) {
  std::vector<int64_t> sizes;
  for (const ir::MeshAxis& a : mesh.axes) sizes.push_back(a.size);
  return sizes;
}

}  // namespace

absl::StatusOr<std::vector<runtime::Box>> HeldBoxes(const ir::Computation& base,
                                                    const ir::Trace& schedule,
                                                    const std::string& tensor) {
  const ir::Replay replay = ir::ReplayTrace(base, schedule);
  if (!replay.status.ok()) return absl::InvalidArgumentError(replay.status.message());
  const ir::Mesh& mesh = base.mesh();
  const std::vector<int64_t> shape = base.problem().Shape(tensor);
  const ir::Sharding* sharding = replay.computation.sharding(tensor);
  std::vector<runtime::Box> boxes(static_cast<size_t>(mesh.Ranks()));
  const std::vector<int64_t> sizes = SizesOf(mesh);
  runtime::ForEachPoint(
      sizes.empty() ? std::vector<int64_t>{1} : sizes, [&](const std::vector<int64_t>& point) {
        const std::vector<int64_t> coords = sizes.empty() ? std::vector<int64_t>{} : point;
        runtime::Box& box = boxes[static_cast<size_t>(RankAt(sizes, coords))];
        if (sharding == nullptr) {
          box = runtime::Box{std::vector<int64_t>(shape.size(), 0), shape};
          return;
        }
        box.extent = sharding->local_shape;
        for (const auto& dim : sharding->blocks) {
          int64_t start = 0;
          for (const auto& [block, index] : dim) start += block * index.Evaluate(mesh, coords);
          box.start.push_back(start);
        }
      });
  return boxes;
}

absl::StatusOr<MoveCost> CostMove(const std::vector<int64_t>& shape, int dtype_bytes,
                                  const ir::Mesh& mesh, const std::vector<runtime::Box>& from,
                                  const std::vector<runtime::Box>& to, const CostParams& params) {
  MoveCost cost;
  cost.in_place = true;
  for (size_t r = 0; r < from.size() && r < to.size(); ++r) {
    if (from[r].start != to[r].start || from[r].extent != to[r].extent) cost.in_place = false;
  }
  if (cost.in_place) return cost;
  const std::vector<int64_t> sizes = SizesOf(mesh);
  auto source = runtime::BoxDistribution(shape, mesh, [&](const std::vector<int64_t>& c) {
    return from[static_cast<size_t>(RankAt(sizes, c))];
  });
  auto target = runtime::BoxDistribution(shape, mesh, [&](const std::vector<int64_t>& c) {
    return to[static_cast<size_t>(RankAt(sizes, c))];
  });
  absl::StatusOr<std::vector<runtime::Piece>> plan = runtime::PlanRedistribution(*source, *target);
  if (!plan.ok()) return plan.status();
  const CostParams p = ForRanks(params, mesh.Ranks());
  const bool across = p.node_ranks > 0 && mesh.Ranks() > p.node_ranks;
  for (const runtime::RankLoad& l : runtime::LoadOf(*plan, mesh.Ranks())) {
    cost.bytes_max = std::max(cost.bytes_max, l.sent * dtype_bytes);
    cost.seconds = std::max(cost.seconds, MoveSeconds(l, dtype_bytes, p, across, mesh.Ranks()));
  }
  return cost;
}

}  // namespace meshtune::search
