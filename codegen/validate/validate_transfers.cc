// The validator's checks of one transfer: its runtime call, what each call reads, and what
// it leaves in the transfer's buffer.
#include "codegen/validate/validator.h"
#include "ir/isl_util.h"

namespace meshtune::codegen::validation {

// What the checks of one transfer share. In `f`, [r, id, v, b, s, e]: an instance of the
// transfer on rank r, a position b of its buffer, and the rank s and element e copied
// there; in `gf`, [r, id, v, g]: an instance and a member g of its group.
struct Validator::TransferScope {
  TransferScope(const Validator& v, const Node& node, const RuntimeCall& fetch)
      : n(node),
        t(std::get<Transfer>(node.stmt->node)),
        call(fetch),
        source(fetch.source),
        offset(fetch.op == RuntimeCall::Op::kAllToAll || fetch.op == RuntimeCall::Op::kPointToPoint
                   ? fetch.offset_at
                   : fetch.offset),
        axes(fetch.axes),
        shape(*v.BufferShape(t.buffer)),
        info(*v.p_.Tensor(t.tensor)),
        na(v.na_),
        ni(v.InstDims()),
        nd(shape.size()),
        b0(ni),
        s0(b0 + nd),
        e0(s0 + na),
        f(v.ctx_, e0 + nd),
        r(v.Coords(f, 0)),
        b(f.Vars(b0, nd)),
        s(f.Vars(s0, na)),
        e(f.Vars(e0, nd)),
        loops(v.LoopValues(f, 0, n)),
        base(v.InstSet(f, 0, n).intersect(f.InBox(b, shape))),
        gf(v.ctx_, ni + na),
        gr(v.Coords(gf, 0)),
        gg(gf.Vars(ni, na)),
        gloops(v.LoopValues(gf, 0, n)),
        g_base(v.InstSet(gf, 0, n)) {}

  // A witness [r, id, v, b] in `v`.
  Point WitnessOf(const isl::set& v) const { return Witness(ProjectOut(v, s0, na + nd)); }

