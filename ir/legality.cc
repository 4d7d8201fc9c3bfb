#include "ir/legality.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "base/bytes.h"
#include "base/check.h"
#include "base/excerpt.h"
#include "ir/legality_closed_form.h"
#include "ir/ring.h"
#include "ir/transfer.h"

namespace meshtune::ir {

namespace {

std::string RankText(const Mesh& mesh, const std::vector<int64_t>& coords, size_t offset = 0) {
  std::vector<std::string> parts;
  for (size_t a = 0; a < mesh.axes.size(); ++a) {
    parts.push_back(absl::StrCat(base::Excerpt(mesh.axes[a].name), "=", coords[offset + a]));
  }
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

std::string ElementText(const std::string& tensor, const std::vector<int64_t>& coords,
                        size_t offset, size_t n) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < n; ++d) parts.push_back(absl::StrCat(coords[offset + d]));
  return absl::StrCat(base::Excerpt(tensor), "[", absl::StrJoin(parts, ", "), "]");
}

// "mo=0, no=1, ko=0": the serial loops among the first `depth` loops.
std::string IterationText(const Computation& c, const std::vector<int64_t>& coords, size_t offset,
                          int depth) {
  std::vector<std::string> parts;
  for (int j = 0; j < depth; ++j) {
    if (c.loops()[j].kind == LoopKind::kDistributed) continue;
    parts.push_back(absl::StrCat(base::Excerpt(c.loops()[j].name), "=", coords[offset + j]));
  }
  return absl::StrJoin(parts, ", ");
}

isl::set PointSet(isl::ctx ctx, const std::string& tuple, const std::vector<int64_t>& coords,
                  size_t offset, size_t n) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < n; ++d) parts.push_back(absl::StrCat(coords[offset + d]));
  return isl::set(ctx, absl::StrCat("{ ", tuple, "[", absl::StrJoin(parts, ","), "] }"));
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Rank that holds element `e` (the first one), as text.
std::string HolderText(const Computation& c, const std::string& tensor,
                       const std::vector<int64_t>& coords, size_t offset, size_t n) {
  const isl::set holders = PointSet(c.ctx(), tensor, coords, offset, n).apply(c.Owners(tensor));
  if (holders.is_empty()) return "no rank";
  return absl::StrCat("rank ", RankText(c.mesh(), SamplePoint(holders.lexmin())));
}

// Each check below appends its rejection to `out`; without `messages` only the code (the
// search's case: finding an example point and naming it is most of the cost).

void CheckOwnership(const Computation& c, const std::string& tensor, std::vector<Rejection>& out,
                    bool messages) {
  const Sharding* s = c.sharding(tensor);
  if (s == nullptr) return;
  const isl::set orphans = c.TensorSet(tensor).subtract(s->owners.domain());
  if (orphans.is_empty()) return;
  if (!messages) return out.push_back({std::string(kUnownedElement), ""});
  const std::vector<int64_t> e = SamplePoint(orphans.lexmin());
  std::vector<std::string> targets;
  for (const ShardTarget& t : s->targets)
    targets.push_back(absl::StrCat(base::Excerpt(t.dim), "@", base::Excerpt(t.target.ToString())));
  out.push_back({std::string(kUnownedElement),
                 absl::StrCat(ElementText(tensor, e, 0, e.size()), " is held by no rank: shard(",
                              base::Excerpt(tensor), ", ", absl::StrJoin(targets, ", "),
                              ") leaves blocks that no mesh coordinate maps to")});
}

void CheckLocal(const Computation& c, const std::string& tensor, std::vector<Rejection>& out,
                bool messages) {
  const isl::map uses = c.Execution().reverse().apply_range(c.Access(tensor));  // Mesh -> T
  const isl::map remote = uses.subtract(c.Owners(tensor).reverse());
  if (remote.is_empty()) return;
  if (!messages) return out.push_back({std::string(kNonLocalAccess), ""});
  const std::vector<int64_t> w = SamplePoint(remote.wrap().lexmin());
  const size_t na = c.mesh().axes.size();
  const size_t nd = w.size() - na;
  const bool output = c.problem().IsOutput(tensor);
  out.push_back(
      {std::string(kNonLocalAccess),
       absl::StrCat("rank ", RankText(c.mesh(), w), output ? " writes " : " reads ",
                    ElementText(tensor, w, na, nd), ", which ", HolderText(c, tensor, w, na, nd),
                    " holds, not it; ",
                    output ? "communicate the output to reduce it to its holders, or shard "
                           : "communicate it, or shard ",
                    tensor, " to match the computation")});
}

