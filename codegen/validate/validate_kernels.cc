// The validator's checks of one kernel call: BLAS's reading of a matmul tile, the
// positions its operands touch, and what each input reads.
#include "codegen/validate/validator.h"
#include "ir/isl_util.h"

namespace meshtune::codegen::validation {

absl::Status Validator::CheckGemm(const Compute& k) {
  // runtime/rank/rank_kernel.cc hands matmul-shaped calls to BLAS, which walks i, j and k only:
  // mirror its choice and check that BLAS then computes the tile's product.
  if (k.kernel.rfind("matmul", 0) != 0 || k.in.size() != 2 || k.out.dims.size() < 2)
    return absl::OkStatus();
  std::string kk_name;
  for (const std::string& d : k.in[0].dims) {
    if (std::find(k.out.dims.begin(), k.out.dims.end(), d) == k.out.dims.end()) kk_name = d;
  }
  if (kk_name.empty()) return absl::OkStatus();
  auto pos = [&](const std::string& name) {
    for (size_t i = 0; i < k.tile.size(); ++i) {
      if (k.tile[i].first == name) return i;
    }
    return k.tile.size();
  };
  const std::string& out = prob_.output.tensor;
  const size_t i = pos(k.out.dims[k.out.dims.size() - 2]), j = pos(k.out.dims.back()),
               kx = pos(kk_name);
  if (i == k.tile.size() || j == k.tile.size() || kx == k.tile.size()) {
    return Unsound(out, "", {}, "the matmul kernel call's tile lacks one of its i, j, k indices");
  }
  auto strides = [&](const Operand& o) {
    const std::vector<int64_t>& shape = *OperandShape(o);
    std::vector<int64_t> st(shape.size(), 1);
    for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * shape[d + 1];
    std::vector<int64_t> by_index;
    for (const auto& [idx, extent] : k.tile) {
      int64_t s = 0;
      for (size_t d = 0; d < o.dims.size(); ++d) {
        if (o.dims[d] == idx) s += st[d];
      }
      by_index.push_back(s);
    }
    return by_index;
  };
  const std::vector<int64_t> so = strides(k.out), sa = strides(k.in[0]), sb = strides(k.in[1]);
  const int64_t m = k.tile[i].second, nn = k.tile[j].second, kk = k.tile[kx].second;
  // GemmKernel's own tests; when one fails it falls back to the generic loop.
  if (so[j] != 1 && nn > 1) return absl::OkStatus();
  const int64_t ldc = m > 1 ? so[i] : std::max<int64_t>(nn, 1);
  bool ta = false, tb = false;
  int64_t lda = 0, ldb = 0;
  if (sa[kx] == 1 || kk == 1) {
    lda = m > 1 ? sa[i] : std::max<int64_t>(kk, 1);
  } else if (sa[i] == 1 || m == 1) {
    ta = true;
    lda = kk > 1 ? sa[kx] : std::max<int64_t>(m, 1);
  } else {
    return absl::OkStatus();
  }
  if (sb[j] == 1 || nn == 1) {
    ldb = kk > 1 ? sb[kx] : std::max<int64_t>(nn, 1);
  } else if (sb[kx] == 1 || kk == 1) {
    tb = true;
    ldb = nn > 1 ? sb[j] : std::max<int64_t>(kk, 1);
  } else {
    return absl::OkStatus();
  }
  if (ldc < nn || lda < (ta ? m : kk) || ldb < (tb ? kk : nn)) return absl::OkStatus();
  // BLAS runs: it computes the tile's product when nothing else varies.
  std::string why;
  if (k.sum) why = "adds its operands but BLAS multiplies them";
  for (size_t x = 0; x < k.tile.size(); ++x) {
    if (x != i && x != j && x != kx && k.tile[x].second > 1)
      why = absl::StrCat("BLAS ignores index ", k.tile[x].first);
  }
  if (sa[j] != 0 && nn > 1)
    why = absl::StrCat("BLAS ignores how ", k.in[0].tensor, " moves along ", k.tile[j].first);
  if (sb[i] != 0 && m > 1)
    why = absl::StrCat("BLAS ignores how ", k.in[1].tensor, " moves along ", k.tile[i].first);
  if (!why.empty())
    return Unsound(out, "", {},
                   absl::StrCat("the ", k.kernel, " kernel call does not compute its tile: ", why));
  return absl::OkStatus();
}

// What the checks of one kernel call share: in `kf`, [r, id, v, p]: an instance of the
// call on rank r and a point p of its tile that it executes (Executed: a ragged index's
// points past its extent are not run, and read and write nothing); in `inst`, [r, id, v]:
// the instance alone.
struct Validator::KernelScope {
  KernelScope(const Validator& v, const Node& node, const Frame& kframe, isl::set executed)
      : n(node),
        k(std::get<Compute>(node.stmt->node)),
        na(v.na_),
        ni(v.InstDims()),
        np(v.np_),
        nk(ni + np),
        kf(kframe),
        inst(v.ctx_, ni),
        kbase(std::move(executed)),
        kinst(ProjectOut(kbase, ni, np).coalesce()),
        to_inst(Prefix(kf, inst, ni)) {}