  const Node& n;
  const Transfer& t;
  // The runtime call that fills the buffer (codegen/pattern.h: what the executor runs),
  // and what it reads: the source rank and the box's offset as its op takes them (in the
  // source's shard, or global for a gather from the holders), and the group's axes.
  const RuntimeCall& call;
  const std::vector<Expr>& source;
  const std::vector<Expr>& offset;
  const std::vector<int>& axes;
  const std::vector<int64_t>& shape;  // the buffer's
  const TensorInfo& info;
  const unsigned na, ni, nd, b0, s0, e0;
  const Frame f;
  const Affs r, b, s, e, loops;
  const isl::set base;  // every instance and buffer position
  Affs start_s;         // the first element of s's shard
  // s is in the mesh and stores index e in its shard (its storage, local_shape: past the
  // tensor's shape that is padding, which a whole-box copy moves as it is and the validator
  // names by its index past the shape; pieces from holders are clipped to the shape).
  isl::set s_holds_e;
  const Frame gf;
  const Affs gr, gg, gloops;
  const isl::set g_base;
};

absl::Status Validator::CheckTransfer(const Node& n) {
  // What runs is the pattern's step (codegen/pattern.h): its runtime calls are modeled, by
  // what each call does, never by the pattern's name.
  const Transfer& t = std::get<Transfer>(n.stmt->node);
  const StepCalls steps = PatternOf(t.pattern.kind).Fetch(t);
  using Op = RuntimeCall::Op;
  const StepShape shape = ShapeOf(steps);
  const bool ring = shape == StepShape::kRing;
  const RuntimeCall* data = DataCall(steps);
  if (data == nullptr || shape == StepShape::kReduceOwn || shape == StepShape::kReduceGroup ||
      shape == StepShape::kReduceRing) {
    return absl::UnimplementedError(absl::StrCat(
        "validation models a fetch of one runtime call, or a ring of shift steps after a "
        "point-to-point fetch; ",
        t.pattern.ToString(), " of ", t.tensor, " is neither"));
  }
  TransferScope x(*this, n, *data);
  MT_ASSIGN_OR_RETURN(x.start_s, BlockStart(x.t.tensor, x.f, x.s));
  Affs local_e;
  for (size_t d = 0; d < x.nd; ++d) local_e.push_back(x.e[d].sub(x.start_s[d]));
  x.s_holds_e = InMesh(x.f, x.s).intersect(x.f.InBox(local_e, x.info.local_shape));

  isl::set content = x.f.None();
  if (ring) {
    MT_ASSIGN_OR_RETURN(content, ShiftContent(x, steps.loop, steps.then[0]));
  } else {
    switch (x.call.op) {
      case Op::kLocal: {
        MT_ASSIGN_OR_RETURN(content, LocalContent(x));
        break;
      }
      case Op::kBroadcast: {
        MT_ASSIGN_OR_RETURN(content, BroadcastContent(x));
        break;
      }
      case Op::kAllGather: {
        MT_ASSIGN_OR_RETURN(content, AllGatherContent(x));
        break;
      }
      case Op::kAllToAll: {
        MT_ASSIGN_OR_RETURN(content, AllToAllContent(x));
        break;
      }
      case Op::kPointToPoint: {
        MT_ASSIGN_OR_RETURN(content, FetchContent(x, x.base));
        break;
      }
      case Op::kShiftStep:
      case Op::kReduceInto:
        return absl::UnimplementedError(
            absl::StrCat("validation models no fetch by a lone shift step or reduction; ",
                         t.pattern.ToString(), " of ", t.tensor));
    }
  }
  contents_[n.id] = Split(content.coalesce(), x.b0 + x.nd);
  return absl::OkStatus();
}

Point Validator::SourceAt(const TransferScope& x, const Point& w) const {
  return Eval(x.source, RankOf(w, 0), &x.n, LoopsOf(w, 0));
}

absl::Status Validator::CheckCopy(const TransferScope& x, const isl::set& exec, const Affs& loc,
                                  const std::function<Point(const Point&)>& from_at,
                                  const std::vector<Expr>& offset,
                                  const std::function<Point(const Point&)>& offset_rank) {
  const isl::set outside = exec.intersect(x.f.OutOfBox(loc, x.info.local_shape));
  if (outside.is_empty()) return absl::OkStatus();
  const Point w = x.WitnessOf(outside);
  const Point src = from_at(w), st = BlockStartAt(x.t.tensor, src);
  Point elem = Eval(offset, offset_rank(w), &x.n, LoopsOf(w, 0));
  for (size_t d = 0; d < x.nd; ++d) elem[d] += st[d] + w[x.b0 + d];
  return Unsound(x.t.tensor, x.t.loop, RankOf(w, 0),
                 absl::StrCat(InstanceAt(w, 0), " reads ", Elem(x.t.tensor, elem), " from ",
                              RankText(src), ", which does not hold it (", x.t.pattern.ToString(),
                              " into ", x.t.buffer, ")"));
}

absl::StatusOr<isl::set> Validator::PointToPoint(const TransferScope& x, const Affs& who,
                                                 const Affs& when, const isl::set& exec) const {
  const Env env = MakeEnv(who, &x.n, when);
  MT_ASSIGN_OR_RETURN(const Affs src, ToPwAffs(x.source, x.f, env));
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, x.f, env));
  return exec.intersect(x.f.Equal(x.s, src))
      .intersect(x.f.Equal(x.e, Plus(x.start_s, Plus(off, x.b))))
      .intersect(x.s_holds_e);
}

absl::Status Validator::CheckPointToPoint(const TransferScope& x, const isl::set& exec) {
  const Env env = MakeEnv(x.r, &x.n, x.loops);
  MT_ASSIGN_OR_RETURN(const Affs src, ToPwAffs(x.source, x.f, env));
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, x.f, env));
  const isl::set nowhere = exec.intersect(x.f.OutOfBox(src, p_.axis_sizes));
  if (!nowhere.is_empty()) {
    const Point w = x.WitnessOf(nowhere);
    return Unsound(x.t.tensor, x.t.loop, RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " receives from ", RankText(SourceAt(x, w)),
                                ", which is outside the mesh"));
  }
  auto source_at = [&](const Point& w) { return SourceAt(x, w); };
  auto own_rank = [&](const Point& w) { return RankOf(w, 0); };
  return CheckCopy(x, exec, Plus(off, x.b), source_at, x.offset, own_rank);
}