// Mesh[r] -> Mesh[g]: g is in r's group along `axes` (equal coordinates on every other axis).
isl::map GroupOf(const Computation& c, const std::vector<int>& axes) {
  const Mesh& mesh = c.mesh();
  const isl::space m = SetSpace(c.ctx(), "Mesh", mesh.axes.size());
  std::vector<std::pair<unsigned, unsigned>> pin;
  std::vector<int64_t> sizes;
  for (unsigned a = 0; a < mesh.axes.size(); ++a) {
    sizes.push_back(mesh.axes[a].size);
    if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end())
      pin.emplace_back(a, a);
  }
  const isl::set all = Box(m, sizes);
  return Equalities(m, m, pin).intersect_domain(all).intersect_range(all);
}

std::string AxesText(const Mesh& mesh, const std::vector<int>& axes) {
  std::vector<std::string> names;
  for (int a : axes) names.push_back(mesh.axes[a].name);
  return base::ExcerptList(names);
}

// Every holder of an output element receives every update of it: executes it itself or,
// when the output is reduced over `reduce_axes`, some rank of its reduction group does.
void CheckOutputComplete(const Computation& c, const std::string& tensor,
                         const std::vector<int>& reduce_axes, std::vector<Rejection>& out,
                         bool messages) {
  // Mesh[r] -> S[i]: r holds the element instance i writes, but no rank of its group executes i.
  const isl::map needed = c.Owners(tensor).reverse().apply_range(c.Access(tensor).reverse());
  const isl::map executed = reduce_axes.empty()
                                ? c.Execution().reverse()
                                : GroupOf(c, reduce_axes).apply_range(c.Execution().reverse());
  const isl::map missing = needed.subtract(executed);
  if (missing.is_empty()) return;
  if (!messages) return out.push_back({std::string(kUnreducedOutput), ""});
  const std::vector<int64_t> w = SamplePoint(missing.wrap().lexmin());
  const size_t na = c.mesh().axes.size();
  const Problem& p = c.problem();
  const isl::set inst = PointSet(c.ctx(), "S", w, na, p.indices.size());
  const std::vector<int64_t> elem = SamplePoint(inst.apply(c.Access(tensor)));
  const std::vector<int64_t> runner = SamplePoint(inst.apply(c.Execution()).lexmin());
  std::vector<std::string> iter;
  for (size_t d = 0; d < p.indices.size(); ++d)
    iter.push_back(absl::StrCat(base::Excerpt(p.indices[d]), "=", w[na + d]));
  out.push_back(
      {std::string(kUnreducedOutput),
       absl::StrCat(ElementText(tensor, elem, 0, elem.size()), " is held by rank ",
                    RankText(c.mesh(), w), " but its update at (", absl::StrJoin(iter, ", "),
                    ") runs on rank ", RankText(c.mesh(), runner),
                    reduce_axes.empty()
                        ? absl::StrCat(": an output written by several ranks needs communicate(",
                                       base::Excerpt(tensor), ", <loop>) to reduce it")
                        : absl::StrCat(", outside its reduction group along ",
                                       AxesText(c.mesh(), reduce_axes)))});
}

// "C[0:32, 32:64]": the box around the elements `elements` (P[r, serial...] -> T) gives
// the point `w` of its domain.
std::string BoxText(const Computation& c, const std::string& tensor, const isl::map& elements,
                    const std::vector<int64_t>& w) {
  const isl::set data = PointSet(c.ctx(), "P", w, 0, w.size()).apply(elements);
  const std::vector<int64_t> lo = SamplePoint(data.lexmin()), hi = SamplePoint(data.lexmax());
  std::vector<std::string> range;
  for (size_t d = 0; d < lo.size(); ++d) range.push_back(absl::StrCat(lo[d], ":", hi[d] + 1));
  return absl::StrCat(base::Excerpt(tensor), "[", absl::StrJoin(range, ", "), "]");
}

