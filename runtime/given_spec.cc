#include "runtime/given_spec.h"

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/box.h"

namespace meshtune::runtime {

namespace {

// The pieces of `plan` rank `rank` sends or receives (all Redistribute reads there).
std::vector<Piece> Mine(const std::vector<Piece>& plan, int rank) {
  std::vector<Piece> out;
  for (const Piece& p : plan) {
    if (p.from == rank || p.to == rank) out.push_back(p);
  }
  return out;
}

// A move along `plan` in elements of `dtype_bytes` bytes.
GivenSpec::Move MoveAlong(std::vector<Piece> plan, int dtype_bytes) {
  auto shared = std::make_shared<const std::vector<Piece>>(std::move(plan));
  return [shared, dtype_bytes](const void* from, void* to, Comm& comm) {
    if (dtype_bytes == 8) {
      Redistribute<double>(*shared, static_cast<const double*>(from), static_cast<double*>(to),
                           comm);
    } else {
      Redistribute<float>(*shared, static_cast<const float*>(from), static_cast<float*>(to), comm);
    }
  };
}

}  // namespace

ir::Mesh MeshOf(const std::vector<std::string>& names, const std::vector<int64_t>& sizes) {
  ir::Mesh mesh;
  for (size_t a = 0; a < names.size(); ++a) mesh.axes.push_back({names[a], sizes[a]});
  return mesh;
}

absl::StatusOr<GivenPlans> PlanBoxes(const ir::GivenLayout& layout, const std::string& name,
                                     const std::vector<int64_t>& shape, const ir::Mesh& mesh,
                                     const std::function<Box(const std::vector<int64_t>&)>& box_of,
                                     bool is_output, bool accumulate) {
  if (layout.kind == ir::GivenLayout::Kind::kBlock) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", name, " has no given layout"));
  }
  if (shape.empty() || (layout.kind == ir::GivenLayout::Kind::kCyclic && shape.size() != 2)) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", name, " with ", shape.size(),
                                                   " dims cannot be ", layout.ToString()));
  }
  GivenPlans plans;
  plans.given = GivenDistribution(layout, shape, mesh);
  const std::unique_ptr<Distribution> shards = BoxDistribution(shape, mesh, box_of);
  if (!is_output || accumulate) {
    absl::StatusOr<std::vector<Piece>> in = PlanRedistribution(*plans.given, *shards);
    if (!in.ok()) return in.status();
    plans.in = *std::move(in);
  }
  if (is_output) {
    absl::StatusOr<std::vector<Piece>> out = PlanRedistribution(*shards, *plans.given);
    if (!out.ok()) return out.status();
    plans.out = *std::move(out);
  }
  return plans;
}

bool IsIdentity(const GivenPlans& plans, const std::vector<int64_t>& shard_elements) {
  for (size_t r = 0; r < shard_elements.size(); ++r) {
    if (plans.given->LocalElements(static_cast<int>(r)) != shard_elements[r]) return false;
  }
  for (const std::vector<Piece>* plan : {&plans.in, &plans.out}) {
    for (const Piece& p : *plan) {
      if (p.from != p.to || p.from_offset != p.to_offset ||
          (p.length > 1 && p.from_stride != p.to_stride))
        return false;
    }
  }
  return true;
}

std::shared_ptr<const GivenSpec> SpecOf(const ir::GivenLayout& layout,
                                        const std::vector<int64_t>& shape, bool is_output,
                                        GivenPlans plans, int rank, int dtype_bytes) {
  auto spec = std::make_shared<GivenSpec>();
  spec->layout = layout.ToString();
  spec->global.assign(static_cast<size_t>(plans.given->LocalElements(rank)), -1);
  const int64_t cols = shape.back();
  for (int64_t row = 0; row < plans.given->rows(); ++row) {
    for (const Run& run : plans.given->Row(row)) {
      if (run.rank != rank) continue;
      for (int64_t c = run.begin; c < run.end; ++c)
        spec->global[static_cast<size_t>(run.offset + (c - run.begin) * run.stride)] =
            row * cols + c;
    }
  }
  const auto sent = [&](const std::vector<Piece>& plan) {
    int64_t elements = 0;
    for (const Piece& p : plan) elements += p.from == rank && p.to != rank ? p.length : 0;
    return elements * dtype_bytes;
  };
  if (!is_output || !plans.in.empty()) {
    spec->in = MoveAlong(Mine(plans.in, rank), dtype_bytes);
    spec->in_bytes_sent = sent(plans.in);
  }
  if (is_output) {
    spec->out = MoveAlong(Mine(plans.out, rank), dtype_bytes);
    spec->out_bytes_sent = sent(plans.out);
  }
  return spec;
}

std::shared_ptr<const GivenSpec> GivenSpecOf(const std::string& layout, const TensorSpec& t,
                                             bool accumulate,
                                             const std::vector<std::string>& axis_names,
                                             const std::vector<int64_t>& axis_sizes, int rank,
                                             int dtype_bytes) {
  absl::StatusOr<ir::GivenLayout> given = ir::ParseLayout(layout);
  if (!given.ok()) return nullptr;
  absl::StatusOr<GivenPlans> plans = PlanBoxes(
      *given, t.name, t.shape, MeshOf(axis_names, axis_sizes),
      [&](const std::vector<int64_t>& c) {
        if (t.is_output && !AtCoordinateZero(t, c)) return Box{};  // off the output's layer
        return Box{t.block_start(c), t.local_shape};
      },
      t.is_output, accumulate);
  if (!plans.ok()) return nullptr;
  return SpecOf(*given, t.shape, t.is_output, *std::move(plans), rank, dtype_bytes);
}

}  // namespace meshtune::runtime
