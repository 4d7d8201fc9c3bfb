#include "codegen/validate.h"

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/space.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/pattern.h"
#include "ir/isl_util.h"
#include "ir/problem.h"

namespace meshtune::codegen {

std::string Unsoundness::ToString() const {
  return absl::StrCat(code, ": ", tensor, loop.empty() ? "" : " at " + loop, ": ", message);
}

namespace {

using Kind = CommPattern::Kind;
using Op = Expr::Op;
using Affs = std::vector<isl::pw_aff>;
using Point = std::vector<int64_t>;

// ---- isl helpers ---------------------------------------------------------------------
// The C++ bindings lack a few operations on flat spaces (a map from a set, flat products,
// inserting dims); those call the C API here.

// A flat, anonymous set space of `n` integer dims, and the quasi-affine pieces built on it.
class Frame {
 public:
  Frame(isl::ctx ctx, unsigned n)
      : space_(isl::manage(isl_space_set_alloc(ctx.get(), 0, n))), n_(n) {}
  unsigned dims() const { return n_; }
  const isl::space& space() const { return space_; }
  isl::pw_aff Var(unsigned pos) const { return isl::pw_aff(ir::DomainVar(space_, pos)); }
  Affs Vars(unsigned first, unsigned n) const {
    Affs out;
    for (unsigned i = 0; i < n; ++i) out.push_back(Var(first + i));
    return out;
  }
  isl::pw_aff Cst(int64_t v) const { return isl::pw_aff(ir::Linear(space_, {}, v)); }
  isl::set All() const { return isl::set::universe(space_); }
  isl::set None() const { return isl::set::empty(space_); }
  // lo <= a < hi.
  isl::set Within(const isl::pw_aff& a, int64_t lo, int64_t hi) const {
    return a.ge_set(Cst(lo)).intersect(a.lt_set(Cst(hi)));
  }
  // 0 <= a[d] < size[d] for every d.
  isl::set InBox(const Affs& a, const std::vector<int64_t>& size) const {
    isl::set s = All();
    for (size_t d = 0; d < a.size(); ++d) s = s.intersect(Within(a[d], 0, size[d]));
    return s;
  }
  // Some a[d] outside [0, size[d]) (a union of half-spaces: cheaper than a complement).
  isl::set OutOfBox(const Affs& a, const std::vector<int64_t>& size) const {
    isl::set s = None();
    for (size_t d = 0; d < a.size(); ++d)
      s = s.unite(a[d].lt_set(Cst(0))).unite(a[d].ge_set(Cst(size[d])));
    return s;
  }
  // a[d] == b[d] for every d.
  isl::set Equal(const Affs& a, const Affs& b) const {
    isl::set s = All();
    for (size_t d = 0; d < a.size(); ++d) s = s.intersect(a[d].eq_set(b[d]));
    return s;
  }
  // a[d] != b[d] for some d.
  isl::set Differ(const Affs& a, const Affs& b) const {
    isl::set s = None();
    for (size_t d = 0; d < a.size(); ++d) s = s.unite(a[d].ne_set(b[d]));
    return s;
  }
  // The set holding exactly `point` (its first point.size() dims; the others free).
  isl::set At(const Point& point) const {
    isl::set s = All();
    for (size_t i = 0; i < point.size(); ++i) s = s.intersect(Var(i).eq_set(Cst(point[i])));
    return s;
  }