// When the partial sums of output transfer `t`, misaligned along reduction axis `a`, pass
// around a ring there (ir/ring.h): appends why that ring cannot reduce them, if anything,
// and returns true (the ring decided). False when they do not move as a ring.
bool CheckRing(const Computation& c, const Communication& t, int a, std::vector<Rejection>& out,
               bool messages, bool closed_forms) {
  if (!messages) {
    if (RingOf(c, t, closed_forms).has_value()) return true;
    if (!MovesAsRing(c, t, a, closed_forms)) return false;
    out.push_back({std::string(kMisalignedReduction), ""});
    return true;
  }
  const RingShape shape = ExamineRing(c, t, a);
  if (!shape.ring.has_value()) return false;
  if (!shape.copies && shape.ends_held) return true;
  const Mesh& mesh = c.mesh();
  const std::string tensor = base::Excerpt(t.tensor);
  std::string message =
      absl::StrCat("communicate(", tensor, ", ", base::Excerpt(t.loop), "): the partial sums of ",
                   tensor, " pass around a ring along ", mesh.axes[a].name,
                   " (to the neighbour at ", shape.ring->shift > 0 ? "+1" : "-1", " each step)");
  if (shape.copies) {
    std::vector<std::string> copied;
    const Sharding* s = c.sharding(t.tensor);
    for (size_t b = 0; b < mesh.axes.size(); ++b) {
      if (s == nullptr || s->replicated_axes[b]) copied.push_back(mesh.axes[b].name);
    }
    absl::StrAppend(&message, ", but ", tensor, " has copies along ", base::ExcerptList(copied),
                    "; a ring ends on the one rank that holds each element");
  } else {
    const int prefix = TransferPrefix(c, t);
    const isl::map elements = DropDistributedLoops(c, TransferElements(c, t), prefix);
    const std::string step = absl::StrCat(base::Excerpt(t.loop), "=", shape.end_rank.back());
    const std::string end = BoxText(c, t.tensor, elements, shape.end_rank);
    if (shape.other_rank.empty()) {
      const std::vector<int64_t> e =
          SamplePoint(PointSet(c.ctx(), "P", shape.end_rank, 0, shape.end_rank.size())
                          .apply(elements)
                          .lexmin());
      absl::StrAppend(&message, ", but at ", step, " rank ", RankText(mesh, shape.end_rank),
                      " ends with ", end, ", whose element ", ElementText(t.tensor, e, 0, e.size()),
                      " is held by ", HolderText(c, t.tensor, e, 0, e.size()),
                      ", neither it nor its neighbour; a ring must end on the holders");
    } else {
      absl::StrAppend(&message, ", but at ", step, " rank ", RankText(mesh, shape.end_rank),
                      " ends with ", end, ", which it holds, and rank ",
                      RankText(mesh, shape.other_rank), " with ",
                      BoxText(c, t.tensor, elements, shape.other_rank),
                      ", which its neighbour holds; a ring must end alike on every rank");
    }
  }
  out.push_back({std::string(kMisalignedReduction), std::move(message)});
  return true;
}

// A communicated output is summed over the reduction axes at each instance of its loop:
// every rank of a group must hold partial sums of the same elements then, or the sums mix
// different blocks (and the ranks disagree on the collective). Without reduction axes the
// buffer only stages the rank's own writes, which must then be local and complete.

