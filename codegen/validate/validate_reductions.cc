// The validator's checks of one reduction: how it is modeled (ReduceModel), that a
// collective's group agrees on its box, and a ring reduction's place in the program.
#include "codegen/validate/validator.h"

namespace meshtune::codegen::validation {

absl::Status Validator::CheckRing(const Node& n) {
  const Reduce& red = std::get<Reduce>(n.stmt->node);
  auto unsound = [&](const std::string& why) {
    return Unsound(red.tensor, red.loop, {}, absl::StrCat("the ring reduction ", why));
  };
  if (red.pattern.axes.size() != 1 || (red.pattern.shift != 1 && red.pattern.shift != -1))
    return unsound("must move by +1 or -1 along one axis");
  if (red.prefetch != 0) return unsound("is prefetched; each step adds into the step before's");
  const size_t d = n.depth();
  if (d == 0 || n.loops.back()->var != red.loop) {
    return unsound(absl::StrCat("is not in the body of loop ", red.loop,
                                "'s For: no step of its loop drives the ring"));
  }
  const std::vector<const Node*> zeros =
      NodesWith<Alloc>([&](const Alloc& a) { return a.zero && a.buffer == red.buffer; });
  if (zeros.size() != 1 || zeros[0]->depth() != d - 1 || CommonDepth(*zeros[0], n) != d - 1 ||
      zeros[0]->order[d - 1] > n.order[d - 1]) {
    return unsound(absl::StrCat("needs ", red.buffer, " zeroed once, just before loop ", red.loop,
                                "; the sums ride the ring through all its steps"));
  }
  const size_t others =
      NodesWith<Reduce>([&](const Reduce& r) { return r.buffer == red.buffer; }).size() - 1 +
      NodesWith<Transfer>([&](const Transfer& t) { return t.buffer == red.buffer; }).size();
  if (others > 0) return unsound(absl::StrCat("shares ", red.buffer, " with another transfer"));
  for (const Node* k :
       NodesWith<Compute>([&](const Compute& k) { return k.out.buffer == red.buffer; })) {
    if (CommonDepth(*k, n) != d || k->order[d] > n.order[d]) {
      return unsound(absl::StrCat("must follow every kernel call into ", red.buffer,
                                  " in the body of loop ", red.loop));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ReduceModel> ModelOf(const Reduce& red) {
  const StepCalls steps = PatternOf(red.pattern.kind).Reduce(red);
  ReduceModel m;
  switch (ShapeOf(steps)) {
    case StepShape::kReduceRing:
      m.kind = ReduceModel::Kind::kRing;
      return m;
    case StepShape::kReduceOwn:
      return m;
    case StepShape::kReduceGroup:
      m.kind = ReduceModel::Kind::kGroup;
      m.all = steps.then[0].reduce_kind == "AllReduce";
      m.axes = steps.then[0].axes;
      return m;
    default:
      return absl::UnimplementedError(absl::StrCat(
          "validation models a reduction into the rank's own shard, a Reduce, ReduceScatter or "
          "AllReduce over a group, or a ring; ",
          red.pattern.ToString(), " of ", red.tensor, " is none of them"));
  }
}

absl::Status Validator::CheckReduce(const Node& n) {
  const Reduce& red = std::get<Reduce>(n.stmt->node);
  MT_ASSIGN_OR_RETURN(const ReduceModel model, ModelOf(red));
  if (model.kind == ReduceModel::Kind::kRing) return CheckRing(n);
  if (model.kind == ReduceModel::Kind::kOwn) {
    return absl::OkStatus();  // each rank adds its own partial results: nothing to agree on
  }
  // Collectives: every member of a group reduces the same box.
  const unsigned ni = InstDims();
  const Frame gf(ctx_, ni + na_);
  const Affs gr = Coords(gf, 0), gg = gf.Vars(ni, na_), loops = LoopValues(gf, 0, n);
  MT_ASSIGN_OR_RETURN(const Affs off_r, ToPwAffs(red.global.offset, gf, MakeEnv(gr, &n, loops)));
  MT_ASSIGN_OR_RETURN(const Affs off_g, ToPwAffs(red.global.offset, gf, MakeEnv(gg, &n, loops)));
  const isl::set disagree =
      InstSet(gf, 0, n).intersect(Group(gf, gr, gg, model.axes)).intersect(gf.Differ(off_r, off_g));
  if (!disagree.is_empty()) {
    const Point w = Witness(disagree), r = RankOf(w, 0), g = Slice(w, ni, na_), v = LoopsOf(w, 0);
    return Unsound(red.tensor, red.loop, r,
                   absl::StrCat(InstanceAt(w, 0), " reduces into ",
                                Elem(red.tensor, Eval(red.global.offset, r, &n, v)), " +: [",
                                Join(*BufferShape(red.buffer)), "] but ", RankText(g), " of its ",
                                red.pattern.ToString(), " group into ",
                                Elem(red.tensor, Eval(red.global.offset, g, &n, v))));
  }
  return absl::OkStatus();
}

}  // namespace meshtune::codegen::validation