 private:
  isl::space space_;
  unsigned n_;
};

Affs Plus(const Affs& a, const Affs& b) {
  Affs out;
  for (size_t d = 0; d < a.size(); ++d) out.push_back(a[d].add(b[d]));
  return out;
}

// The map whose domain is the first `n_in` dims of `s` and whose range is the rest.
isl::map Split(const isl::set& s, unsigned n_in) {
  isl_map* m = isl_map_from_range(s.copy());
  return isl::manage(isl_map_move_dims(m, isl_dim_in, 0, isl_dim_out, 0, n_in));
}

// The flat set [domain..., range...] of `m`.
isl::set Flatten(const isl::map& m) { return m.wrap().flatten(); }

// `s` with `n` unconstrained dims inserted at `pos`.
isl::set InsertDims(const isl::set& s, unsigned pos, unsigned n) {
  return isl::manage(isl_set_insert_dims(s.copy(), isl_dim_set, pos, n));
}

isl::set ProjectOut(const isl::set& s, unsigned first, unsigned n) {
  return isl::manage(isl_set_project_out(s.copy(), isl_dim_set, first, n));
}

// { x -> [f(x), g(x)] } from { x -> f(x) } and { x -> g(x) }, flat.
isl::map FlatRangeProduct(const isl::map& a, const isl::map& b) {
  return isl::manage(isl_map_flat_range_product(a.copy(), b.copy()));
}

// { [a, c] -> [b, d] : a -> b in m1, c -> d in m2 }, flat.
isl::map FlatProduct(const isl::map& a, const isl::map& b) {
  return isl::manage(isl_map_flat_product(a.copy(), b.copy()));
}

isl::map Identity(const Frame& f) {
  return isl::manage(isl_map_identity(isl_space_map_from_set(f.space().copy())));
}

// `m` with anonymous domain and range tuples.
isl::map Anonymous(const isl::map& m) {
  isl_map* r = isl_map_reset_tuple_id(m.copy(), isl_dim_in);
  return isl::manage(isl_map_reset_tuple_id(r, isl_dim_out));
}

// { [a] -> [b] : a[i] == b[i] for i < n } from a frame of `from` dims onto one of `to`.
isl::map Prefix(const Frame& from, const Frame& to, unsigned n) {
  std::vector<std::pair<unsigned, unsigned>> pairs;
  for (unsigned i = 0; i < n; ++i) pairs.emplace_back(i, i);
  return ir::Equalities(from.space(), to.space(), pairs);
}

// The lexicographically smallest point of a non-empty, bounded set.
Point Witness(const isl::set& s) { return ir::SamplePoint(s.lexmin()); }

Point Slice(const Point& v, size_t first, size_t n) {
  return Point(v.begin() + first, v.begin() + first + n);
}

std::string Join(const Point& v) { return absl::StrJoin(v, ", "); }

// ---- expressions ---------------------------------------------------------------------

// What the variables of an Expr stand for, searched in order (the executor looks up mesh
// axes first, then the enclosing loops outermost first); names not bound evaluate to 0.
struct Env {
  std::vector<std::pair<std::string, isl::pw_aff>> vars;
};

// `e` as a piecewise quasi-affine function on frame `f`, with Expr's semantics (floor
// division, non-negative remainder, comparisons as 0/1). Unimplemented when not affine.
absl::StatusOr<isl::pw_aff> ToPwAff(const Expr& e, const Frame& f, const Env& env) {
  Affs a;
  for (const Expr& x : e.args()) {
    MT_ASSIGN_OR_RETURN(isl::pw_aff v, ToPwAff(x, f, env));
    a.push_back(std::move(v));
  }
  const isl::pw_aff zero = f.Cst(0);
  auto divisor = [&]() -> absl::StatusOr<int64_t> {
    if (!e.args()[1].IsConst())
      return absl::UnimplementedError(absl::StrCat("non-constant divisor in ", e.ToString()));
    if (e.args()[1].value() == 0)
      return absl::InvalidArgumentError(absl::StrCat("division by zero in ", e.ToString()));
    return e.args()[1].value();
  };
  auto floordiv = [](const isl::pw_aff& x, int64_t d) {
    return d > 0 ? x.scale_down(d).floor() : x.neg().scale_down(-d).floor();
  };
  auto indicator = [](const isl::set& s) { return s.indicator_function(); };
  switch (e.op()) {
    case Op::kConst:
      return f.Cst(e.value());
    case Op::kVar:
      for (const auto& [name, value] : env.vars) {
        if (name == e.name()) return value;
      }
      return zero;
    case Op::kAdd:
      return a[0].add(a[1]);
    case Op::kSub:
      return a[0].sub(a[1]);
    case Op::kNeg:
      return a[0].neg();
    case Op::kMul:
      if (isl_pw_aff_is_cst(a[0].get()) != isl_bool_true &&
          isl_pw_aff_is_cst(a[1].get()) != isl_bool_true) {
        return absl::UnimplementedError(absl::StrCat("non-affine product ", e.ToString()));
      }
      return a[0].mul(a[1]);
    case Op::kFloorDiv: {
      MT_ASSIGN_OR_RETURN(const int64_t d, divisor());
      return floordiv(a[0], d);
    }
    case Op::kMod: {
      MT_ASSIGN_OR_RETURN(const int64_t d, divisor());
      if (d > 0) return a[0].mod(d);
      return a[0].sub(floordiv(a[0], d).scale(d));
    }
    case Op::kMin:
      return a[0].min(a[1]);
    case Op::kMax:
      return a[0].max(a[1]);
    case Op::kEq:
      return indicator(a[0].eq_set(a[1]));
    case Op::kLe:
      return indicator(a[0].le_set(a[1]));
    case Op::kLt:
      return indicator(a[0].lt_set(a[1]));
    case Op::kGe:
      return indicator(a[0].ge_set(a[1]));
    case Op::kGt:
      return indicator(a[0].gt_set(a[1]));
    case Op::kAnd:
      return indicator(a[0].ne_set(zero).intersect(a[1].ne_set(zero)));
    case Op::kOr:
      return indicator(a[0].ne_set(zero).unite(a[1].ne_set(zero)));
    case Op::kSelect:
      return a[0].cond(a[1], a[2]);
  }
  return absl::InternalError("unknown expression operator");
}

absl::StatusOr<Affs> ToPwAffs(const std::vector<Expr>& es, const Frame& f, const Env& env) {
  Affs out;
  for (const Expr& e : es) {
    MT_ASSIGN_OR_RETURN(isl::pw_aff v, ToPwAff(e, f, env));
    out.push_back(std::move(v));
  }
  return out;
}

// ---- the program's statements --------------------------------------------------------

// A leaf of the program tree (Alloc, Transfer, Compute, Reduce). An instance on a rank is
// [r..., id, v_0..v_{D-1}]: the rank's coordinates, the node's index and the values of its
// enclosing loops (0 past its depth; D is the deepest nesting). Loops run upward from
// constant lower bounds, so two instances of one node run in the lexicographic order of
// their loop values; between nodes, Before() adds where they sit in the tree.
struct Node {
  int64_t id = 0;
  const Stmt* stmt = nullptr;
  std::vector<const For*> loops;  // enclosing, outermost first
  std::vector<int64_t>
      order;  // pre-order index of the node at each depth 0..d (the loops, then the leaf)
  size_t depth() const { return loops.size(); }
};

// How many enclosing loops `x` and `y` share.
size_t CommonDepth(const Node& x, const Node& y) {
  size_t c = 0;
  while (c < x.depth() && c < y.depth() && x.loops[c] == y.loops[c]) ++c;
  return c;
}

class PathReads;

class Validator {
 public:
  Validator(const ir::Computation& c, const Program& p)
      : c_(c), p_(p), prob_(c.problem()), ctx_(c.ctx()), na_(p.axis_names.size()) {}

  absl::Status Run();
  const std::optional<Unsoundness>& found() const { return found_; }