void CheckReduction(const Computation& c, const Communication& t, std::vector<Rejection>& out,
                    bool messages, bool closed_forms) {
  const std::vector<int> axes = ReductionAxes(c);
  const size_t before = out.size();
  if (axes.empty()) {
    CheckLocal(c, t.tensor, out, messages);
    if (out.size() == before) CheckOutputComplete(c, t.tensor, axes, out, messages);
    return;
  }
  std::vector<int> misaligned;
  for (int a : axes) {
    if (!ElementsAlignedAlong(c, t, a)) misaligned.push_back(a);
  }
  // Misaligned along one axis: the partial sums may still pass around a ring there.
  if (misaligned.size() == 1 && CheckRing(c, t, misaligned[0], out, messages, closed_forms)) return;
  for (int a : misaligned) {
    if (!messages) return out.push_back({std::string(kMisalignedReduction), ""});
    const int prefix = TransferPrefix(c, t);
    const isl::map elements =
        DropDistributedLoops(c, TransferElements(c, t), prefix);  // P[r, serial] -> T
    const Mesh& mesh = c.mesh();
    const unsigned na = mesh.axes.size();
    // P1 -> P2 differing in mesh coordinate a alone; then an element P2 holds and P1 does not.
    const isl::space p = elements.domain().space();
    std::vector<std::pair<unsigned, unsigned>> same;
    for (unsigned d = 0; d < elements.domain_tuple_dim(); ++d) {
      if (d != static_cast<unsigned>(a)) same.emplace_back(d, d);
    }
    const isl::set dom = elements.domain();
    const isl::map peers = Equalities(p, p, same).intersect_domain(dom).intersect_range(dom);
    const isl::map back = peers.apply_range(elements).subtract(elements);
    const std::vector<int64_t> w1 = SamplePoint(back.domain().lexmin());
    const isl::set at1 = PointSet(c.ctx(), "P", w1, 0, w1.size());
    const std::vector<int64_t> e = SamplePoint(at1.apply(back).lexmin());
    const isl::set holders = PointSet(c.ctx(), t.tensor, e, 0, e.size())
                                 .apply(elements.reverse())
                                 .intersect(at1.apply(peers));
    const std::vector<int64_t> w2 = SamplePoint(holders.lexmin());
    auto block = [&](const std::vector<int64_t>& w) { return BoxText(c, t.tensor, elements, w); };
    std::vector<std::string> iter;
    size_t k = na;
    for (int j = 0; j < prefix; ++j) {
      if (c.loops()[j].kind != LoopKind::kDistributed)
        iter.push_back(absl::StrCat(base::Excerpt(c.loops()[j].name), "=", w1[k++]));
    }
    out.push_back(
        {std::string(kMisalignedReduction),
         absl::StrCat("communicate(", base::Excerpt(t.tensor), ", ", base::Excerpt(t.loop),
                      "): at ", iter.empty() ? "" : absl::StrJoin(iter, ", ") + " ", "rank ",
                      RankText(mesh, w1), " holds partial sums of ", block(w1), " but rank ",
                      RankText(mesh, w2), " of its reduction group along ", mesh.axes[a].name,
                      " holds ", block(w2),
                      "; a reduction adds up the same elements across the group")});
    return;
  }
  CheckOutputComplete(c, t.tensor, axes, out, messages);
}

void CheckSingleSource(const Computation& c, const Communication& t, std::vector<Rejection>& out,
                       bool messages) {
  if (SingleSource(c, t) || !GatherAxes(c, t).empty()) return;
  if (!messages) return out.push_back({std::string(kMultiSourceTransfer), ""});
  const isl::map sources = TransferSources(c, t);
  isl::map extra = sources.subtract(sources.lexmin());
  // Data that varies along some axes but lives off the reader's coordinate on the others
  // cannot be gathered either: name such a reader when there is one.
  const Mesh& mesh = c.mesh();
  std::vector<std::pair<unsigned, unsigned>> own;
  std::vector<std::string> varying, others;
  for (unsigned a = 0; a < mesh.axes.size(); ++a) {
    if (SourceAxisSingle(c, t, a)) {
      own.emplace_back(a, a);
      others.push_back(mesh.axes[a].name);
    } else {
      varying.push_back(mesh.axes[a].name);
    }
  }
  const isl::set elsewhere =
      own.empty() ? isl::set::empty(extra.domain().space())
                  : sources
                        .subtract(Equalities(SetSpace(c.ctx(), "P", sources.domain_tuple_dim()),
                                             SetSpace(c.ctx(), "Mesh", mesh.axes.size()), own))
                        .domain();
  const bool foreign = !elsewhere.is_empty();
  if (foreign) extra = extra.intersect_domain(elsewhere);
  const std::vector<int64_t> w = SamplePoint(extra.domain().lexmin());
  const int depth = TransferPrefix(c, t);
  const size_t na = c.mesh().axes.size();
  const isl::set ranks = PointSet(c.ctx(), "P", w, 0, w.size()).apply(sources);
  const isl::set data = PointSet(c.ctx(), "P", w, 0, w.size()).apply(TransferElements(c, t));
  const std::vector<int64_t> lo = SamplePoint(data.lexmin()), hi = SamplePoint(data.lexmax());
  std::vector<std::string> range;
  for (size_t d = 0; d < lo.size(); ++d) range.push_back(absl::StrCat(lo[d], ":", hi[d] + 1));
  const std::string iteration = IterationText(c, w, na, depth);
  out.push_back(
      {std::string(kMultiSourceTransfer),
       absl::StrCat("communicate(", base::Excerpt(t.tensor), ", ", base::Excerpt(t.loop), "): at ",
                    iteration.empty() ? "" : iteration + " ", "rank ", RankText(c.mesh(), w),
                    " needs ", base::Excerpt(t.tensor), "[", absl::StrJoin(range, ", "),
                    "], which lives on several ranks, e.g. ",
                    RankText(c.mesh(), SamplePoint(ranks.lexmin())), " and ",
                    RankText(c.mesh(), SamplePoint(ranks.lexmax())),
                    foreign ? absl::StrCat("; an all-gather along ", absl::StrJoin(varying, ", "),
                                           " fetches only from ranks with the reader's own ",
                                           absl::StrJoin(others, ", "),
                                           ", so it takes an all-to-all exchange")
                            : "; it takes an all-to-all exchange")});
}

}  // namespace

