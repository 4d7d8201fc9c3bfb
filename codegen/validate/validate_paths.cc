// The validator's check that every holder of each output element receives every statement
// instance of that element exactly once: the paths of contributions and their explanations.
#include <isl/set.h>

#include "codegen/validate/validator.h"
#include "ir/isl_util.h"

namespace meshtune::codegen::validation {

// Frames of the paths a contribution takes. A path: a kernel instance [r, id_K, v_K, p]
// and the reduction instance [id_R, v_R] that carries it to a holder (id_R = -1 for the
// kernel's own writes into the rank's shard). In `f`, [path, q, o]: the holder q and the
// element o the path adds to.
struct Validator::PathScope {
  explicit PathScope(const Validator& v)
      : out(v.prob_.output.tensor),
        na(v.na_),
        ni(v.InstDims()),
        np(v.np_),
        nd(v.prob_.Shape(out).size()),
        ns(v.prob_.indices.size()),
        nk(ni + np),
        r0(nk),
        npath(nk + 1 + v.depth_),
        q0(npath),
        o0(q0 + na),
        path_frame(v.ctx_, npath),
        kf(v.ctx_, nk),
        f(v.ctx_, o0 + nd),
        r(v.Coords(f, 0)),
        q(f.Vars(q0, na)),
        o(f.Vars(o0, nd)) {}

  const std::string& out;
  const unsigned na, ni, np, nd, ns, nk, r0, npath, q0, o0;
  const Frame path_frame;  // [path]
  const Frame kf;          // [r, id_K, v_K, p]
  const Frame f;           // [path, q, o]
  const Affs r, q, o;
};

// Operand i's element on each path: path -> [e] (from the kernels' reads
// [r, id, v, p] -> [s, e]), each built on first use.
class PathReads {
 public:
  PathReads(const std::map<int64_t, std::vector<isl::map>>& reads, isl::map path_to_k, unsigned na)
      : reads_(reads), path_to_k_(std::move(path_to_k)), na_(na) {}

  const isl::map& Of(size_t i) {
    auto it = built_.find(i);
    if (it != built_.end()) return it->second;
    std::optional<isl::map> read;
    for (const auto& [id, maps] : reads_) {
      const isl::map e = ir::ProjectOutRange(maps[i], 0, na_);
      read = read.has_value() ? read->unite(e) : e;
    }
    return built_.emplace(i, path_to_k_.apply_range(read->coalesce()).coalesce()).first->second;
  }