 private:
  // ---- reporting ----
  absl::Status Unsound(std::string tensor, std::string loop, Point rank, std::string message) {
    Unsoundness u;
    u.tensor = std::move(tensor);
    u.loop = std::move(loop);
    u.rank = std::move(rank);
    u.message = std::move(message);
    found_ = u;
    return absl::FailedPreconditionError(u.ToString());
  }
  std::string RankText(const Point& r) const {
    std::vector<std::string> parts;
    for (size_t a = 0; a < r.size() && a < na_; ++a)
      parts.push_back(absl::StrCat(p_.axis_names[a], "=", r[a]));
    return absl::StrCat("rank (", absl::StrJoin(parts, ", "), ")");
  }
  // "rank (x=0, y=1) at ko=1" for the instance at `at` in witness `w`.
  std::string InstanceAt(const Point& w, size_t at) const {
    const Node& n = nodes_[w[at + na_]];
    std::vector<std::string> parts;
    for (size_t k = 0; k < n.depth(); ++k)
      parts.push_back(absl::StrCat(n.loops[k]->var, "=", w[at + na_ + 1 + k]));
    return RankText(Slice(w, at, na_)) + (parts.empty() ? "" : " at " + absl::StrJoin(parts, ", "));
  }
  const Node& NodeOf(const Point& w, size_t at) const { return nodes_[w[at + na_]]; }
  Point RankOf(const Point& w, size_t at) const { return Slice(w, at, na_); }
  Point LoopsOf(const Point& w, size_t at) const { return Slice(w, at + na_ + 1, depth_); }
  std::string Elem(const std::string& tensor, const Point& e) const {
    return absl::StrCat(tensor, "[", Join(e), "]");
  }
  // Element `a` of the statement instance whose index values are `s` (domain order).
  std::string AccessText(const ir::TensorAccess& a, const Point& s) const {
    Point e;
    for (const std::string& idx : a.indices) e.push_back(s[prob_.IndexPosition(idx)]);
    return Elem(a.tensor, e);
  }
  std::string OutputText(const Point& s) const { return AccessText(prob_.output, s); }
  // "C[0, 1] += A[0, 2] * B[2, 1]".
  std::string InstanceText(const Point& s) const {
    std::vector<std::string> ins;
    for (const ir::TensorAccess& a : prob_.operands) ins.push_back(AccessText(a, s));
    return absl::StrCat(OutputText(s), " += ", absl::StrJoin(ins, Combine()));
  }
  std::string Combine() const {
    return prob_.combine == ir::Problem::Combine::kSum ? " + " : " * ";
  }

  // ---- structure ----
  absl::Status Collect(const StmtPtr& s, std::vector<const For*>* loops,
                       std::vector<int64_t>* order);
  absl::Status CheckStructure();
  // The program's mesh and tensors fit the statement (which must not read its output).
  absl::Status CheckFitsStatement() const;
  // Each of `axes` names a mesh axis, none twice.
  bool ValidAxes(const std::vector<int>& axes) const;
  // A node's offsets, buffers and axes are what the runtime can index.
  absl::Status CheckTransferFields(const Transfer& t);
  absl::Status CheckReduceFields(const Reduce& r);
  absl::Status CheckKernelFields(const Compute& k);
  // A prefetched transfer or reduction is driven by its loop's For (codegen/program.h) and
  // its two-half buffer has no other writer; a prefetched reduction's buffer is zeroed in
  // that loop's body.
  absl::Status CheckPrefetch(const Node& n);
  // The shape of a (non-shard) buffer; nullptr when the program does not allocate it.
  const std::vector<int64_t>* BufferShape(const std::string& name) const {
    auto it = buffers_.find(name);
    return it == buffers_.end() ? nullptr : &it->second;
  }
  // The shape of what an operand reads or writes: its tensor's shard or a buffer.
  const std::vector<int64_t>* OperandShape(const Operand& o) const {
    if (o.buffer == o.tensor) return &p_.Tensor(o.tensor)->local_shape;
    return BufferShape(o.buffer);
  }
  template <typename T>
  std::vector<const Node*> NodesWith(const std::function<bool(const T&)>& pred) const {
    std::vector<const Node*> out;
    for (const Node& n : nodes_) {
      if (const T* x = std::get_if<T>(&n.stmt->node); x != nullptr && pred(*x)) out.push_back(&n);
    }
    return out;
  }

  // ---- instances and their order ----
  unsigned InstDims() const { return na_ + 1 + depth_; }
  // The instances of `n`, as a slot of InstDims() dims at `at` of frame `f`.
  isl::set InstSet(const Frame& f, unsigned at, const Node& n) const;
  Affs Coords(const Frame& f, unsigned at) const { return f.Vars(at, na_); }
  Affs LoopValues(const Frame& f, unsigned at, const Node& n) const {
    return f.Vars(at + na_ + 1, n.depth());
  }
  // [r, id_x, v] -> [r, id_y, v']: instances of x that run before instances of y on one rank.
  isl::map Before(const Node& x, const Node& y) const;
  // [r, id_x, v] -> [r, id_y, v']: the same iteration of the loops x and y share.
  isl::map SameIteration(const Node& x, const Node& y) const;
  // For each instance of `reader`, the last instance of `writers` before it.
  isl::map LastWriter(const Node& reader, const std::vector<const Node*>& writers) const;

  Env MakeEnv(const Affs& coords, const Node* n, const Affs& loops) const {
    Env env;
    for (size_t a = 0; a < na_; ++a) env.vars.emplace_back(p_.axis_names[a], coords[a]);
    if (n != nullptr) {
      for (size_t k = 0; k < n->depth(); ++k) env.vars.emplace_back(n->loops[k]->var, loops[k]);
    }
    return env;
  }
  isl::set InMesh(const Frame& f, const Affs& r) const { return f.InBox(r, p_.axis_sizes); }
  // g in the group of r along `axes`: equal coordinates on the other axes, g in the mesh.
  isl::set Group(const Frame& f, const Affs& r, const Affs& g, const std::vector<int>& axes) const {
    isl::set s = InMesh(f, g);
    for (size_t a = 0; a < na_; ++a) {
      if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end())
        s = s.intersect(r[a].eq_set(g[a]));
    }
    return s;
  }
  // Global index of the first element of `tensor`'s shard on the rank at `coords`.
  absl::StatusOr<Affs> BlockStart(const std::string& tensor, const Frame& f,
                                  const Affs& coords) const;
  // The rank at `coords` (in the mesh) holds element `e` of `tensor`.
  absl::StatusOr<isl::set> Holds(const std::string& tensor, const Frame& f, const Affs& coords,
                                 const Affs& e) const;
  // Buffer positions an operand touches at tile point p (dims at p0 of `f`): offset + p
  // along each dim's index.
  absl::StatusOr<Affs> Positions(const Compute& k, const Operand& o, const Frame& f,
                                 const Affs& coords, const Node& n, const Affs& loops,
                                 unsigned p0) const {
    MT_ASSIGN_OR_RETURN(Affs pos, ToPwAffs(o.slice.offset, f, MakeEnv(coords, &n, loops)));
    for (size_t d = 0; d < pos.size(); ++d) {
      for (size_t j = 0; j < k.tile.size(); ++j) {
        if (k.tile[j].first == o.dims[d]) pos[d] = pos[d].add(f.Var(p0 + j));
      }
    }
    return pos;
  }
  // The tile points of `k` (dims at p0 of `f`; dims past its tile are 0).
  isl::set TileSet(const Frame& f, unsigned p0, const Compute& k) const {
    isl::set s = f.All();
    for (size_t j = 0; j < np_; ++j) {
      s = s.intersect(j < k.tile.size() ? f.Within(f.Var(p0 + j), 0, k.tile[j].second)
                                        : f.Var(p0 + j).eq_set(f.Cst(0)));
    }
    return s;
  }