namespace {

// Bytes of the box around the data of transfer `t` in one instance (one half of a
// prefetched transfer's buffer).
int64_t TransferBufferBytes(const Computation& c, const Communication& t) {
  const isl::fixed_box box = TransferElements(c, t).range_simple_fixed_box_hull();
  int64_t elems = Product(c.problem().Shape(t.tensor));
  if (box.is_valid()) {
    const isl::multi_val size = box.size();
    elems = 1;
    for (unsigned d = 0; d < size.size(); ++d) elems *= size.at(d).num_si();
  }
  return DTypeBytes(c.problem().dtype) * elems;
}

// A prefetched communicate needs a next step to overlap: its loop must be serial with more
// than one iteration. Lowering then places the transfer (or reduction) directly in the
// body of that loop's For, which is what the runtime's double buffering turns over.
void CheckOverlap(const Computation& c, const Communication& t, std::vector<Rejection>& out,
                  bool messages, bool closed_forms) {
  if (t.prefetch == 0) return;
  const Loop& l = c.loops()[c.LoopIndex(t.loop)];
  if (c.problem().IsOutput(t.tensor) && RingOf(c, t, closed_forms).has_value()) {
    if (!messages) return out.push_back({std::string(kNothingToOverlap), ""});
    const std::string tensor = base::Excerpt(t.tensor);
    return out.push_back(
        {std::string(kNothingToOverlap),
         absl::StrCat("communicate(", tensor, ", ", base::Excerpt(t.loop),
                      ", prefetch=1): the partial sums of ", tensor,
                      " pass around a ring, and each step adds into what the step before "
                      "sent, so there is no next step to overlap the reduction with; drop "
                      "prefetch")});
  }
  if (l.kind == LoopKind::kSerial && l.extent > 1) return;
  if (!messages) return out.push_back({std::string(kNothingToOverlap), ""});
  const std::string loop = base::Excerpt(t.loop);
  const std::string what = c.problem().IsOutput(t.tensor) ? "reduction" : "transfer";
  std::string message = absl::StrCat("communicate(", base::Excerpt(t.tensor), ", ", loop,
                                     ", prefetch=1): loop ", loop);
  if (l.kind == LoopKind::kTensorized) {
    absl::StrAppend(&message, " is the kernel's outermost loop, so one ", what,
                    " serves the whole kernel call and there is no next step to overlap it "
                    "with; prefetch at a serial loop of several iterations");
  } else {
    absl::StrAppend(&message, " has one iteration, so there is no next step to overlap the ", what,
                    " with; prefetch at a loop of several iterations");
  }
  out.push_back({std::string(kNothingToOverlap), std::move(message)});
}

// What prefetching adds to the checks of `tensor` (`out`, computed as if not prefetched):
// whether there is anything to overlap, and the buffer's second half.
void ApplyPrefetch(const Computation& c, const std::string& tensor, bool messages,
                   bool closed_forms, LegalityCache::TensorChecks* out) {
  const Communication* t = c.TransferOf(tensor);
  if (t == nullptr || t->prefetch == 0) return;
  CheckOverlap(c, *t, out->access, messages, closed_forms);
  if (out->buffer_bytes > 0) out->buffer_bytes *= 2;
}

// The checks of how `tensor` is used (everything but ownership) into `out`.
void CheckUse(const Computation& c, const std::string& tensor, bool messages, bool closed_forms,
              LegalityCache::TensorChecks* out) {
  out->buffer_bytes = c.TransferOf(tensor) != nullptr ? -1 : 0;
  const Problem& p = c.problem();
  if (const Communication* tr = c.TransferOf(tensor)) {
    if (p.IsOutput(tensor)) {
      CheckReduction(c, *tr, out->access, messages, closed_forms);
    } else {
      CheckSingleSource(c, *tr, out->access, messages);
    }
    if (c.mesh().mem_per_rank_bytes.has_value()) out->buffer_bytes = TransferBufferBytes(c, *tr);
    return;
  }
  CheckLocal(c, tensor, out->access, messages);
  if (p.IsOutput(tensor) && out->access.empty())
    CheckOutputComplete(c, tensor, {}, out->access, messages);
}

// kOverhang: the loops over an index of a dim of `tensor` reach past the blocks of its
// sharding there (the first block's size times its parts: where its blocks end).
void CheckOverhang(const Computation& c, const std::string& tensor, std::vector<Rejection>& out) {
  const Sharding* s = c.sharding(tensor);
  if (s == nullptr) return;
  const Problem& p = c.problem();
  const std::vector<std::string>& dims = p.FirstAccess(tensor)->indices;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (s->blocks[d].empty()) continue;
    const auto& [block, target] = s->blocks[d].front();
    const auto [lo, hi] = target.Range(c.mesh());
    const int64_t end = block * (target.modulus != 0 ? target.modulus : hi - lo + 1);
    std::set<std::string> indices;
    for (size_t i = 0; i <= p.operands.size(); ++i) {
      const TensorAccess& a = i == 0 ? p.output : p.operands[i - 1];
      if (a.tensor == tensor) indices.insert(a.indices[d]);
    }
    for (const std::string& index : indices) {
      if (c.Reach(index) <= end) continue;
      out.push_back(
          {std::string(kOverhang),
           absl::StrCat("the loops over ", index, " reach ", c.Reach(index), ", past the ", end,
                        " elements the blocks of ", tensor, "'s dim ", dims[d], " cover")});
    }
  }
}

}  // namespace