absl::StatusOr<isl::set> Validator::FetchContent(const TransferScope& x, const isl::set& exec) {
  MT_RETURN_IF_ERROR(CheckPointToPoint(x, exec));
  return PointToPoint(x, x.r, x.loops, exec);
}

absl::StatusOr<isl::set> Validator::LocalContent(const TransferScope& x) {
  auto own_rank = [&](const Point& w) { return RankOf(w, 0); };
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, x.f, MakeEnv(x.r, &x.n, x.loops)));
  MT_RETURN_IF_ERROR(CheckCopy(x, x.base, Plus(off, x.b), own_rank, x.offset, own_rank));
  MT_ASSIGN_OR_RETURN(const Affs start_r, BlockStart(x.t.tensor, x.f, x.r));
  return x.base.intersect(x.f.Equal(x.s, x.r))
      .intersect(x.f.Equal(x.e, Plus(start_r, Plus(off, x.b))))
      .intersect(x.s_holds_e);
}

absl::StatusOr<isl::set> Validator::BroadcastContent(const TransferScope& x) {
  const Transfer& t = x.t;
  const Node& n = x.n;
  const Frame& f = x.f;
  const std::vector<int>& axes = x.axes;
  auto source_at = [&](const Point& w) { return SourceAt(x, w); };
  MT_ASSIGN_OR_RETURN(const Affs root, ToPwAffs(x.source, f, MakeEnv(x.r, &n, x.loops)));
  const isl::set nowhere = x.base.intersect(f.OutOfBox(root, p_.axis_sizes));
  if (!nowhere.is_empty()) {
    const Point w = x.WitnessOf(nowhere);
    return Unsound(t.tensor, t.loop, RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " takes root ", RankText(source_at(w)),
                                ", which is outside the mesh"));
  }
  isl::set outside = f.None();
  for (size_t a = 0; a < x.na; ++a) {
    if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end()) {
      outside = outside.unite(x.base.intersect(root[a].ne_set(x.r[a])));
    }
  }
  if (!outside.is_empty()) {
    const Point w = x.WitnessOf(outside);
    return Unsound(t.tensor, t.loop, RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " takes root ", RankText(source_at(w)),
                                ", which is not in its ", t.pattern.ToString(), " group"));
  }
  MT_ASSIGN_OR_RETURN(const Affs root_r, ToPwAffs(x.source, x.gf, MakeEnv(x.gr, &n, x.gloops)));
  MT_ASSIGN_OR_RETURN(const Affs root_g, ToPwAffs(x.source, x.gf, MakeEnv(x.gg, &n, x.gloops)));
  const isl::set disagree =
      x.g_base.intersect(Group(x.gf, x.gr, x.gg, axes)).intersect(x.gf.Differ(root_r, root_g));
  if (!disagree.is_empty()) {
    const Point w = Witness(disagree), g = Slice(w, x.ni, x.na);
    return Unsound(
        t.tensor, t.loop, RankOf(w, 0),
        absl::StrCat(InstanceAt(w, 0), " takes root ", RankText(source_at(w)), " but ", RankText(g),
                     " of its group takes ", RankText(Eval(x.source, g, &n, LoopsOf(w, 0)))));
  }
  // The root copies the box at its own offset.
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, f, MakeEnv(root, &n, x.loops)));
  MT_RETURN_IF_ERROR(CheckCopy(x, x.base, Plus(off, x.b), source_at, x.offset, source_at));
  return x.base.intersect(f.Equal(x.s, root))
      .intersect(f.Equal(x.e, Plus(x.start_s, Plus(off, x.b))))
      .intersect(x.s_holds_e);
}

