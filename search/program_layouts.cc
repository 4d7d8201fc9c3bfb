#include "search/program_layouts.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "cost/move_cost.h"
#include "runtime/box.h"
#include "runtime/given_layouts.h"
#include "runtime/redistribution.h"

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

// Row `row` of another distribution, alone.
class OneRow : public runtime::Distribution {
 public:
  OneRow(const runtime::Distribution& d, int64_t row) : d_(d), row_(row) {}
  int64_t rows() const override { return 1; }
  std::vector<runtime::Run> Row(int64_t) const override { return d_.Row(row_); }
  int64_t LocalElements(int rank) const override { return d_.LocalElements(rank); }

 private:
  const runtime::Distribution& d_;
  int64_t row_;
};

// A class of rows whose runs are alike in both distributions: its first row and its size.
struct RowClass {
  int64_t row = 0, rows = 0;
};

// The rows of a tensor of `shape` (every dim but the last) in classes: per dim, the cuts
// at every box's start and end split it into intervals, and the rows of one product of
// intervals lie in the same boxes, so their runs differ only in their offsets. At most
// the product of (2 x boxes + 1) over those dims, however large the extents.
std::vector<RowClass> RowClasses(const std::vector<int64_t>& shape,
                                 const std::vector<runtime::Box>& from,
                                 const std::vector<runtime::Box>& to) {
  const size_t dims = shape.empty() ? 0 : shape.size() - 1;
  std::vector<std::vector<int64_t>> cuts(dims);
  for (size_t d = 0; d < dims; ++d) {
    cuts[d] = {0, shape[d]};
    for (const std::vector<runtime::Box>* boxes : {&from, &to}) {
      for (const runtime::Box& b : *boxes) {
        if (b.start.size() <= d) continue;
        for (int64_t c : {b.start[d], b.start[d] + b.extent[d]})
          cuts[d].push_back(std::clamp<int64_t>(c, 0, shape[d]));
      }
    }
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  std::vector<RowClass> out = {{0, 1}};
  for (size_t d = 0; d < dims; ++d) {
    std::vector<RowClass> next;
    for (const RowClass& c : out) {
      for (size_t i = 0; i + 1 < cuts[d].size(); ++i) {
        next.push_back({c.row * shape[d] + cuts[d][i], c.rows * (cuts[d][i + 1] - cuts[d][i])});
      }
    }
    out = std::move(next);
  }
  return out;
}

// runtime::LoadOf(PlanRedistribution(source, target)) without planning every row: one row
// of each class planned, its elements counted as many times as the class has rows.
absl::StatusOr<std::vector<runtime::RankLoad>> LoadOfRows(const runtime::Distribution& source,
                                                          const runtime::Distribution& target,
                                                          const std::vector<RowClass>& classes,
                                                          int64_t ranks) {
  std::vector<runtime::RankLoad> load(static_cast<size_t>(ranks));
  std::set<std::pair<int, int>> pairs;
  for (const RowClass& c : classes) {
    absl::StatusOr<std::vector<runtime::Piece>> plan =
        runtime::PlanRedistribution(OneRow(source, c.row), OneRow(target, c.row));
    if (!plan.ok()) return plan.status();
    const std::vector<runtime::RankLoad> row = runtime::LoadOf(*plan, ranks);
    for (size_t r = 0; r < row.size(); ++r) {
      load[r].sent += row[r].sent * c.rows;
      load[r].received += row[r].received * c.rows;
      load[r].copied += row[r].copied * c.rows;
      load[r].strided += row[r].strided * c.rows;
    }
    for (const runtime::Piece& p : *plan) {
      if (p.from != p.to && pairs.insert({p.from, p.to}).second) {
        ++load[static_cast<size_t>(p.from)].sends;
        ++load[static_cast<size_t>(p.to)].receives;
      }
    }
  }
  return load;
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
                                  const std::vector<runtime::Box>& to,
                                  const cost::CostParams& params) {
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
  absl::StatusOr<std::vector<runtime::RankLoad>> loads =
      LoadOfRows(*source, *target, RowClasses(shape, from, to), mesh.Ranks());
  if (!loads.ok()) return loads.status();
  const cost::CostParams p = cost::ForRanks(params, mesh.Ranks());
  const bool across = p.node_ranks > 0 && mesh.Ranks() > p.node_ranks;
  for (const runtime::RankLoad& l : *loads) {
    cost.bytes_max = std::max(cost.bytes_max, l.sent * dtype_bytes);
    cost.seconds =
        std::max(cost.seconds, cost::MoveSeconds(l, dtype_bytes, p, across, mesh.Ranks()));
  }
  return cost;
}

}  // namespace meshtune::search