LegalityCache::TensorChecks CheckTensor(const Computation& c, const std::string& tensor,
                                        bool messages) {
  LegalityCache::TensorChecks out;
  CheckOwnership(c, tensor, out.ownership, messages);
  CheckOverhang(c, tensor, out.ownership);
  CheckUse(c, tensor, messages, /*closed_forms=*/true, &out);
  ApplyPrefetch(c, tensor, messages, /*closed_forms=*/true, &out);
  return out;
}

namespace {

// LegalityKey without the transfer's prefetch.
std::string PlainLegalityKey(const Computation& c, const std::string& tensor) {
  const Communication* t = c.TransferOf(tensor);
  const int depth = t != nullptr ? TransferPrefix(c, *t) : 0;
  std::string key = c.TensorKey(tensor);
  const std::vector<Loop>& loops = c.loops();
  for (size_t j = 0; j < loops.size(); ++j) {
    const Loop& l = loops[j];
    if (l.kind != LoopKind::kDistributed && static_cast<int>(j) >= depth) continue;
    absl::StrAppend(&key, ";", j, ":", l.name, ":", l.extent, ":", static_cast<int>(l.kind), ":",
                    l.axis, ":", l.origin, ":", l.stride, ":", c.OutermostOfIndex(j), ":",
                    absl::StrJoin(l.rotate, ","));
  }
  // How far the loops over the tensor's indices reach (the overhang rule).
  for (const std::string& index : c.problem().FirstAccess(tensor)->indices)
    absl::StrAppend(&key, ";reach ", index, "=", c.Reach(index));
  return key;
}

}  // namespace

std::string LegalityKey(const Computation& c, const std::string& tensor) {
  std::string key = PlainLegalityKey(c, tensor);
  const Communication* t = c.TransferOf(tensor);
  if (t != nullptr && t->prefetch != 0) absl::StrAppend(&key, "|prefetch=", t->prefetch);
  return key;
}

