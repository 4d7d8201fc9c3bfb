#include "codegen/patterns.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "codegen/pattern.h"
#include "ir/isl_util.h"
#include "ir/legality.h"
#include "ir/ring.h"
#include "ir/transfer.h"

namespace meshtune::codegen {

namespace {

using ir::DomainVar;
using ir::MapFromAffs;

// P -> P with input dim `pos` replaced by f(P).
isl::map Substitute(const isl::space& p, unsigned n, unsigned pos, const isl::aff& f) {
  std::vector<isl::aff> fs;
  for (unsigned i = 0; i < n; ++i) fs.push_back(i == pos ? f : DomainVar(p, i));
  return MapFromAffs(p, "P", fs);
}

}  // namespace

absl::StatusOr<CommPattern> DetectFetchPattern(const ir::Computation& c, int prefix,
                                               const isl::map& all_sources,
                                               const isl::map& all_offsets,
                                               const std::string& offsets_key) {
  const ir::Mesh& mesh = c.mesh();
  const unsigned na = mesh.axes.size();
  const isl::map sources = ir::DropDistributedLoops(c, all_sources, prefix);
  const isl::map offsets = ir::DropDistributedLoops(c, all_offsets, prefix);
  int serial = 0;
  for (int j = 0; j < prefix; ++j) serial += c.loops()[j].kind != ir::LoopKind::kDistributed;
  const isl::space p = sources.domain().space();
  const isl::space m = ir::SetSpace(c.ctx(), "Mesh", na);
  TransferFacts facts;
  facts.role = TransferFacts::Role::kFetchOne;
  for (unsigned a = 0; a < na; ++a) {
    if (!sources.is_subset(ir::Equalities(p, m, {{a, a}}))) facts.axes.push_back(a);
  }
  // Broadcast: within a group along the moving axes everyone has one root (every
  // coordinate of the source, not only its coordinate along that axis, is the same across
  // the group) and one box.
  auto offsets_independent = [&](int a) {
    if (offsets_key.empty()) return ir::IndependentOfDim(offsets, a);
    return c.MemoBool(absl::StrCat(offsets_key, "|IndependentOfDim ", a),
                      [&] { return ir::IndependentOfDim(offsets, a); });
  };
  facts.one_root_per_group = [&]() -> absl::StatusOr<bool> {
    for (int a : facts.axes) {
      if (!ir::IndependentOfDim(sources, a) || !offsets_independent(a)) return false;
    }
    return true;
  };
  // Shift along one axis: the source moves by a constant step each iteration of the last
  // loop, and what a rank needs next is what its neighbour at that step needs now.
  facts.neighbour_step = [&]() -> absl::StatusOr<std::optional<int>> {
    const unsigned last = na + serial - 1;
    if (serial == 0 || c.loops()[prefix - 1].kind != ir::LoopKind::kSerial ||
        c.loops()[prefix - 1].extent <= 1)
      return std::nullopt;
    const unsigned a = facts.axes[0];
    const int64_t size = mesh.axes[a].size;
    const isl::map next = Substitute(p, na + serial, last, DomainVar(p, last).add_constant(1));
    const isl::map src_a = ir::RangeComponent(sources, a);
    const isl::set valid =
        next.intersect_range(sources.domain()).domain().intersect(sources.domain());
    // { [now] -> [later] } over every rank and iteration, then its differences.
    const isl::set deltas = src_a.intersect_domain(valid)
                                .range_product(next.apply_range(src_a))
                                .range()
                                .unwrap()
                                .deltas();
    if (deltas.is_empty()) return std::nullopt;
    const int64_t lo = ir::SamplePoint(deltas.lexmin())[0],
                  hi = ir::SamplePoint(deltas.lexmax())[0];
    const bool ring =
        lo == hi ||
        (hi - lo == size && deltas.is_equal(isl::set(c.ctx(), "{ [" + std::to_string(lo) + "]; [" +
                                                                  std::to_string(hi) + "] }")));
    int64_t d = ((lo % size) + size) % size;
    if (d > size / 2) d -= size;
    if (!ring || d == 0) return std::nullopt;
    const isl::map nbr =
        Substitute(p, na + serial, a, ir::Mod(DomainVar(p, a).add_constant(d), size));
    if (!next.apply_range(offsets).intersect_domain(valid).is_equal(
            nbr.apply_range(offsets).intersect_domain(valid)))
      return std::nullopt;
    return static_cast<int>(d);
  };
  return RecognizeTransfer(facts);
}

absl::StatusOr<CommPattern> DetectReducePattern(const ir::Computation& c,
                                                const ir::Communication& t,
                                                const std::vector<int64_t>& box_size) {
  TransferFacts facts;
  facts.role = TransferFacts::Role::kReduce;
  facts.axes = ir::ReductionAxes(c);
  if (facts.axes.empty()) return RecognizeTransfer(facts);
  if (const std::optional<ir::Ring> ring = ir::RingOf(c, t))
    facts.ring = TransferFacts::Ring{ring->axis, ring->shift, ring->hop};
  const ir::Sharding* s = c.sharding(t.tensor);
  // Copies along the group's axes are each the result (all-reduced), unless the problem
  // leaves the result on one layer (result_on_layer: reduced onto it, LayerAxes) and the
  // application does not keep copies there (a given layout that keeps copies along the axis).
  const ir::GivenLayout* given = c.problem().LayoutOf(t.tensor);
  facts.replicated = true;
  for (int a : facts.axes) {
    const bool kept =
        !c.problem().result_on_layer ||
        (given != nullptr && given->KeepsCopiesAlong(c.mesh().axes[static_cast<size_t>(a)].name));
    facts.replicated = facts.replicated && (s == nullptr || s->replicated_axes[a]) && kept;
  }
  for (size_t d = 0; d < box_size.size() && s != nullptr; ++d)
    facts.split = facts.split || box_size[d] > s->local_shape[d];
  return RecognizeTransfer(facts);
}

}  // namespace meshtune::codegen
