#include "codegen/lower.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "codegen/isl_ast.h"
#include "codegen/pattern.h"
#include "codegen/patterns.h"
#include "ir/isl_util.h"
#include "ir/legality.h"
#include "ir/transfer.h"

namespace meshtune::codegen {

namespace {

using ir::Computation;
using ir::LoopKind;

// The names every expression is written in: mesh axes, then the serial loops.
struct Names {
  std::vector<std::string> axes;
  std::vector<int> serial;  // loop indices of serial loops, in order
  isl::set context;         // bounds of axes and serial loops, as parameters
};

Names MakeNames(const Computation& c) {
  Names n;
  std::vector<std::string> params, bounds;
  for (const ir::MeshAxis& a : c.mesh().axes) {
    n.axes.push_back(a.name);
    params.push_back(a.name);
    bounds.push_back(absl::StrCat("0 <= ", a.name, " < ", a.size));
  }
  for (size_t j = 0; j < c.loops().size(); ++j) {
    const ir::Loop& l = c.loops()[j];
    if (l.kind != LoopKind::kSerial) continue;
    n.serial.push_back(static_cast<int>(j));
    params.push_back(l.name);
    bounds.push_back(absl::StrCat("0 <= ", l.name, " < ", l.extent));
  }
  n.context = isl::set(c.ctx(), absl::StrCat("[", absl::StrJoin(params, ","),
                                             "] -> { : ", absl::StrJoin(bounds, " and "), " }"));
  return n;
}

// A function on P[r..., t_0..t_{L-1}] as Exprs over mesh coordinates and serial loops.
absl::StatusOr<std::vector<Expr>> ToExprs(const Computation& c, const Names& names,
                                          const isl::map& f, int prefix) {
  isl::map m = f;
  const unsigned na = c.mesh().axes.size();
  std::vector<std::string> in = names.axes;
  for (int j = prefix - 1; j >= 0; --j) {
    if (c.loops()[j].kind != LoopKind::kSerial) m = ir::ProjectOutDomain(m, na + j, 1);
  }
  for (int j = 0; j < prefix; ++j) {
    if (c.loops()[j].kind == LoopKind::kSerial) in.push_back(c.loops()[j].name);
  }
  return FunctionToExprs(InputsToParams(m, in), names.context);
}

// The global block start of `tensor` at rank coordinates: Mesh[r] -> T[start].
isl::map BlockStart(const Computation& c, const std::string& tensor) {
  const isl::space mesh = ir::SetSpace(c.ctx(), "Mesh", c.mesh().axes.size());
  const ir::Sharding* s = c.sharding(tensor);
  std::vector<isl::aff> fs;
  for (size_t d = 0; d < c.problem().Shape(tensor).size(); ++d) {
    isl::aff start = ir::Linear(mesh, {}, 0);
    if (s != nullptr) {
      for (const auto& [block, target] : s->blocks[d]) {
        std::vector<std::pair<unsigned, int64_t>> terms;
        for (const auto& [axis, coeff] : target.terms)
          terms.emplace_back(c.mesh().AxisIndex(axis), coeff);
        isl::aff index = ir::Linear(mesh, terms, target.constant);
        if (target.modulus != 0) index = ir::Mod(index, target.modulus);
        start = ir::Add(start, ir::Scale(index, block));
      }
    }
    fs.push_back(start);
  }
  return ir::MapFromAffs(mesh, tensor, fs);
}

// P[r..., t_0..t_{L-1}] -> P[r..., t_0..t_{K-1}] (K <= L) or -> Mesh[r...] (K < 0).
isl::map Truncate(const Computation& c, int from, int to) {
  const unsigned na = c.mesh().axes.size();
  const isl::space p = ir::SetSpace(c.ctx(), "P", na + from);
  std::vector<isl::aff> fs;
  const unsigned keep = to < 0 ? na : na + to;
  for (unsigned i = 0; i < keep; ++i) fs.push_back(ir::DomainVar(p, i));
  return ir::MapFromAffs(p, to < 0 ? "Mesh" : "P", fs);
}

// The box of elements `elements` (P -> T) touches in one instance: its origin as a
// function of P (quasi-affine: rotations make it a modulo) and its constant sizes, the
// largest over the instances. Where blocks do not divide an extent evenly (a last block
// short or empty), the data of an instance is its box clipped to the tensor's `bounds`:
// every element of the box within them, none outside it.
absl::Status Box(const isl::map& elements, const isl::set& bounds, const std::string& what,
                 isl::map* origin, std::vector<int64_t>* size) {
  size->clear();
  const auto not_a_box = [&] {
    return absl::UnimplementedError(absl::StrCat(
        "the data of ", base::Excerpt(what, 2 * base::kMaxExcerpt), " is not a box of fixed size"));
  };
  if (elements.is_empty()) return not_a_box();
  const isl::pw_multi_aff lo = elements.lexmin_pw_multi_aff();
  const isl::pw_multi_aff hi = elements.lexmax_pw_multi_aff();
  // The largest corner-to-corner extent of each dim...
  const isl::set extent = hi.sub(lo).as_map().range();
  const int dims = static_cast<int>(extent.tuple_dim());
  for (int d = 0; d < dims; ++d) {
    const isl::val top = extent.dim_max_val(d);
    if (!top.is_int() || top.is_neg()) return not_a_box();
    size->push_back(top.get_num_si() + 1);
  }
  // ...every element inside [lo, lo + size) (lo and hi are elements, so this is the data's
  // bounding box)...
  const isl::set offsets = ir::MinusOrigin(elements, lo).range();
  if (!offsets.is_subset(ir::Box(offsets.space(), *size))) return not_a_box();
  // ...and every element of that box within the bounds is data (a box clipped, not holed).
  const isl::map corner = lo.as_map();
  const isl::map span = isl::manage(isl_map_from_domain_and_range(
      lo.domain().release(), ir::Box(offsets.space(), *size).release()));
  const isl::map full =
      isl::manage(isl_map_sum(corner.copy(), span.copy())).intersect_range(bounds);
  if (!full.is_subset(elements)) return not_a_box();
  *origin = lo.as_map();
  return absl::OkStatus();
}

// Looks `key` up in `memo`, computing and storing it with `make` on a miss (no cache: just
// computes).
template <typename T, typename F>
T Memo(std::map<std::string, T>* memo, const std::string& key, F make) {
  if (memo == nullptr) return make();
  auto it = memo->find(key);
  if (it == memo->end()) it = memo->emplace(key, make()).first;
  return it->second;
}

// A Box result: the origin and sizes, or why the data is not a box.
struct BoxResult {
  isl::map origin;
  std::vector<int64_t> size;
};
using BoxMemo = std::map<std::string, absl::StatusOr<BoxResult>>;

// Box(elements()) remembered in `memo` under `key` (no memo: computed each time).
// `elements` is only called on a miss.
absl::StatusOr<BoxResult> MemoBox(BoxMemo* memo, const std::string& key,
                                  const std::function<isl::map()>& elements, const isl::set& bounds,
                                  const std::string& what) {
  return Memo(memo, key, [&]() -> absl::StatusOr<BoxResult> {
    BoxResult b;
    MT_RETURN_IF_ERROR(Box(elements(), bounds, what, &b.origin, &b.size));
    return b;
  });
}

// ---- Step 1: tensors and their layouts -------------------------------------------------

Expr AxisExprToExpr(const ir::AxisExpr& e) {
  Expr sum = Expr::Const(e.constant);
  for (const auto& [axis, coeff] : e.terms) sum = sum + Expr::Const(coeff) * Expr::Var(axis);
  return e.modulus == 0 ? sum : Expr::Make(Expr::Op::kMod, {sum, Expr::Const(e.modulus)});
}

}  // namespace

Program DescribeTensors(const Computation& c) {
  Program p;
  for (const ir::MeshAxis& a : c.mesh().axes) {
    p.axis_names.push_back(a.name);
    p.axis_sizes.push_back(a.size);
  }
  p.dtype_bytes = static_cast<int>(ir::DTypeBytes(c.problem().dtype));
  p.accumulate = c.problem().assign == ir::Problem::Assign::kAccumulate;
  p.result_on_layer = c.problem().result_on_layer;
  for (const std::string& t : c.problem().Tensors()) {
    TensorInfo info;
    info.name = t;
    info.dims = c.problem().FirstAccess(t)->indices;
    info.shape = c.problem().Shape(t);
    info.is_output = c.problem().IsOutput(t);
    if (const ir::GivenLayout* given = c.problem().LayoutOf(t)) info.given = *given;
    const ir::Sharding* s = c.sharding(t);
    info.local_shape = c.StorageShape(t);
    for (size_t d = 0; d < info.shape.size(); ++d) {
      DimLayout l;
      if (s != nullptr) {
        for (const auto& [block, target] : s->blocks[d])
          l.blocks.emplace_back(block, AxisExprToExpr(target));
      }
      info.layout.push_back(std::move(l));
    }
    p.tensors.push_back(std::move(info));
  }
  return p;
}

int SerialDepth(const Computation& c, int prefix) {
  int d = 0;
  for (int j = 0; j < prefix; ++j) d += c.loops()[j].kind == LoopKind::kSerial;
  return d;
}

int KernelPrefix(const Computation& c) {
  int prefix = static_cast<int>(c.loops().size());
  while (prefix > 0 && c.loops()[prefix - 1].kind == LoopKind::kTensorized) --prefix;
  return prefix;
}

Compute KernelHead(const Computation& c) {
  const ir::Problem& prob = c.problem();
  Compute k;
  k.kernel = c.kernel().empty() ? "contraction" : c.kernel();
  k.sum = prob.combine == ir::Problem::Combine::kSum;
  for (const std::string& idx : prob.indices) {
    int64_t extent = 1;
    for (const ir::Loop& l : c.loops()) {
      if (l.kind == LoopKind::kTensorized && l.origin == idx) extent *= l.extent;
    }
    k.tile.emplace_back(idx, extent);
  }
  return k;
}

namespace {

// ---- Step 2: transfers -----------------------------------------------------------------

struct TransferPlan {
  ir::Communication transfer;
  bool output = false;
  int prefix = 0;
  isl::map origin;  // P -> T: global origin of the box
  std::vector<int64_t> size;
  StmtPtr alloc, stmt;
};

// Without `offsets` the boxes' offsets (Slice::offset) stay empty (LowerOptions::offsets).
absl::StatusOr<TransferPlan> PlanTransfer(const Computation& c, const Names& names,
                                          const ir::Communication& t, bool offsets,
                                          BoxMemo* boxes) {
  TransferPlan plan;
  plan.transfer = t;
  plan.output = c.problem().IsOutput(t.tensor);
  plan.prefix = ir::TransferPrefix(c, t);
  const std::string buffer = (plan.output ? "Part" : "Trans") + t.tensor;
  // The box depends on the loops and the tensor's access only: shared by all its shardings.
  const std::string box_key = absl::StrCat(c.LoopsKey(), "|transfer ", t.tensor, "@", t.loop);
  MT_ASSIGN_OR_RETURN(BoxResult box,
                      MemoBox(
                          boxes, box_key, [&] { return ir::TransferElements(c, t); },
                          c.TensorSet(t.tensor), "communicate(" + t.tensor + ", " + t.loop + ")"));
  plan.origin = std::move(box.origin);
  plan.size = std::move(box.size);
  Slice global;
  global.size = plan.size;
  if (offsets) {
    MT_ASSIGN_OR_RETURN(global.offset, ToExprs(c, names, plan.origin, plan.prefix));
  }
  plan.alloc = MakeStmt(Alloc{buffer, plan.size, plan.output});
  if (plan.output) {
    MT_ASSIGN_OR_RETURN(CommPattern pattern, DetectReducePattern(c, t, plan.size));
    Reduce r{t.tensor, buffer, t.loop, std::move(pattern), std::move(global)};
    PatternOf(r.pattern.kind).Land(c.mesh(), r);
    plan.stmt = MakeStmt(std::move(r));
    return plan;
  }
  Transfer x;
  x.tensor = t.tensor;
  x.buffer = buffer;
  x.loop = t.loop;
  const isl::map sources = ir::TransferSources(c, t);
  if (!ir::SingleSource(c, t)) {
    // Many sources: every rank along `axes` contributes the piece of the box it holds; with
    // no such axes, every piece comes from a rank that holds it, anywhere on the mesh.
    TransferFacts facts;
    facts.role = TransferFacts::Role::kFetchMany;
    facts.axes = ir::GatherAxes(c, t);
    MT_ASSIGN_OR_RETURN(x.pattern, RecognizeTransfer(facts));
    // Where an all-to-all's box lies says what it costs: its offsets even for costing.
    if (x.pattern.kind == CommPattern::Kind::kAllToAll && !offsets) {
      MT_ASSIGN_OR_RETURN(global.offset, ToExprs(c, names, plan.origin, plan.prefix));
    }
    x.src.size = plan.size;
    x.global = std::move(global);
    plan.stmt = MakeStmt(std::move(x));
    return plan;
  }
  MT_ASSIGN_OR_RETURN(
      x.pattern, DetectFetchPattern(c, plan.prefix, sources, plan.origin, box_key + " origin"));
  if (PatternOf(x.pattern.kind).AcrossSteps()) x.time_loop = c.loops()[plan.prefix - 1].name;
  MT_ASSIGN_OR_RETURN(x.source, ToExprs(c, names, sources, plan.prefix));
  x.src.size = plan.size;
  if (offsets) {
    // The box in the source's local shard: global origin minus the source's block start,
    // composed as relations (a pullback of the sources' pw_multi_aff could come out with
    // overlapping pieces for a dim split over two axes).
    const isl::map start = sources.apply_range(BlockStart(c, t.tensor));
    const isl::map local = isl::manage(isl_map_sum(plan.origin.copy(), isl_map_neg(start.copy())));
    MT_ASSIGN_OR_RETURN(x.src.offset, ToExprs(c, names, local, plan.prefix));
  }
  x.global = std::move(global);
  plan.stmt = MakeStmt(std::move(x));
  return plan;
}

// ---- Step 3: the kernel call -------------------------------------------------------------

// Operand i of the kernel call (0: the output): its buffer and its slice there.
absl::StatusOr<Operand> PlanOperand(const Computation& c, const Names& names, size_t i,
                                    const TransferPlan* via, bool offsets, BoxMemo* boxes) {
  const ir::TensorAccess& a = i == 0 ? c.problem().output : c.problem().operands[i - 1];
  const int prefix = KernelPrefix(c);
  const isl::map instances = c.RankAndTime(prefix).reverse();  // P -> S
  Operand op;
  op.tensor = a.tensor;
  op.dims = a.indices;
  // The tile depends on the loops alone: shared by all shardings of the tensor.
  MT_ASSIGN_OR_RETURN(BoxResult box, MemoBox(
                                         boxes, absl::StrCat(c.LoopsKey(), "|operand ", i),
                                         [&] { return instances.apply_range(c.OperandAccess(i)); },
                                         c.TensorSet(a.tensor), "the kernel's " + a.tensor));
  const isl::map tile = std::move(box.origin);
  op.slice.size = std::move(box.size);
  op.buffer = via != nullptr ? (via->output ? "Part" : "Trans") + a.tensor : a.tensor;
  if (!offsets) return op;
  isl::pw_multi_aff base;
  if (via != nullptr) {
    base =
        via->origin.as_pw_multi_aff().pullback(Truncate(c, prefix, via->prefix).as_pw_multi_aff());
  } else {
    base = BlockStart(c, a.tensor)
               .as_pw_multi_aff()
               .pullback(Truncate(c, prefix, -1).as_pw_multi_aff());
  }
  const isl::map offset = tile.as_pw_multi_aff().sub(base).as_map();
  MT_ASSIGN_OR_RETURN(op.slice.offset, ToExprs(c, names, offset, prefix));
  return op;
}

}  // namespace

struct LoweringCache::Impl {
  std::map<std::string, Names> names;
  std::map<std::string, absl::StatusOr<TransferPlan>> transfers;
  std::map<std::string, absl::StatusOr<Operand>> operands;
  BoxMemo boxes;  // by loops and tensor (transfers) or operand (kernel tiles)
  struct Skeleton {
    StmtPtr tree;
    std::map<const Stmt*, std::string> leaves;  // placeholder -> statement name
  };
  std::map<std::string, absl::StatusOr<Skeleton>> loops;
};

LoweringCache::LoweringCache() : impl_(std::make_unique<Impl>()) {}
LoweringCache::~LoweringCache() = default;

namespace {

// Compute::start and extent for the ragged indices of `k` (none: both stay empty): the
// first value of each index over the instances of one call, the lexicographic minimum of
// their box, taken over the loops' padded reach so that it is defined on every rank (a
// rank whose block lies wholly past the end starts past it and computes nothing).
absl::Status PlanClipping(const Computation& c, const Names& names, Compute* k) {
  bool ragged = false;
  for (const auto& [idx, size] : k->tile) ragged = ragged || c.Ragged(idx);
  if (!ragged) return absl::OkStatus();
  const int prefix = KernelPrefix(c);
  const isl::map first = c.RankAndTime(prefix, /*padded=*/true).reverse().lexmin();  // P -> S
  MT_ASSIGN_OR_RETURN(const std::vector<Expr> starts, ToExprs(c, names, first, prefix));
  for (const auto& [idx, size] : k->tile) {
    k->start.push_back(starts[c.problem().IndexPosition(idx)]);
    k->extent.push_back(c.Ragged(idx) ? c.problem().extents.at(idx) : 0);
  }
  return absl::OkStatus();
}

absl::StatusOr<StmtPtr> PlanCompute(const Computation& c, const Names& names,
                                    const std::vector<TransferPlan>& transfers,
                                    LoweringCache::Impl* cache, const std::string& loops_key,
                                    bool offsets) {
  const ir::Problem& prob = c.problem();
  Compute k = KernelHead(c);
  if (offsets) MT_RETURN_IF_ERROR(PlanClipping(c, names, &k));
  for (size_t i = 0; i <= prob.operands.size(); ++i) {
    const std::string& tensor = i == 0 ? prob.output.tensor : prob.operands[i - 1].tensor;
    const TransferPlan* via = nullptr;
    for (const TransferPlan& t : transfers) {
      if (t.transfer.tensor == tensor) via = &t;
    }
    const std::string key = absl::StrCat(offsets, "|", loops_key, "|", i, "|", c.TensorKey(tensor));
    MT_ASSIGN_OR_RETURN(Operand op, Memo(cache ? &cache->operands : nullptr, key, [&] {
                          return PlanOperand(c, names, i, via, offsets,
                                             cache ? &cache->boxes : nullptr);
                        }));
    if (i == 0) {
      k.out = std::move(op);
    } else {
      k.in.push_back(std::move(op));
    }
  }
  return MakeStmt(std::move(k));
}

// ---- Step 4: the loop nest through isl's AST generator -----------------------------------

// Where the transfers sit: (tensor, AST depth, output) in program order.
struct Placement {
  std::string tensor;
  int depth = 0;
  bool output = false;
  bool ring = false;  // a RingReduce: its buffer is zeroed before its loop, not in it
};

// The loop nest for `placement`, with a placeholder leaf per statement instance.
absl::StatusOr<LoweringCache::Impl::Skeleton> BuildSkeleton(
    const Computation& c, const Names& names, const std::vector<Placement>& placement) {
  const int q = static_cast<int>(names.serial.size());
  constexpr int kNested = 1000;
  std::vector<isl::map> parts;
  auto add = [&](const std::string& name, int depth, int order) {
    std::vector<std::string> vars, out, cons;
    for (int k = 0; k < depth; ++k) {
      const ir::Loop& l = c.loops()[names.serial[k]];
      vars.push_back(l.name);
      cons.push_back(absl::StrCat("0 <= ", l.name, " < ", l.extent));
    }
    for (int k = 0; k <= q; ++k) {
      out.push_back(absl::StrCat(k < depth ? kNested : (k == depth ? order : 0)));
      if (k < q) out.push_back(k < depth ? c.loops()[names.serial[k]].name : "0");
    }
    parts.push_back(isl::map(
        c.ctx(), absl::StrCat("[", absl::StrJoin(names.axes, ","), "] -> { ", name, "[",
                              absl::StrJoin(vars, ","), "] -> [", absl::StrJoin(out, ","), "]",
                              cons.empty() ? "" : " : ", absl::StrJoin(cons, " and "), " }")));
  };
  std::map<int, int> fetches_at, reduces_at;
  for (const Placement& t : placement) {
    if (t.output) {
      const int j = reduces_at[t.depth]++;
      add("Zero" + t.tensor, t.ring ? t.depth - 1 : t.depth, 500 + j);
      add("Reduce" + t.tensor, t.depth, 2000 + j);
    } else {
      const int j = fetches_at[t.depth]++;
      add("Alloc" + t.tensor, t.depth, 2 * j);
      add("Fetch" + t.tensor, t.depth, 2 * j + 1);
    }
  }
  add("Compute", q, kNested);
  isl::union_map all = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) all = all.unite(parts[i]);
  std::vector<std::string> iterators;
  for (int k = 0; k <= q; ++k) {
    iterators.push_back(absl::StrCat("c", k));
    if (k < q) iterators.push_back(c.loops()[names.serial[k]].name);
  }
  isl::set mesh_context = names.context;
  for (int k = q - 1; k >= 0; --k) {
    mesh_context = mesh_context.project_out_param(c.loops()[names.serial[k]].name);
  }
  LoweringCache::Impl::Skeleton skeleton;
  MT_ASSIGN_OR_RETURN(skeleton.tree,
                      GenerateLoops(all, mesh_context, iterators,
                                    [&](const std::string& name) -> absl::StatusOr<StmtPtr> {
                                      StmtPtr placeholder = MakeStmt(Block{});
                                      skeleton.leaves[placeholder.get()] = name;
                                      return placeholder;
                                    }));
  return skeleton;
}

// `s` with every placeholder leaf replaced by its statement.
StmtPtr Fill(const StmtPtr& s, const std::map<const Stmt*, std::string>& leaves,
             const std::map<std::string, StmtPtr>& statements) {
  auto leaf = leaves.find(s.get());
  if (leaf != leaves.end()) return statements.at(leaf->second);
  if (const auto* b = std::get_if<Block>(&s->node)) {
    Block out;
    for (const StmtPtr& child : b->body) out.body.push_back(Fill(child, leaves, statements));
    return MakeStmt(std::move(out));
  }
  if (const auto* f = std::get_if<For>(&s->node)) {
    For out = *f;
    out.body = Fill(f->body, leaves, statements);
    return MakeStmt(std::move(out));
  }
  return s;
}

// Every prefetched statement of `p` is driven by the For of its loop (PrefetchedIn): the
// placement ir/legality's nothing_to_overlap rule promises (a serial loop of several
// iterations gets a For, and its transfers sit in that For's body).
absl::Status CheckPrefetchDriven(const Program& p) {
  std::set<const Stmt*> driven;
  std::vector<const Stmt*> prefetched;
  std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) walk(c);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      for (const Stmt* d : PrefetchedIn(*f)) driven.insert(d);
      walk(f->body);
    } else if (IsPrefetched(*s)) {
      prefetched.push_back(s.get());
    }
  };
  if (p.body) walk(p.body);
  for (const Stmt* s : prefetched) {
    if (driven.count(s) > 0) continue;
    const auto* t = std::get_if<Transfer>(&s->node);
    const std::string& tensor = t ? t->tensor : std::get<Reduce>(s->node).tensor;
    const std::string& loop = t ? t->loop : std::get<Reduce>(s->node).loop;
    return absl::InternalError(absl::StrCat(
        "communicate(", base::Excerpt(tensor), ", ", base::Excerpt(loop),
        ", prefetch=1) did not land in the body of loop ", base::Excerpt(loop), "'s For"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Program> Lower(const ir::Computation& c, const LowerOptions& options) {
  auto log = [&](const std::string& step, const Program& p) {
    if (options.log) options.log(step, Dump(p));
  };
  LoweringCache::Impl* cache = options.cache != nullptr ? &options.cache->impl() : nullptr;
  try {
    const std::string loops_key = cache != nullptr ? c.LoopsKey() : "";
    const Names names =
        Memo(cache ? &cache->names : nullptr, loops_key, [&] { return MakeNames(c); });
    Program p = DescribeTensors(c);
    log("tensors", p);
    std::vector<TransferPlan> transfers;
    std::vector<Placement> placement;
    std::map<std::string, StmtPtr> statements;
    std::string placement_key = loops_key;
    for (const ir::Communication& t : c.transfers()) {
      MT_ASSIGN_OR_RETURN(
          TransferPlan plan,
          Memo(cache ? &cache->transfers : nullptr,
               absl::StrCat(options.offsets, "|", loops_key, "|", c.TensorKey(t.tensor)), [&] {
                 return PlanTransfer(c, names, t, options.offsets, cache ? &cache->boxes : nullptr);
               }));
      p.buffers.push_back(std::get<Alloc>(plan.alloc->node));
      const auto* reduce = std::get_if<Reduce>(&plan.stmt->node);
      const bool ring = reduce != nullptr && PatternOf(reduce->pattern.kind).AcrossSteps();
      placement.push_back({t.tensor, SerialDepth(c, plan.prefix), plan.output, ring});
      absl::StrAppend(&placement_key, "|", t.tensor, ":", placement.back().depth, ":", plan.output,
                      ring ? ":ring" : "");
      statements[(plan.output ? "Zero" : "Alloc") + t.tensor] = plan.alloc;
      statements[(plan.output ? "Reduce" : "Fetch") + t.tensor] =
          WithPrefetch(plan.stmt, t.prefetch);
      transfers.push_back(std::move(plan));
    }
    MT_ASSIGN_OR_RETURN(statements["Compute"],
                        PlanCompute(c, names, transfers, cache, loops_key, options.offsets));
    MT_ASSIGN_OR_RETURN(const LoweringCache::Impl::Skeleton skeleton,
                        Memo(cache ? &cache->loops : nullptr, placement_key,
                             [&] { return BuildSkeleton(c, names, placement); }));
    p.body = Fill(skeleton.tree, skeleton.leaves, statements);
    MT_RETURN_IF_ERROR(CheckPrefetchDriven(p));
    log("loops", p);
    return p;
  } catch (const isl::exception& e) {
    return absl::InternalError(absl::StrCat("isl failed while lowering: ", e.what()));
  }
}

}  // namespace meshtune::codegen