  const Node& n;
  const Compute& k;
  const unsigned na, ni, np, nk;
  const Frame kf;          // [r, id, v, p]
  const Frame inst;        // [r, id, v]
  const isl::set kbase;    // every instance and tile point it executes
  const isl::set kinst;    // every instance that executes some tile point
  const isl::map to_inst;  // [r, id, v, p] -> [r, id, v]
};

absl::Status Validator::CheckKernel(const Node& n) {
  const Compute& k = std::get<Compute>(n.stmt->node);
  MT_RETURN_IF_ERROR(CheckGemm(k));
  const Frame kf(ctx_, InstDims() + np_);
  MT_ASSIGN_OR_RETURN(isl::set executed, Executed(kf, 0, InstDims(), n, k));
  const KernelScope x(*this, n, kf, std::move(executed));
  for (size_t i = 0; i <= k.in.size(); ++i) {
    const Operand& o = i == 0 ? k.out : k.in[i - 1];
    MT_ASSIGN_OR_RETURN(const isl::map position, OperandPosition(x, o, i == 0));
    positions_[n.id].push_back(position);
    const bool shard = o.buffer == o.tensor;
    if (i == 0) {
      if (!shard) MT_RETURN_IF_ERROR(CheckPartialOutput(x, o));
    } else if (shard) {
      MT_RETURN_IF_ERROR(ReadShard(x, o));
    } else {
      MT_RETURN_IF_ERROR(ReadBuffer(x, o, position));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<isl::map> Validator::OperandPosition(const KernelScope& x, const Operand& o,
                                                    bool output) {
  const std::vector<int64_t>& shape = *OperandShape(o);
  const unsigned nd = shape.size(), nk = x.nk;
  const bool shard = o.buffer == o.tensor;
  // [r, id, v, p, b]: the buffer position touched, inside the buffer.
  const Frame pf(ctx_, nk + nd);
  MT_ASSIGN_OR_RETURN(const Affs pos,
                      Positions(x.k, o, pf, Coords(pf, 0), x.n, LoopValues(pf, 0, x.n), x.ni));
  const isl::set touched = InsertDims(x.kbase, nk, nd);
  const isl::set outside = touched.intersect(pf.OutOfBox(pos, shape));
  if (!outside.is_empty()) {
    const Point w = Witness(ProjectOut(outside, nk, nd));
    const Point b = ir::SamplePoint(Split(touched.intersect(pf.Equal(pf.Vars(nk, nd), pos)), nk)
                                        .intersect_domain(x.kf.At(w))
                                        .range());
    return Unsound(o.tensor, "", RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " has the kernel ", output ? "write " : "read ",
                                Elem(o.buffer, b), ", outside ", shard ? "its shard" : "the buffer",
                                " of shape [", Join(shape), "]"));
  }
  return Split(touched.intersect(pf.Equal(pf.Vars(nk, nd), pos)).coalesce(), nk);
}

absl::Status Validator::CheckPartialOutput(const KernelScope& x, const Operand& o) {
  // A partial-result buffer: zeroed before, and reduced after (a call that runs nowhere
  // writes nothing).
  if (x.kinst.is_empty()) return absl::OkStatus();
  if (NodesWith<Reduce>([&](const Reduce& r) { return r.buffer == o.buffer; }).empty()) {
    const Point w = Witness(x.kinst);
    return Unsound(o.tensor, "", RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " accumulates into ", o.buffer,
                                ", which no reduction reads"));
  }
  isl::set zeroed = x.inst.None();
  for (const Node* z :
       NodesWith<Alloc>([&](const Alloc& a) { return a.zero && a.buffer == o.buffer; })) {
    zeroed = zeroed.unite(Before(*z, x.n).range());
  }
  if (!x.kinst.is_subset(zeroed)) {
    const Point w = Witness(x.kinst.subtract(zeroed));
    return Unsound(o.tensor, "", RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " accumulates into ", o.buffer,
                                " before it is ever zeroed"));
  }
  return absl::OkStatus();
}

absl::Status Validator::ReadShard(const KernelScope& x, const Operand& o) {
  // The rank's own shard: element = block start + position.
  const unsigned na = x.na, nk = x.nk, nd = OperandShape(o)->size();
  const Frame sf(ctx_, nk + na + nd);  // [r, id, v, p, s, e]
  MT_ASSIGN_OR_RETURN(const Affs start, BlockStart(o.tensor, sf, Coords(sf, 0)));
  MT_ASSIGN_OR_RETURN(const Affs spos,
                      Positions(x.k, o, sf, Coords(sf, 0), x.n, LoopValues(sf, 0, x.n), x.ni));
  const isl::set read = InsertDims(x.kbase, nk, na + nd)
                            .intersect(sf.Equal(sf.Vars(nk, na), Coords(sf, 0)))
                            .intersect(sf.Equal(sf.Vars(nk + na, nd), Plus(start, spos)));
  reads_[x.n.id].push_back(Split(read, nk));
  last_writers_[x.n.id].push_back(std::nullopt);
  return absl::OkStatus();
}

absl::Status Validator::ReadBuffer(const KernelScope& x, const Operand& o,
                                   const isl::map& position) {
  // A transfer buffer: what its last writer left there.
  const unsigned na = x.na, nk = x.nk, nd = OperandShape(o)->size();
  const std::vector<const Node*> writers =
      NodesWith<Transfer>([&](const Transfer& t) { return t.buffer == o.buffer; });
  std::vector<const Node*> all_writers = writers;
  for (const Node* z :
       NodesWith<Alloc>([&](const Alloc& a) { return a.zero && a.buffer == o.buffer; })) {
    all_writers.push_back(z);
  }
  for (const Node* c : NodesWith<Compute>([&](const Compute& c) {
         return c.out.buffer == o.buffer && c.out.buffer != c.out.tensor;
       })) {
    all_writers.push_back(c);
  }
  if (x.kinst.is_empty()) {  // the call runs nowhere: it reads nothing
    last_writers_[x.n.id].push_back(std::nullopt);
    reads_[x.n.id].push_back(Split(Frame(ctx_, nk + na + nd).None(), nk));
    return absl::OkStatus();
  }
  if (all_writers.empty()) {
    const Point w = Witness(x.kinst);
    return Unsound(o.tensor, "", RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " has the kernel read ", o.buffer,
                                ", which no transfer fills"));
  }
  const isl::map last = LastWriter(x.n, all_writers).coalesce();
  if (!x.kinst.is_subset(last.domain())) {
    const Point w = Witness(x.kinst.subtract(last.domain()));
    return Unsound(o.tensor, "", RankOf(w, 0),
                   absl::StrCat(InstanceAt(w, 0), " has the kernel read ", o.buffer,
                                " before any transfer fills it"));
  }
  last_writers_[x.n.id].push_back(last);
  std::optional<isl::map> content;
  bool total = writers.size() == all_writers.size();  // every writer defines every position
  for (const Node* w : writers) {
    const Transfer& t = std::get<Transfer>(w->stmt->node);
    total = total && t.tensor == o.tensor && !t.pattern.FromHolders();
    if (t.tensor != o.tensor) continue;  // holds another tensor: no element of o's
    content = content.has_value() ? content->unite(contents_.at(w->id)) : contents_.at(w->id);
  }
  // [r, id, v, p] -> [w, b] -> [s, e]
  const isl::map where = FlatRangeProduct(x.to_inst.apply_range(last), position);
  const isl::map read = content.has_value() ? where.apply_range(*content).coalesce()
                                            : Split(Frame(ctx_, nk + na + nd).None(), nk);
  reads_[x.n.id].push_back(read);
  if (total || x.kbase.is_subset(read.domain())) return absl::OkStatus();
  return ExplainUnfilled(x, o, last, position, read);
}

