#include "ir/ring.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/isl_util.h"
#include "ir/legality_closed_form.h"
#include "ir/transfer.h"

namespace meshtune::ir {

namespace {

// "i0,i1,...,i{n-1}".
std::string Dims(unsigned n) {
  std::vector<std::string> v;
  for (unsigned d = 0; d < n; ++d) v.push_back(absl::StrCat("i", d));
  return absl::StrJoin(v, ",");
}

// P[r..., s...] -> P[r'..., s'...] on the domain of DropDistributedLoops (ranks, then the
// serial loops up to the communicate loop, which is last): r' is r moved by `shift` around
// mesh axis `axis`, s' is s with the last loop moved by `dt` (within its extent).
isl::map Move(const Computation& c, unsigned ns, int axis, int shift, int dt, int64_t extent) {
  const Mesh& mesh = c.mesh();
  const unsigned na = mesh.axes.size();
  std::vector<std::string> out, cons;
  for (unsigned d = 0; d < na + ns; ++d) {
    const std::string v = absl::StrCat("i", d);
    if (d < na) {
      const int64_t size = mesh.axes[d].size;
      cons.push_back(absl::StrCat("0 <= ", v, " < ", size));
      out.push_back(static_cast<int>(d) == axis
                        ? absl::StrCat("(", v, " + ", shift + size, ") mod ", size)
                        : v);
    } else if (d + 1 == na + ns) {
      cons.push_back(absl::StrCat("0 <= ", v, " < ", extent - dt));
      out.push_back(absl::StrCat(v, " + ", dt));
    } else {
      out.push_back(v);
    }
  }
  return isl::map(c.ctx(), absl::StrCat("{ P[", Dims(na + ns), "] -> P[", absl::StrJoin(out, ","),
                                        "] : ", absl::StrJoin(cons, " and "), " }"));
}

// P[r..., s...] -> Mesh[r'...]: r moved by `shift` around `axis`.
isl::map ToRank(const Computation& c, unsigned ns, int axis, int shift, int64_t extent) {
  const unsigned na = c.mesh().axes.size();
  return ProjectOutRange(Move(c, ns, axis, shift, 0, extent), na, ns).set_range_tuple("Mesh");
}

}  // namespace

RingShape ExamineRing(const Computation& c, const Communication& t, int axis) {
  RingShape out;
  const int prefix = TransferPrefix(c, t);
  const Loop& loop = c.loops()[prefix - 1];
  if (loop.name != t.loop || loop.kind != LoopKind::kSerial || loop.extent < 2) return out;
  const isl::map elements = DropDistributedLoops(c, TransferElements(c, t), prefix);
  const unsigned na = c.mesh().axes.size();
  const unsigned ns = elements.domain_tuple_dim() - na;
  for (int shift : {1, -1}) {
    const isl::map next = Move(c, ns, axis, shift, 1, loop.extent);
    if (!elements.intersect_domain(next.domain()).is_equal(next.apply_range(elements))) continue;
    out.ring = Ring{axis, shift, false};
    break;
  }
  if (!out.ring.has_value()) return out;
  const isl::map owners = c.Owners(t.tensor);
  out.copies = !owners.is_single_valued();
  // The last step's elements, and whether their holder is the rank or its neighbour.
  const isl::set last(c.ctx(), absl::StrCat("{ P[", Dims(na + ns), "] : i", na + ns - 1, " = ",
                                            loop.extent - 1, " }"));
  const isl::map ends = elements.intersect_domain(last);
  const isl::map held_home = ToRank(c, ns, axis, 0, loop.extent).apply_range(owners.reverse());
  const isl::map held_next =
      ToRank(c, ns, axis, out.ring->shift, loop.extent).apply_range(owners.reverse());
  const isl::map away_home = ends.subtract(held_home), away_next = ends.subtract(held_next);
  if (away_home.is_empty() || away_next.is_empty()) {
    out.ends_held = true;
    out.ring->hop = !away_home.is_empty();  // on the rank itself when it can
    return out;
  }
  const isl::set neither = away_home.intersect(away_next).domain();
  if (!neither.is_empty()) {
    out.end_rank = SamplePoint(neither.lexmin());
  } else {
    out.end_rank = SamplePoint(away_next.domain().lexmin());
    out.other_rank = SamplePoint(away_home.domain().lexmin());
  }
  return out;
}

namespace {

// ExamineRing's answers that RingOf and MovesAsRing give, remembered per loops and sharding
// (Computation::MemoBool); on a miss ExamineRing runs once for all of them.
struct Answers {
  bool moves = false, legal = false, down = false, hop = false;
};
Answers Remembered(const Computation& c, const Communication& t, int axis) {
  const std::string key =
      absl::StrCat(c.LoopsKey(), "|Ring ", c.TensorKey(t.tensor), " via ", t.loop, " along ", axis);
  std::optional<RingShape> shape;
  const auto examined = [&]() -> const RingShape& {
    if (!shape.has_value()) shape = ExamineRing(c, t, axis);
    return *shape;
  };
  Answers out;
  out.moves = c.MemoBool(key + " moves", [&] { return examined().ring.has_value(); });
  if (!out.moves) return out;
  out.legal = c.MemoBool(key, [&] { return !examined().copies && examined().ends_held; });
  if (!out.legal) return out;
  out.down = c.MemoBool(key + " down", [&] { return examined().ring->shift < 0; });
  out.hop = c.MemoBool(key + " hop", [&] { return examined().ring->hop; });
  return out;
}

}  // namespace

bool MovesAsRing(const Computation& c, const Communication& t, int axis, bool closed_forms) {
  if (closed_forms) {
    if (const std::optional<RingAnswers> ring = ClosedFormRing(c, t, axis)) return ring->moves;
  }
  return Remembered(c, t, axis).moves;
}

std::optional<Ring> RingOf(const Computation& c, const Communication& t, bool closed_forms) {
  if (!c.problem().IsOutput(t.tensor)) return std::nullopt;
  if (closed_forms) {
    if (const auto ring = ClosedFormRingOf(c, t)) {
      if (!ring->second.legal) return std::nullopt;
      return Ring{ring->first, ring->second.shift, ring->second.hop};
    }
  }
  int axis = -1;
  for (int a : ReductionAxes(c)) {
    if (ElementsAlignedAlong(c, t, a)) continue;
    if (axis >= 0) return std::nullopt;
    axis = a;
  }
  if (axis < 0) return std::nullopt;
  const Answers a = Remembered(c, t, axis);
  if (!a.legal) return std::nullopt;
  return Ring{axis, a.down ? -1 : 1, a.hop};
}

}  // namespace meshtune::ir