  // ---- concrete evaluation for messages, as the executor evaluates ----
  int64_t Eval(const Expr& e, const Point& coords, const Node* n, const Point& loops) const {
    return e.Eval([&](const std::string& name) -> int64_t {
      for (size_t a = 0; a < na_; ++a) {
        if (p_.axis_names[a] == name) return coords[a];
      }
      if (n != nullptr) {
        for (size_t k = 0; k < n->depth(); ++k) {
          if (n->loops[k]->var == name) return loops[k];
        }
      }
      return 0;
    });
  }
  Point Eval(const std::vector<Expr>& es, const Point& coords, const Node* n,
             const Point& loops) const {
    Point out;
    for (const Expr& e : es) out.push_back(Eval(e, coords, n, loops));
    return out;
  }
  Point BlockStartAt(const std::string& tensor, const Point& coords) const {
    Point out;
    for (const DimLayout& l : p_.Tensor(tensor)->layout) {
      int64_t v = 0;
      for (const auto& [block, index] : l.blocks) v += block * Eval(index, coords, nullptr, {});
      out.push_back(v);
    }
    return out;
  }

  // ---- the checks ----
  absl::Status CheckHolders();
  absl::Status CheckTransfer(const Node& n);
  // ---- one transfer's checks, each recording what it leaves in its buffer ----
  struct TransferScope;
  // The rank witness `w` names as its source.
  Point SourceAt(const TransferScope& x, const Point& w) const;
  // Every element of the box copied from the shard of the rank from_at() names, at local
  // offsets `loc` (`offset` evaluated at offset_rank(), plus b), lies in that shard: the
  // runtime copies the whole box.
  absl::Status CheckCopy(const TransferScope& x, const isl::set& exec, const Affs& loc,
                         const std::function<Point(const Point&)>& from_at,
                         const std::vector<Expr>& offset,
                         const std::function<Point(const Point&)>& offset_rank);
  // What a point-to-point fetch leaves: source(W)'s box at W's offset, for W and the loop
  // values given (the receiver; for a Shift, the rank whose fetch at time 0 the ring
  // carries here), on the instances `exec`.
  absl::StatusOr<isl::set> PointToPoint(const TransferScope& x, const Affs& who, const Affs& when,
                                        const isl::set& exec) const;
  // The receiver's own fetch on `exec` has its source in the mesh and its box in the shard.
  absl::Status CheckPointToPoint(const TransferScope& x, const isl::set& exec);
  // CheckPointToPoint, then what the receiver's own fetch leaves on `exec`.
  absl::StatusOr<isl::set> FetchContent(const TransferScope& x, const isl::set& exec);
  // Per runtime call (codegen/pattern.h): its checks, then what it leaves in the buffer
  // ([r, id, v, b, s, e]).
  absl::StatusOr<isl::set> LocalContent(const TransferScope& x);
  absl::StatusOr<isl::set> BroadcastContent(const TransferScope& x);
  absl::StatusOr<isl::set> AllGatherContent(const TransferScope& x);
  absl::StatusOr<isl::set> AllToAllContent(const TransferScope& x);
  // A ring along `time_loop`: the first step's point-to-point fetch, then `turn`'s steps.
  absl::StatusOr<isl::set> ShiftContent(const TransferScope& x, const std::string& time_loop,
                                        const RuntimeCall& turn);
  absl::Status CheckReduce(const Node& n);
  // A RingReduce (program.h) sits in the body of its loop's For, after every kernel call
  // into its buffer, which only it reads, which no transfer fills, and which is zeroed
  // once, before that For.
  absl::Status CheckRing(const Node& n);
  absl::Status CheckGemm(const Compute& k);
  absl::Status CheckKernel(const Node& n);
  // ---- one kernel call's checks, each recording its reads ----
  struct KernelScope;
  // [r, id, v, p] -> [b]: the position of operand `o` the call touches at tile point p,
  // after checking that it lies inside o's shard or buffer.
  absl::StatusOr<isl::map> OperandPosition(const KernelScope& x, const Operand& o, bool output);
  // The output's partial-result buffer `o` is zeroed before the call and reduced after.
  absl::Status CheckPartialOutput(const KernelScope& x, const Operand& o);
  // Records the reads of input `o` from the rank's own shard.
  absl::Status ReadShard(const KernelScope& x, const Operand& o);
  // Records the reads of input `o` from a transfer buffer (what its last writer left at
  // `position`), after checking that some writer filled it first and everywhere it is read.
  absl::Status ReadBuffer(const KernelScope& x, const Operand& o, const isl::map& position);
  // Refuses a read of `o` at a position its last writer (`last`) left without the element.
  absl::Status ExplainUnfilled(const KernelScope& x, const Operand& o, const isl::map& last,
                               const isl::map& position, const isl::map& read);
  absl::Status CheckInstances();
  // ---- CheckInstances' steps ----
  struct PathScope;
  // [path, q, o]: every path a contribution takes to a holder q of output element o;
  // appends to `out_loops` the loops of the reductions on the way.
  absl::StatusOr<isl::set> Paths(const PathScope& x, std::vector<std::string>* out_loops) const;
  // The paths of kernel node `n` (instances `kbase`, output positions `pos`) through the
  // reduction `rn` of its partial buffer, which `zeros` zero.
  absl::StatusOr<isl::set> ReducedPaths(const PathScope& x, const Node& n, const Node& rn,
                                        const std::vector<const Node*>& zeros,
                                        const isl::set& kbase, const Affs& pos) const;
  // path -> [q, S]: the statement instance S of each path, each index taken from the first
  // access that carries it.
  absl::StatusOr<isl::map> InstanceOfPaths(const PathScope& x, const isl::map& reach,
                                           PathReads& reads) const;
  // Every element a path adds to and multiplies is its instance's.
  absl::Status CheckPathElements(const PathScope& x, const isl::map& reach,
                                 const isl::map& instance, PathReads& reads);
  // "rank (x=0, y=0) at ko=1 (kernel call 1 of 2) through AllReduce(...) of PartC" for path `w`.
  std::string PathText(const PathScope& x, const Point& w) const;
  // ReducedPaths of a RingReduce `rn`.
  absl::StatusOr<isl::set> RingPaths(const PathScope& x, const Node& rn, const isl::set& kbase,
                                     const Affs& pos) const;
  // Every holder receives every instance of its elements, and exactly once.
  absl::Status CheckEachInstanceOnce(const PathScope& x, const isl::map& instance,
                                     const std::vector<std::string>& out_loops);
  absl::Status ExplainBadTuple(const isl::map& tuple_o, const isl::set& acc_range,
                               const Point& path);
  // Where input j's element (`element`, of the kernel instance on `path`) came from: the
  // transfer that filled its buffer, the rank that sent it, and whether it is the element
  // the transfer's own box names there.
  struct InputSource {
    std::string loop, from = "its own shard";
    bool contradicts_box = false;
  };
  InputSource SourceOf(const Point& path, size_t j, const Point& element) const;