absl::StatusOr<isl::set> Validator::AllGatherContent(const TransferScope& x) {
  const Transfer& t = x.t;
  const Node& n = x.n;
  const std::vector<int>& axes = x.axes;
  MT_ASSIGN_OR_RETURN(const Affs off_r, ToPwAffs(x.offset, x.gf, MakeEnv(x.gr, &n, x.gloops)));
  MT_ASSIGN_OR_RETURN(const Affs off_g, ToPwAffs(x.offset, x.gf, MakeEnv(x.gg, &n, x.gloops)));
  const isl::set disagree =
      x.g_base.intersect(Group(x.gf, x.gr, x.gg, axes)).intersect(x.gf.Differ(off_r, off_g));
  if (!disagree.is_empty()) {
    const Point w = Witness(disagree), g = Slice(w, x.ni, x.na);
    return Unsound(
        t.tensor, t.loop, RankOf(w, 0),
        absl::StrCat(InstanceAt(w, 0), " gathers ",
                     Elem(t.tensor, Eval(x.offset, RankOf(w, 0), &n, LoopsOf(w, 0))), " +: [",
                     Join(x.shape), "] but ", RankText(g), " of its group gathers ",
                     Elem(t.tensor, Eval(x.offset, g, &n, LoopsOf(w, 0)))));
  }
  // Each position holds its element when some member of the group holds it; the pieces are
  // clipped to the tensor's shape (a holder's padding is no element): a position past it is
  // left as it was.
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, x.f, MakeEnv(x.r, &n, x.loops)));
  return x.base.intersect(x.f.Equal(x.e, Plus(off, x.b)))
      .intersect(Group(x.f, x.r, x.s, axes))
      .intersect(x.s_holds_e)
      .intersect(x.f.InBox(x.e, x.info.shape));
}

// Each position of the box at the rank's own global offset holds its element when some rank
// of the mesh holds it (every rank's pieces come from holders of the same input), clipped to
// the tensor's shape as an AllGather's.
absl::StatusOr<isl::set> Validator::AllToAllContent(const TransferScope& x) {
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, x.f, MakeEnv(x.r, &x.n, x.loops)));
  return x.base.intersect(x.f.Equal(x.e, Plus(off, x.b)))
      .intersect(x.s_holds_e)
      .intersect(x.f.InBox(x.e, x.info.shape));
}

absl::StatusOr<isl::set> Validator::ShiftContent(const TransferScope& x,
                                                 const std::string& time_loop,
                                                 const RuntimeCall& turn) {
  const Transfer& t = x.t;
  const Node& n = x.n;
  const Frame& f = x.f;
  std::vector<size_t> time;
  for (size_t k = 0; k < n.depth(); ++k) {
    if (n.loops[k]->var == time_loop) time.push_back(k);
  }
  if (time.empty())
    return FetchContent(x, x.base);  // the ring never turns: a point-to-point fetch every time
  const size_t k = time[0];
  if (time.size() > 1 || k + 1 != n.depth() || n.loops[k]->lo.value() != 0) {
    return absl::UnimplementedError(
        absl::StrCat("validation models a Shift whose time loop is the innermost loop around it "
                     "and starts at 0; ",
                     t.tensor, "'s turns along ", time_loop));
  }
  const std::vector<const Node*> others =
      NodesWith<Transfer>([&](const Transfer& y) { return y.buffer == t.buffer; });
  const std::vector<const Node*> zeros =
      NodesWith<Alloc>([&](const Alloc& z) { return z.zero && z.buffer == t.buffer; });
  if (others.size() != 1 || !zeros.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("validation models a Shift whose buffer nothing else writes; ", t.buffer,
                     " has other writers"));
  }
  const isl::pw_aff v = x.loops[k];
  const isl::set start = x.base.intersect(v.eq_set(f.Cst(0))),
                 turned = x.base.intersect(v.ne_set(f.Cst(0)));
  MT_ASSIGN_OR_RETURN(const isl::set fetched, FetchContent(x, start));
  // At time v the buffer holds what the rank v * shift further along the axis fetched
  // at time 0 (each step receives from the neighbour at +shift).
  const int axis = turn.axis;
  Affs who = x.r, when = x.loops;
  who[axis] = x.r[axis].add(v.scale(turn.shift)).mod(p_.axis_sizes[axis]);
  when[k] = f.Cst(0);
  MT_ASSIGN_OR_RETURN(const isl::set carried, PointToPoint(x, who, when, turned));
  return fetched.unite(carried);
}

}  // namespace meshtune::codegen::validation