absl::Status Validator::ExplainUnfilled(const KernelScope& x, const Operand& o,
                                        const isl::map& last, const isl::map& position,
                                        const isl::map& read) {
  const unsigned nd = OperandShape(o)->size();
  const Point w = Witness(x.kbase.subtract(read.domain()));
  const Point lw = ir::SamplePoint(last.intersect_domain(x.inst.At(Slice(w, 0, x.ni))).range());
  const Point b = ir::SamplePoint(position.intersect_domain(x.kf.At(w)).range());
  const Node& m = NodeOf(lw, 0);
  std::string why = "what the last writer left there", loop;
  if (const auto* t = std::get_if<Transfer>(&m.stmt->node)) {
    loop = t->loop;
    if (t->tensor != o.tensor) {
      why = absl::StrCat("holds ", t->tensor, " (", t->pattern.ToString(), " at ",
                         InstanceAt(lw, 0), ")");
    } else if (t->pattern.FromHolders()) {
      Point e = Eval(t->global.offset, RankOf(w, 0), &m, LoopsOf(lw, 0));
      for (size_t d = 0; d < nd; ++d) e[d] += b[d];
      const std::vector<int64_t>& shape = p_.Tensor(o.tensor)->shape;
      bool past = false;
      for (size_t d = 0; d < nd; ++d) past = past || e[d] < 0 || e[d] >= shape[d];
      if (past) {
        // Pieces from holders are clipped to the shape: the position is left as it was.
        why = absl::StrCat("is meant to hold ", Elem(o.tensor, e), ", past ", o.tensor,
                           "'s shape [", Join(shape), "]: its ", t->pattern.ToString(),
                           " takes only elements, so nothing fills it");
      } else {
        why = absl::StrCat(
            "is meant to hold ", Elem(o.tensor, e), " but no rank of its ", t->pattern.ToString(),
            t->pattern.axes.empty() ? " (the mesh)" : " group", " holds ", Elem(o.tensor, e));
      }
    } else {
      why = absl::StrCat("was not filled by its ", t->pattern.ToString());
    }
  } else if (std::get_if<Alloc>(&m.stmt->node) != nullptr) {
    why = "holds zeros";
  } else {
    why = "holds partial results of a kernel call";
  }
  return Unsound(
      o.tensor, loop, RankOf(w, 0),
      absl::StrCat(InstanceAt(w, 0), " has the kernel read ", Elem(o.buffer, b), ", which ", why));
}

}  // namespace meshtune::codegen::validation