 private:
  const std::map<int64_t, std::vector<isl::map>>& reads_;
  const isl::map path_to_k_;
  const unsigned na_;
  std::map<size_t, isl::map> built_;
};

absl::Status Validator::CheckInstances() {
  const PathScope x(*this);
  std::vector<std::string> out_loops;  // the loops of the reductions that carry the output
  MT_ASSIGN_OR_RETURN(const isl::set paths, Paths(x, &out_loops));
  const isl::map reach = Split(paths.coalesce(), x.npath);  // path -> [q, o]
  // The elements each path multiplies: [r, id, v, p] -> [e_k], pulled back to paths.
  PathReads reads(reads_, Prefix(x.path_frame, x.kf, x.nk), x.na);
  MT_ASSIGN_OR_RETURN(const isl::map instance, InstanceOfPaths(x, reach, reads));
  MT_RETURN_IF_ERROR(CheckPathElements(x, reach, instance, reads));
  return CheckEachInstanceOnce(x, instance, out_loops);
}

absl::StatusOr<isl::set> Validator::Paths(const PathScope& x,
                                          std::vector<std::string>* out_loops) const {
  const Frame& f = x.f;
  isl::set paths = f.None();
  for (const Node& n : nodes_) {
    const auto* k = std::get_if<Compute>(&n.stmt->node);
    if (k == nullptr) continue;
    MT_ASSIGN_OR_RETURN(const isl::set kbase, Executed(f, 0, x.ni, n, *k));
    MT_ASSIGN_OR_RETURN(const Affs pos,
                        Positions(*k, k->out, f, x.r, n, LoopValues(f, 0, n), x.ni));
    if (k->out.buffer == k->out.tensor) {
      MT_ASSIGN_OR_RETURN(const Affs start, BlockStart(x.out, f, x.r));
      isl::set direct =
          kbase.intersect(f.Equal(x.q, x.r)).intersect(f.Equal(x.o, Plus(start, pos)));
      direct = direct.intersect(f.Var(x.r0).eq_set(f.Cst(-1)));
      for (size_t l = 0; l < depth_; ++l)
        direct = direct.intersect(f.Var(x.r0 + 1 + l).eq_set(f.Cst(0)));
      paths = paths.unite(direct);
      continue;
    }
    // Through a partial buffer: every reduction of it after the kernel instance and before
    // the buffer is zeroed again carries the contribution.
    const std::vector<const Node*> zeros =
        NodesWith<Alloc>([&](const Alloc& a) { return a.zero && a.buffer == k->out.buffer; });
    for (const Node* rn :
         NodesWith<Reduce>([&](const Reduce& r) { return r.buffer == k->out.buffer; })) {
      out_loops->push_back(std::get<Reduce>(rn->stmt->node).loop);
      MT_ASSIGN_OR_RETURN(const isl::set reduced, ReducedPaths(x, n, *rn, zeros, kbase, pos));
      paths = paths.unite(reduced);
    }
  }
  return paths;
}

absl::StatusOr<isl::set> Validator::ReducedPaths(const PathScope& x, const Node& n, const Node& rn,
                                                 const std::vector<const Node*>& zeros,
                                                 const isl::set& kbase, const Affs& pos) const {
  const Frame& f = x.f;
  const Reduce& red = std::get<Reduce>(rn.stmt->node);
  MT_ASSIGN_OR_RETURN(const ReduceModel model, ModelOf(red));
  if (model.kind == ReduceModel::Kind::kRing) return RingPaths(x, rn, kbase, pos);
  isl::map carries;
  const size_t dz = zeros.size() == 1 ? zeros[0]->depth() : 0;
  if (zeros.size() == 1 && CommonDepth(*zeros[0], rn) == dz && rn.depth() == dz &&
      CommonDepth(*zeros[0], n) == dz && zeros[0]->order[dz] < n.order[dz] &&
      n.order[dz] < rn.order[dz]) {
    // zero; ...kernel...; reduce in one loop body: the reduction of the same iteration.
    carries = SameIteration(n, rn);
  } else {
    carries = Before(n, rn);
    for (const Node* z : zeros)
      carries = carries.subtract(Before(n, *z).apply_range(Before(*z, rn)));
  }
  // [r, id_K, v_K, r', id_R, v_R] (r' = r) -> [r, id_K, v_K, p, id_R, v_R, q, o]
  isl::set carried = ProjectOut(Flatten(carries), x.ni, x.na);
  carried = InsertDims(InsertDims(carried, x.ni, x.np), x.npath, x.na + x.nd);
  const Affs rloops =
      LoopValues(f, x.r0 - x.na, rn);  // R's slot [r, id_R, v_R] starts na before id_R
  // AllReduce: each member adds the group's sum at its own offset; the others at the sender's.
  const Affs& who = model.all ? x.q : x.r;
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(red.global.offset, f, MakeEnv(who, &rn, rloops)));
  isl::set reach = carried.intersect(kbase).intersect(f.Equal(x.o, Plus(off, pos)));
  if (model.kind == ReduceModel::Kind::kGroup) {
    reach = reach.intersect(Group(f, x.r, x.q, model.axes));
  } else {
    reach = reach.intersect(f.Equal(x.q, x.r));
  }
  MT_ASSIGN_OR_RETURN(const isl::set held, Holds(x.out, f, x.q, x.o));
  return reach.intersect(held);
}