const LegalityCache::TensorChecks& LegalityCache::Get(const Computation& c,
                                                      const std::string& tensor) {
  std::string key = LegalityKey(c, tensor);
  auto it = checks_.find(key);
  if (it != checks_.end()) return it->second;
  const TensorChecks& plain = GetPlain(c, tensor);
  const Communication* t = c.TransferOf(tensor);
  if (t == nullptr || t->prefetch == 0) return plain;
  // A prefetched transfer: the checks of the same transfer without prefetch, plus what
  // prefetching adds (no isl work).
  TensorChecks checks = plain;
  ApplyPrefetch(c, tensor, messages_, closed_forms_, &checks);
  return checks_.emplace(std::move(key), std::move(checks)).first->second;
}

const LegalityCache::TensorChecks& LegalityCache::GetPlain(const Computation& c,
                                                           const std::string& tensor) {
  std::string key = PlainLegalityKey(c, tensor);
  auto it = checks_.find(key);
  if (it != checks_.end()) return it->second;
  // Ownership depends on the layout alone: shared by every schedule with that layout.
  std::string layout = tensor;
  if (const Sharding* s = c.sharding(tensor)) {
    for (const ShardTarget& t : s->targets)
      absl::StrAppend(&layout, " ", t.dim, "@", t.target.ToString());
  }
  auto own = ownership_.find(layout);
  if (own == ownership_.end()) {
    std::optional<std::vector<Rejection>> rejections;
    if (closed_forms_) rejections = ClosedFormOwnership(c, tensor);
    if (!rejections.has_value()) {
      rejections.emplace();
      CheckOwnership(c, tensor, *rejections, messages_);
    }
    own = ownership_.emplace(std::move(layout), std::move(*rejections)).first;
  }
  TensorChecks checks;
  checks.ownership = own->second;
  CheckOverhang(c, tensor, checks.ownership);  // arithmetic on the loops' reach (in the key)
  std::optional<std::vector<Rejection>> access;
  if (closed_forms_) access = ClosedFormAccess(c, tensor);
  if (access.has_value()) {
    ++closed_form_checks_;
    checks.access = std::move(*access);
    checks.buffer_bytes = c.TransferOf(tensor) != nullptr ? -1 : 0;  // as CheckUse, no budget
  } else {
    ++isl_checks_;
    CheckUse(c, tensor, messages_, closed_forms_, &checks);
  }
  return checks_.emplace(std::move(key), std::move(checks)).first->second;
}

Footprint ComputeFootprint(const Computation& c, LegalityCache* cache) {
  Footprint f;
  const int64_t bytes = DTypeBytes(c.problem().dtype);
  for (const std::string& t : c.problem().Tensors())
    f.shard_bytes += bytes * Product(c.StorageShape(t));
  for (const Communication& t : c.transfers()) {
    const int64_t known = cache != nullptr ? cache->Get(c, t.tensor).buffer_bytes : -1;
    f.buffer_bytes += known >= 0 ? known : TransferBufferBytes(c, t) * (1 + t.prefetch);
  }
  return f;
}

std::vector<Rejection> CheckLegality(const Computation& c, LegalityCache* cache) {
  std::vector<Rejection> out;
  std::vector<LegalityCache::TensorChecks> owned;  // without a cache
  std::vector<const LegalityCache::TensorChecks*> checks;
  for (const std::string& t : c.problem().Tensors()) {
    if (cache != nullptr) {
      checks.push_back(&cache->Get(c, t));
    } else {
      owned.push_back(CheckTensor(c, t, /*messages=*/true));
    }
  }
  for (const LegalityCache::TensorChecks& o : owned) checks.push_back(&o);
  for (const auto* k : checks) out.insert(out.end(), k->ownership.begin(), k->ownership.end());
  for (const auto* k : checks) {
    for (const Rejection& r : k->access) {
      if (r.code != kMultiSourceTransfer) out.push_back(r);
    }
  }
  if (c.mesh().mem_per_rank_bytes.has_value()) {
    const Footprint f = ComputeFootprint(c, cache);
    const int64_t budget = *c.mesh().mem_per_rank_bytes;
    if (f.total() > budget) {
      out.push_back({std::string(kOverMemoryBudget),
                     absl::StrCat("per-rank footprint ", base::FormatBytes(f.total()), " (shards ",
                                  base::FormatBytes(f.shard_bytes), ", transfer buffers ",
                                  base::FormatBytes(f.buffer_bytes),
                                  ") exceeds the memory budget of ", base::FormatBytes(budget))});
    }
  }
  return out;
}

}  // namespace meshtune::ir