  const ir::Computation& c_;
  const Program& p_;
  const ir::Problem& prob_;
  isl::ctx ctx_;
  const size_t na_;
  size_t depth_ = 0;  // D: the deepest loop nesting
  size_t np_ = 0;     // tile dims: the longest tile of a kernel call
  std::vector<Node> nodes_;
  std::map<std::string, std::vector<int64_t>> buffers_;
  int64_t next_order_ = 0;

  // Per transfer node: [r, id, v, b] -> [s, e]: after the transfer, buffer position b holds
  // element e of its tensor, copied from rank s.
  std::map<int64_t, isl::map> contents_;
  // Per kernel node and input operand: [r, id, v, p] -> [s, e], the element read (from s);
  // the buffer positions per operand (output first): [r, id, v, p] -> [b]; the last writer
  // of each input's buffer: [r, id, v] -> [r, id_w, v_w] (none for shards).
  std::map<int64_t, std::vector<isl::map>> reads_;
  std::map<int64_t, std::vector<isl::map>> positions_;
  std::map<int64_t, std::vector<std::optional<isl::map>>> last_writers_;

  std::optional<Unsoundness> found_;
};

absl::Status Validator::Collect(const StmtPtr& s, std::vector<const For*>* loops,
                                std::vector<int64_t>* order) {
  const int64_t index = next_order_++;
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& child : b->body) MT_RETURN_IF_ERROR(Collect(child, loops, order));
    return absl::OkStatus();
  }
  if (const auto* f = std::get_if<For>(&s->node)) {
    if (!f->lo.IsConst()) {
      return absl::UnimplementedError(absl::StrCat("validation needs constant loop bounds; loop ",
                                                   f->var, " starts at ", f->lo.ToString()));
    }
    loops->push_back(f);
    order->push_back(index);
    MT_RETURN_IF_ERROR(Collect(f->body, loops, order));
    order->pop_back();
    loops->pop_back();
    return absl::OkStatus();
  }
  Node n;
  n.id = static_cast<int64_t>(nodes_.size());
  n.stmt = s.get();
  n.loops = *loops;
  n.order = *order;
  n.order.push_back(index);
  nodes_.push_back(std::move(n));
  return absl::OkStatus();
}

isl::set Validator::InstSet(const Frame& f, unsigned at, const Node& n) const {
  isl::set s = InMesh(f, Coords(f, at)).intersect(f.Var(at + na_).eq_set(f.Cst(n.id)));
  for (size_t k = 0; k < depth_; ++k) {
    const isl::pw_aff v = f.Var(at + na_ + 1 + k);
    if (k < n.depth()) {
      const int64_t lo = n.loops[k]->lo.value();
      s = s.intersect(f.Within(v, lo, lo + n.loops[k]->extent));
    } else {
      s = s.intersect(v.eq_set(f.Cst(0)));
    }
  }
  return s;
}

isl::map Validator::Before(const Node& x, const Node& y) const {
  const unsigned ni = InstDims();
  const Frame f(ctx_, 2 * ni);
  const size_t c = CommonDepth(x, y);
  const unsigned vx = na_ + 1, vy = ni + na_ + 1;
  // Earlier in the first shared loop where they differ, or in the same iteration of all
  // shared loops with x's subtree first in the loop body.
  isl::set order = f.None(), same = f.All();
  for (size_t l = 0; l < c; ++l) {
    order = order.unite(same.intersect(f.Var(vx + l).lt_set(f.Var(vy + l))));
    same = same.intersect(f.Var(vx + l).eq_set(f.Var(vy + l)));
  }
  if (x.order[c] < y.order[c]) order = order.unite(same);
  const isl::set s = InstSet(f, 0, x)
                         .intersect(InstSet(f, ni, y))
                         .intersect(f.Equal(Coords(f, 0), Coords(f, ni)))
                         .intersect(order);
  return Split(s.coalesce(), ni);
}

isl::map Validator::SameIteration(const Node& x, const Node& y) const {
  const unsigned ni = InstDims();
  const Frame f(ctx_, 2 * ni);
  isl::set s =
      InstSet(f, 0, x).intersect(InstSet(f, ni, y)).intersect(f.Equal(Coords(f, 0), Coords(f, ni)));
  for (size_t l = 0; l < CommonDepth(x, y); ++l)
    s = s.intersect(f.Var(na_ + 1 + l).eq_set(f.Var(ni + na_ + 1 + l)));
  return Split(s, ni);
}