absl::StatusOr<isl::set> Validator::RingPaths(const PathScope& x, const Node& rn,
                                              const isl::set& kbase, const Affs& pos) const {
  // CheckRing holds: the kernel call runs in the body of the ring's For (loop d-1), after a
  // zero before it. A contribution at step v of rank r rides the ring to the rank s that
  // computes at the last step L, r moved by shift * (L - v) around the axis, and lands on
  // s, or with hop on s + shift: the reduction instance of the same outer iteration at L.
  const Frame& f = x.f;
  const Reduce& red = std::get<Reduce>(rn.stmt->node);
  const size_t d = rn.depth();
  const For& loop = *rn.loops.back();
  const int64_t last = loop.lo.value() + loop.extent - 1;
  const int axis = red.pattern.axes[0];
  const int64_t size = p_.axis_sizes[axis];
  isl::set reach = kbase.intersect(f.Var(x.r0).eq_set(f.Cst(rn.id)));
  for (size_t l = 0; l < depth_; ++l) {
    const isl::pw_aff v_r = f.Var(x.r0 + 1 + l);
    if (l + 1 < d) {
      reach = reach.intersect(v_r.eq_set(f.Var(x.na + 1 + l)));
    } else {
      reach = reach.intersect(v_r.eq_set(f.Cst(l + 1 == d ? last : 0)));
    }
  }
  const isl::pw_aff steps = f.Cst(last).sub(f.Var(x.na + d)).add(f.Cst(red.pattern.hop ? 1 : 0));
  for (size_t a = 0; a < x.na; ++a) {
    if (static_cast<int>(a) != axis) {
      reach = reach.intersect(x.q[a].eq_set(x.r[a]));
      continue;
    }
    const isl::pw_aff to =
        x.r[a].add(steps.scale(isl::val(ctx_, red.pattern.shift))).mod(isl::val(ctx_, size));
    reach = reach.intersect(x.q[a].eq_set(to));
  }
  // The box lands at the landing rank's offset (lowering wrote it so).
  const Affs rloops = LoopValues(f, x.r0 - x.na, rn);
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(red.global.offset, f, MakeEnv(x.q, &rn, rloops)));
  reach = reach.intersect(f.Equal(x.o, Plus(off, pos)));
  MT_ASSIGN_OR_RETURN(const isl::set held, Holds(x.out, f, x.q, x.o));
  return reach.intersect(held);
}

absl::StatusOr<isl::map> Validator::InstanceOfPaths(const PathScope& x, const isl::map& reach,
                                                    PathReads& reads) const {
  // The statement instance of each path: each index read from the first access that
  // carries it, composing only the operands needed for that. path -> [q, S].
  const unsigned na = x.na, ns = x.ns;
  std::vector<std::pair<unsigned, unsigned>> picks;  // (dim of [q, o, e...] kept, dim of [q, S])
  for (unsigned a = 0; a < na; ++a) picks.emplace_back(a, a);
  isl::map kept = reach;
  unsigned width = na + x.nd;
  for (size_t j = 0; j <= prob_.operands.size(); ++j) {
    const ir::TensorAccess& a = j == 0 ? prob_.output : prob_.operands[j - 1];
    bool needed = false;
    for (size_t d = 0; d < a.indices.size(); ++d) {
      const unsigned i = prob_.IndexPosition(a.indices[d]);
      bool have = false;
      for (const auto& [from, to] : picks) have = have || to == na + i;
      if (!have) {
        picks.emplace_back((j == 0 ? na : width) + d, na + i);
        needed = true;
      }
    }
    if (j > 0 && needed) {
      kept = FlatRangeProduct(kept, reads.Of(j - 1));
      width += a.indices.size();
    }
  }
  if (picks.size() != na + ns)
    return absl::UnimplementedError("an index of the statement is in no access");
  return kept
      .apply_range(ir::Equalities(Frame(ctx_, width).space(), Frame(ctx_, na + ns).space(), picks))
      .coalesce();
}

absl::Status Validator::CheckPathElements(const PathScope& x, const isl::map& reach,
                                          const isl::map& instance, PathReads& reads) {
  // Every element a path adds and multiplies is the one its instance S has there: o = out(S)
  // and e_j = access_j(S) (each access is the plain index list the picks assume).
  const unsigned na = x.na;
  const Frame qf(ctx_, na), sf(ctx_, x.ns);
  const isl::set domain = isl::manage(isl_set_reset_tuple_id(c_.domain().copy()));
  const isl::map reach_q = ir::ProjectOutRange(reach, na, x.nd);  // path -> [q]
  for (size_t j = 0; j <= prob_.operands.size(); ++j) {
    const ir::TensorAccess& a = j == 0 ? prob_.output : prob_.operands[j - 1];
    std::vector<std::pair<unsigned, unsigned>> dims;
    for (size_t d = 0; d < a.indices.size(); ++d)
      dims.emplace_back(prob_.IndexPosition(a.indices[d]), d);
    const isl::map access = ir::Equalities(sf.space(), Frame(ctx_, a.indices.size()).space(), dims);
    if (!Anonymous(c_.OperandAccess(j).intersect_domain(c_.domain()))
             .is_equal(access.intersect_domain(domain))) {
      return absl::InternalError(
          absl::StrCat("the access of ", a.tensor, " is not its index list"));
    }
    const isl::map actual = j == 0 ? reach : FlatRangeProduct(reach_q, reads.Of(j - 1));
    // S must be an instance of the statement: in its domain.
    const isl::map expected =
        instance.apply_range(FlatProduct(Identity(qf), access.intersect_domain(domain)));
    if (!actual.is_subset(expected)) {
      // Explain with the whole tuple: path -> [o, e...].
      isl::map tuple_o = ir::ProjectOutRange(reach, 0, na);
      for (size_t i = 0; i < prob_.operands.size(); ++i) {
        tuple_o = FlatRangeProduct(tuple_o, reads.Of(i));
      }
      isl::map acc = c_.OperandAccess(0).intersect_domain(c_.domain());
      for (size_t i = 1; i <= prob_.operands.size(); ++i)
        acc = FlatRangeProduct(acc, c_.OperandAccess(i));
      const isl::set acc_range = Anonymous(acc).range();
      return ExplainBadTuple(
          tuple_o, acc_range,
          Witness(tuple_o.subtract(tuple_o.intersect_range(acc_range)).domain()));
    }
  }
  return absl::OkStatus();
}

std::string Validator::PathText(const PathScope& x, const Point& w) const {
  std::vector<int64_t> kernels;  // node ids of the kernel calls, in program order
  for (const Node& n : nodes_) {
    if (std::holds_alternative<Compute>(n.stmt->node)) kernels.push_back(n.id);
  }
  std::string s = InstanceAt(w, 0);
  if (kernels.size() > 1) {
    const size_t call = std::find(kernels.begin(), kernels.end(), w[x.na]) - kernels.begin();
    absl::StrAppend(&s, " (kernel call ", call + 1, " of ", kernels.size(), ")");
  }
  if (w[x.r0] >= 0) {
    const Node& rn = nodes_[w[x.r0]];
    const Reduce& red = std::get<Reduce>(rn.stmt->node);
    std::vector<std::string> parts;
    for (size_t l = 0; l < rn.depth(); ++l)
      parts.push_back(absl::StrCat(rn.loops[l]->var, "=", w[x.r0 + 1 + l]));
    absl::StrAppend(&s, " through ", red.pattern.ToString(), " of ", red.buffer,
                    parts.empty() ? "" : " at " + absl::StrJoin(parts, ", "));
    const std::vector<const Node*> same =
        NodesWith<Reduce>([&](const Reduce& r) { return r.buffer == red.buffer; });
    if (same.size() > 1) {
      const size_t i = std::find(same.begin(), same.end(), &rn) - same.begin();
      absl::StrAppend(&s, " (reduction ", i + 1, " of ", same.size(), ")");
    }
  }
  return s;
}