isl::map Validator::LastWriter(const Node& reader, const std::vector<const Node*>& writers) const {
  if (writers.size() == 1) {
    const Node& w = *writers[0];
    const size_t c = CommonDepth(w, reader);
    // All of w's loops enclose the reader and w comes first in their body: the reader sees
    // the write of the same iteration.
    if (c == w.depth() && w.order[c] < reader.order[c]) return SameIteration(reader, w);
    return Before(w, reader).reverse().lexmax();
  }
  // The latest write of each writer, then the one that runs after all the others.
  std::vector<isl::map> latest;
  for (const Node* w : writers) latest.push_back(Before(*w, reader).reverse().lexmax());
  isl::map last = isl::map::empty(latest[0].space());
  for (size_t i = 0; i < writers.size(); ++i) {
    isl::set keep = latest[i].domain();
    for (size_t j = 0; j < writers.size(); ++j) {
      if (j == i) continue;
      const isl::set j_first = FlatRangeProduct(latest[j], latest[i])
                                   .intersect_range(Flatten(Before(*writers[j], *writers[i])))
                                   .domain();
      keep = keep.subtract(latest[j].domain().subtract(j_first));
    }
    last = last.unite(latest[i].intersect_domain(keep));
  }
  return last;
}

absl::StatusOr<Affs> Validator::BlockStart(const std::string& tensor, const Frame& f,
                                           const Affs& coords) const {
  const Env env = MakeEnv(coords, nullptr, {});
  Affs out;
  for (const DimLayout& l : p_.Tensor(tensor)->layout) {
    isl::pw_aff start = f.Cst(0);
    for (const auto& [block, index] : l.blocks) {
      MT_ASSIGN_OR_RETURN(const isl::pw_aff i, ToPwAff(index, f, env));
      start = start.add(i.scale(block));
    }
    out.push_back(start);
  }
  return out;
}

absl::StatusOr<isl::set> Validator::Holds(const std::string& tensor, const Frame& f,
                                          const Affs& coords, const Affs& e) const {
  MT_ASSIGN_OR_RETURN(const Affs start, BlockStart(tensor, f, coords));
  const TensorInfo& info = *p_.Tensor(tensor);
  const std::vector<int64_t>& local = info.local_shape;
  isl::set s = InMesh(f, coords);
  // An output held on one layer: only its ranks at coordinate 0 there hold the result.
  for (int a : LayerAxes(p_, info)) s = s.intersect(coords[a].eq_set(f.Cst(0)));
  for (size_t d = 0; d < e.size(); ++d) {
    s = s.intersect(e[d].ge_set(start[d])).intersect(e[d].lt_set(start[d].add(f.Cst(local[d]))));
  }
  return s;
}

// ---- structure ---------------------------------------------------------------------

absl::Status Validator::CheckStructure() {
  MT_RETURN_IF_ERROR(CheckFitsStatement());
  for (const Alloc& a : p_.buffers)
    buffers_[a.buffer] = a.shape;  // the runtime sizes them in order
  if (!p_.body) return absl::InvalidArgumentError("the program has no body");
  std::vector<const For*> loops;
  std::vector<int64_t> order;
  MT_RETURN_IF_ERROR(Collect(p_.body, &loops, &order));
  bool kernel = false;
  for (const Node& n : nodes_) {
    depth_ = std::max(depth_, n.depth());
    if (const auto* k = std::get_if<Compute>(&n.stmt->node)) {
      kernel = true;
      np_ = std::max(np_, k->tile.size());
    }
  }
  if (!kernel) return absl::InvalidArgumentError("the program has no kernel call");

  const std::string& out = prob_.output.tensor;
  const bool accumulate = prob_.assign == ir::Problem::Assign::kAccumulate;
  if (p_.accumulate != accumulate) {
    return Unsound(
        out, "", Point(na_, 0),
        absl::StrCat("every rank starts ", out,
                     accumulate ? " from zero but the statement accumulates ('+=')"
                                : " from its old values but the statement assigns ('=')"));
  }
  // Offsets, shapes and axes of every node, as the runtime indexes them.
  for (const Node& n : nodes_) {
    if (const auto* t = std::get_if<Transfer>(&n.stmt->node)) {
      MT_RETURN_IF_ERROR(CheckTransferFields(*t));
    } else if (const auto* r = std::get_if<Reduce>(&n.stmt->node)) {
      MT_RETURN_IF_ERROR(CheckReduceFields(*r));
    } else if (const auto* k = std::get_if<Compute>(&n.stmt->node)) {
      MT_RETURN_IF_ERROR(CheckKernelFields(*k));
    }
    MT_RETURN_IF_ERROR(CheckPrefetch(n));
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckPrefetch(const Node& n) {
  const auto* t = std::get_if<Transfer>(&n.stmt->node);
  const auto* r = std::get_if<Reduce>(&n.stmt->node);
  if (t == nullptr && r == nullptr) return absl::OkStatus();
  const int prefetch = t ? t->prefetch : r->prefetch;
  if (prefetch == 0) return absl::OkStatus();
  const std::string& tensor = t ? t->tensor : r->tensor;
  const std::string& loop = t ? t->loop : r->loop;
  const std::string& buffer = t ? t->buffer : r->buffer;
  const std::string what = t ? "transfer" : "reduction";
  auto unsound = [&](const std::string& why) {
    return Unsound(tensor, loop, {}, absl::StrCat("the prefetched ", what, " ", why));
  };
  if (prefetch != 1) {
    return unsound(
        absl::StrCat("has prefetch=", prefetch, "; a buffer has two halves (prefetch=1)"));
  }
  if (n.depth() == 0 || n.loops.back()->var != loop) {
    return unsound(absl::StrCat(
        "is not in the body of loop ", loop, "'s For",
        n.depth() == 0 ? " (it is outside every loop)"
                       : absl::StrCat(" (its innermost loop is ", n.loops.back()->var, ")"),
        ": no step of its loop drives its two halves"));
  }
  const std::vector<const Node*> writers =
      NodesWith<Transfer>([&](const Transfer& y) { return y.buffer == buffer; });
  const std::vector<const Node*> readers =
      NodesWith<Reduce>([&](const Reduce& y) { return y.buffer == buffer; });
  if (writers.size() + readers.size() != 1) {
    return unsound(absl::StrCat("shares ", buffer,
                                " with another transfer or reduction; a double-buffered buffer "
                                "has one"));
  }
  if (r == nullptr) return absl::OkStatus();
  const std::vector<const Node*> zeros =
      NodesWith<Alloc>([&](const Alloc& z) { return z.zero && z.buffer == buffer; });
  for (const Node* z : zeros) {
    if (z->depth() == n.depth() && CommonDepth(*z, n) == n.depth()) return absl::OkStatus();
  }
  return unsound(absl::StrCat("reads ", buffer, ", which is not zeroed in the body of loop ", loop,
                              ": each step's half must start from zero"));
}

absl::Status Validator::CheckFitsStatement() const {
  if (p_.axis_sizes.size() != na_)
    return absl::InvalidArgumentError("the program's mesh axes and sizes disagree");
  for (int64_t s : p_.axis_sizes) {
    if (s < 1) return absl::InvalidArgumentError("the program's mesh has an empty axis");
  }
  for (const ir::TensorAccess& a : prob_.operands) {
    if (a.tensor == prob_.output.tensor) {
      return absl::UnimplementedError(
          "validation of statements that read their output is not supported");
    }
  }
  for (const std::string& t : prob_.Tensors()) {
    const TensorInfo* info = p_.Tensor(t);
    if (info == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("the program lacks tensor ", t));
    const size_t rank = prob_.Shape(t).size();
    if (info->shape != prob_.Shape(t) || info->local_shape.size() != rank ||
        info->layout.size() != rank || info->is_output != prob_.IsOutput(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the program's tensor ", t, " does not fit the statement"));
    }
  }
  return absl::OkStatus();
}

bool Validator::ValidAxes(const std::vector<int>& axes) const {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int>(na_)) return false;
    for (size_t j = 0; j < i; ++j) {
      if (axes[j] == axes[i]) return false;
    }
  }
  return true;
}

// The refusal of a program lowered without offsets.
absl::Status NoOffsets() {
  return absl::InvalidArgumentError(
      "the program has no offsets (lowered with LowerOptions::offsets = false)");
}

absl::Status Validator::CheckTransferFields(const Transfer& t) {
  if (prob_.FirstAccess(t.tensor) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("a transfer moves unknown tensor ", t.tensor));
  }
  const size_t rank = prob_.Shape(t.tensor).size();
  const std::vector<Expr>& offset = t.pattern.FromHolders() ? t.global.offset : t.src.offset;
  if (offset.empty() && rank > 0) return NoOffsets();
  std::string why;
  if (prob_.IsOutput(t.tensor)) {
    why = "fetches the output as an input";
  } else if (BufferShape(t.buffer) == nullptr) {
    why = absl::StrCat("fills ", t.buffer, ", which is never allocated");
  } else if (BufferShape(t.buffer)->size() != rank) {
    why = absl::StrCat("fills ", t.buffer, " of the wrong rank");
  } else if (offset.size() != rank) {
    why = "has a box of the wrong rank";
  } else if (!t.pattern.FromHolders() && t.source.size() != na_) {
    why = "names a source of the wrong rank";
  } else if (!ValidAxes(t.pattern.axes)) {
    why = "has invalid mesh axes";
  } else if (const std::string bad = PatternOf(t.pattern.kind).CheckForm(t.pattern); !bad.empty()) {
    why = absl::StrCat("has a malformed pattern: ", bad);
  }
  if (!why.empty()) return Unsound(t.tensor, t.loop, {}, absl::StrCat("the transfer ", why));
  return absl::OkStatus();
}

absl::Status Validator::CheckReduceFields(const Reduce& r) {
  const std::string& out = prob_.output.tensor;
  const size_t rank = prob_.Shape(out).size();
  if (r.global.offset.empty() && rank > 0) return NoOffsets();
  std::string why;
  if (r.tensor != out) {
    why = absl::StrCat("adds into ", r.tensor, ", which is not the output");
  } else if (BufferShape(r.buffer) == nullptr) {
    why = absl::StrCat("reads ", r.buffer, ", which is never allocated");
  } else if (BufferShape(r.buffer)->size() != rank) {
    why = absl::StrCat("reads ", r.buffer, " of the wrong rank");
  } else if (r.global.offset.size() != rank) {
    why = "has a box of the wrong rank";
  } else if (!ValidAxes(r.pattern.axes)) {
    why = "has invalid mesh axes";
  }
  if (!why.empty()) return Unsound(r.tensor, r.loop, {}, absl::StrCat("the reduction ", why));
  return absl::OkStatus();
}

absl::Status Validator::CheckKernelFields(const Compute& k) {
  const std::string& out = prob_.output.tensor;
  std::string why;
  if (k.in.size() != prob_.operands.size()) {
    why = "has the wrong number of operands";
  } else if (k.sum != (prob_.combine == ir::Problem::Combine::kSum)) {
    why = k.sum ? "adds its operands" : "multiplies its operands";
  }
  for (size_t i = 0; i <= k.in.size() && why.empty(); ++i) {
    const Operand& o = i == 0 ? k.out : k.in[i - 1];
    const std::string& want = i == 0 ? out : prob_.operands[i - 1].tensor;
    if (o.tensor != want) {
      why = absl::StrCat("uses ", o.tensor, " where the statement has ", want);
      break;
    }
    if (o.slice.offset.empty() && !o.dims.empty()) return NoOffsets();
    const std::vector<int64_t>* shape = OperandShape(o);
    if (shape == nullptr) {
      why = absl::StrCat("uses ", o.buffer, ", which is never allocated");
    } else if (o.dims.size() != shape->size() || o.slice.offset.size() != shape->size()) {
      why = absl::StrCat("indexes ", o.buffer, " with the wrong rank");
    }
  }
  if (!why.empty()) return Unsound(out, "", {}, absl::StrCat("the kernel call ", why));
  return absl::OkStatus();
}