absl::Status Validator::CheckEachInstanceOnce(const PathScope& x, const isl::map& instance,
                                              const std::vector<std::string>& out_loops) {
  // [q, S] -> path: every holder gets every instance of its elements exactly once.
  const unsigned na = x.na, ns = x.ns, nd = x.nd;
  const isl::map by_instance = instance.reverse();
  auto path_loop = [&](const Point& w) -> std::string {
    return w[x.r0] >= 0 ? std::get<Reduce>(nodes_[w[x.r0]].stmt->node).loop : "";
  };
  if (!by_instance.is_single_valued()) {
    const isl::map first = by_instance.lexmin();
    const isl::map others = by_instance.subtract(first);
    const Point w = Witness(others.domain());
    const isl::set at = Frame(ctx_, na + ns).At(w);
    const Point p1 = ir::SamplePoint(first.intersect_domain(at).range());
    const Point p2 = Witness(others.intersect_domain(at).range());
    const Point qr = Slice(w, 0, na), s = Slice(w, na, ns);
    return Unsound(x.out, path_loop(p2), qr,
                   absl::StrCat(RankText(qr), " receives ", InstanceText(s), " twice: from ",
                                PathText(x, p1), " and from ", PathText(x, p2)));
  }
  const isl::set got = by_instance.domain();
  // Who must get what: { [q, S] : q holds out(S) }.
  const Frame ho(ctx_, na + nd);
  MT_ASSIGN_OR_RETURN(const isl::set held, Holds(x.out, ho, ho.Vars(0, na), ho.Vars(na, nd)));
  const isl::map out_of = Anonymous(c_.OperandAccess(0).intersect_domain(c_.domain()));
  const isl::set need = Flatten(Split(held, na).apply_range(out_of.reverse()));
  if (!need.is_subset(got)) {
    const Point w = Witness(need.subtract(got));
    const Point qr = Slice(w, 0, na), s = Slice(w, na, ns);
    return Unsound(x.out, out_loops.empty() ? "" : out_loops[0], qr,
                   absl::StrCat(RankText(qr), " holds ", OutputText(s), " but never receives ",
                                InstanceText(s)));
  }
  // got is within need by construction: a path reaches only a holder of the element it
  // adds to, and that element is its instance's output.
  return absl::OkStatus();
}

absl::Status Validator::ExplainBadTuple(const isl::map& tuple_o, const isl::set& acc_range,
                                        const Point& path) {
  const std::string& out = prob_.output.tensor;
  const unsigned nk = InstDims() + np_, r0 = nk;
  const isl::set at = Frame(ctx_, nk + 1 + depth_).At(path);
  const Point tuple = Witness(tuple_o.intersect_domain(at).range().subtract(acc_range));
  // Components: the output, then each operand.
  std::vector<std::string> tensors = {out};
  std::vector<size_t> first = {0}, len = {prob_.Shape(out).size()};
  for (const ir::TensorAccess& a : prob_.operands) {
    first.push_back(first.back() + len.back());
    len.push_back(prob_.Shape(a.tensor).size());
    tensors.push_back(a.tensor);
  }
  auto comp = [&](const Point& t, size_t j) { return Slice(t, first[j], len[j]); };
  const Frame tf(ctx_, tuple.size());
  // Component j is the odd one out when the others belong to one statement instance;
  // needed[j] is then what that instance needs there.
  std::vector<size_t> suspects;
  std::map<size_t, Point> needed;
  for (size_t j = 0; j < tensors.size(); ++j) {
    isl::set s = acc_range;
    for (size_t x = 0; x < tuple.size(); ++x) {
      if (x < first[j] || x >= first[j] + len[j])
        s = s.intersect(tf.Var(x).eq_set(tf.Cst(tuple[x])));
    }
    if (!s.is_empty()) {
      suspects.push_back(j);
      needed[j] = comp(Witness(s), j);
    }
  }
  const Reduce* red = path[r0] >= 0 ? &std::get<Reduce>(nodes_[path[r0]].stmt->node) : nullptr;
  const Point rank = RankOf(path, 0);
  const std::string where = InstanceAt(path, 0);
  auto source_of = [&](size_t j) { return SourceOf(path, j, comp(tuple, j)); };
  std::vector<std::string> ins;
  for (size_t j = 1; j < tensors.size(); ++j) ins.push_back(Elem(tensors[j], comp(tuple, j)));
  const std::string product = absl::StrJoin(ins, Combine());
  // Blame the odd one out; among several, the one input whose transfer delivered another
  // element than its own box names. Otherwise the operands disagree and the tuple alone
  // cannot say which one is wrong: name every suspect.
  size_t culprit = tensors.size();
  if (suspects.size() == 1) {
    culprit = suspects[0];
  } else {
    std::vector<size_t> contradicted;
    for (size_t j : suspects) {
      if (j > 0 && source_of(j).contradicts_box) contradicted.push_back(j);
    }
    if (contradicted.size() == 1) culprit = contradicted[0];
  }
  if (culprit == 0) {
    return Unsound(out, red ? red->loop : "", rank,
                   absl::StrCat(where, " adds ", product, " into ", Elem(out, comp(tuple, 0)),
                                red ? absl::StrCat(" (through ", red->pattern.ToString(), " of ",
                                                   red->buffer, ")")
                                    : "",
                                ", but it belongs to ", Elem(out, needed[0])));
  }
  if (culprit < tensors.size()) {
    const InputSource src = source_of(culprit);
    return Unsound(
        tensors[culprit], src.loop, rank,
        absl::StrCat(where, " reads ", Elem(tensors[culprit], comp(tuple, culprit)), " from ",
                     src.from, " for ", Elem(out, comp(tuple, 0)), " += ", product,
                     ", which needs ", Elem(tensors[culprit], needed[culprit])));
  }
  std::vector<std::string> alternatives;
  for (size_t j : suspects) {
    alternatives.push_back(
        absl::StrCat(Elem(tensors[j], comp(tuple, j)), " should be ", Elem(tensors[j], needed[j])));
  }
  return Unsound(
      out, "", rank,
      absl::StrCat(where, " computes ", Elem(out, comp(tuple, 0)), " += ", product,
                   ", which is no instance of the statement",
                   alternatives.empty() ? "" : ": either " + absl::StrJoin(alternatives, " or ")));
}

Validator::InputSource Validator::SourceOf(const Point& path, size_t j,
                                           const Point& element) const {
  const unsigned na = na_, ni = InstDims(), nk = ni + np_;
  const Node& kn = NodeOf(path, 0);
  const Compute& k = std::get<Compute>(kn.stmt->node);
  const Point rank = RankOf(path, 0);
  InputSource src;
  const Operand& o = k.in[j - 1];
  if (o.buffer == o.tensor) return src;
  const isl::set kpoint = Frame(ctx_, nk).At(Slice(path, 0, nk));
  const Point se = Witness(reads_.at(kn.id)[j - 1].intersect_domain(kpoint).range());
  src.from = RankText(Slice(se, 0, na));
  const Point lw = ir::SamplePoint(last_writers_.at(kn.id)[j - 1]
                                       ->intersect_domain(Frame(ctx_, ni).At(Slice(path, 0, ni)))
                                       .range());
  const Node& wn = NodeOf(lw, 0);
  const auto* x = std::get_if<Transfer>(&wn.stmt->node);
  if (x == nullptr) return src;
  src.loop = x->loop;
  const Point b = ir::SamplePoint(positions_.at(kn.id)[j].intersect_domain(kpoint).range());
  Point claim = Eval(x->global.offset, rank, &wn, LoopsOf(lw, 0));
  if (claim.size() == b.size()) {
    for (size_t d = 0; d < b.size(); ++d) claim[d] += b[d];
    src.contradicts_box = claim != element;
  }
  return src;
}

}  // namespace meshtune::codegen::validation