// ---- checks ------------------------------------------------------------------------

absl::Status Validator::CheckHolders() {
  const std::string& out = prob_.output.tensor;
  const std::vector<int64_t> shape = prob_.Shape(out);
  const unsigned nd = shape.size();
  const Frame f(ctx_, na_ + nd);
  MT_ASSIGN_OR_RETURN(const isl::set held, Holds(out, f, f.Vars(0, na_), f.Vars(na_, nd)));
  const Frame e(ctx_, nd);
  const isl::set all = e.InBox(e.Vars(0, nd), shape);
  const isl::set holders = Split(held, na_).range();
  if (!all.is_subset(holders)) {
    return Unsound(out, "", {},
                   absl::StrCat(Elem(out, Witness(all.subtract(holders))), " is held by no rank"));
  }
  return absl::OkStatus();
}

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
  isl::set s_holds_e;   // s is in the mesh and holds e
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
  // Each position holds its element when some member of the group holds it.
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, x.f, MakeEnv(x.r, &n, x.loops)));
  return x.base.intersect(x.f.Equal(x.e, Plus(off, x.b)))
      .intersect(Group(x.f, x.r, x.s, axes))
      .intersect(x.s_holds_e);
}

// Each position of the box at the rank's own global offset holds its element when some rank
// of the mesh holds it (every rank's pieces come from holders of the same input).
absl::StatusOr<isl::set> Validator::AllToAllContent(const TransferScope& x) {
  MT_ASSIGN_OR_RETURN(const Affs off, ToPwAffs(x.offset, x.f, MakeEnv(x.r, &x.n, x.loops)));
  return x.base.intersect(x.f.Equal(x.e, Plus(off, x.b))).intersect(x.s_holds_e);
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

// How validation models what reduction `red` runs (codegen/pattern.h, its step's runtime
// calls): partial sums riding a ring, each rank adding into its own shard, or a collective
// over the group along `axes` (every member ending with the sum with `all`).
struct ReduceModel {
  enum class Kind { kRing, kOwn, kGroup };
  Kind kind = Kind::kOwn;
  bool all = false;
  std::vector<int> axes;
};

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

absl::Status Validator::CheckGemm(const Compute& k) {
  // runtime/rank.cc hands matmul-shaped calls to BLAS, which walks i, j and k only: mirror
  // its choice and check that BLAS then computes the tile's product.
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
// call on rank r and a point p of its tile; in `inst`, [r, id, v]: the instance alone.
struct Validator::KernelScope {
  KernelScope(const Validator& v, const Node& node)
      : n(node),
        k(std::get<Compute>(node.stmt->node)),
        na(v.na_),
        ni(v.InstDims()),
        np(v.np_),
        nk(ni + np),
        kf(v.ctx_, nk),
        inst(v.ctx_, ni),
        kbase(v.InstSet(kf, 0, n).intersect(v.TileSet(kf, ni, k))),
        kinst(v.InstSet(inst, 0, n)),
        to_inst(Prefix(kf, inst, ni)) {}

  const Node& n;
  const Compute& k;
  const unsigned na, ni, np, nk;
  const Frame kf;          // [r, id, v, p]
  const Frame inst;        // [r, id, v]
  const isl::set kbase;    // every instance and tile point
  const isl::set kinst;    // every instance
  const isl::map to_inst;  // [r, id, v, p] -> [r, id, v]
};

absl::Status Validator::CheckKernel(const Node& n) {
  const Compute& k = std::get<Compute>(n.stmt->node);
  MT_RETURN_IF_ERROR(CheckGemm(k));
  const KernelScope x(*this, n);
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
  // A partial-result buffer: zeroed before, and reduced after.
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
      why = absl::StrCat("is meant to hold ", Elem(o.tensor, e), " but no rank of its ",
                         t->pattern.ToString(), t->pattern.axes.empty() ? " (the mesh)" : " group",
                         " holds ", Elem(o.tensor, e));
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
    const isl::set kbase = InstSet(f, 0, n).intersect(TileSet(f, x.ni, *k));
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

absl::Status Validator::Run() {
  MT_RETURN_IF_ERROR(CheckStructure());
  MT_RETURN_IF_ERROR(CheckHolders());
  for (const Node& n : nodes_) {
    if (std::holds_alternative<Transfer>(n.stmt->node)) MT_RETURN_IF_ERROR(CheckTransfer(n));
  }
  for (const Node& n : nodes_) {
    if (std::holds_alternative<Reduce>(n.stmt->node)) MT_RETURN_IF_ERROR(CheckReduce(n));
  }
  for (const Node& n : nodes_) {
    if (std::holds_alternative<Compute>(n.stmt->node)) MT_RETURN_IF_ERROR(CheckKernel(n));
  }
  return CheckInstances();
}

}  // namespace

absl::Status ValidateProgram(const ir::Computation& c, const Program& p, Unsoundness* why) {
  Validator v(c, p);
  absl::Status status;
  try {
    status = v.Run();
  } catch (const isl::exception& e) {
    return absl::InternalError(absl::StrCat("isl failed while validating: ", e.what()));
  }
  if (why != nullptr && v.found().has_value()) *why = *v.found();
  return status;
}

absl::Status AdmitProgram(const ir::Computation& c, const Program& p) {
  const absl::Status valid = ValidateProgram(c, p);
  if (absl::IsUnimplemented(valid))
    return absl::FailedPreconditionError(absl::StrCat("unvalidated: ", valid.message()));
  return valid;
}

absl::StatusOr<Program> LowerValidated(const ir::Computation& c, const LowerOptions& options) {
  LowerOptions with_offsets = options;
  with_offsets.offsets = true;
  MT_ASSIGN_OR_RETURN(Program p, Lower(c, with_offsets));
  MT_RETURN_IF_ERROR(AdmitProgram(c, p));
  return p;
}

}  // namespace meshtune::codegen
