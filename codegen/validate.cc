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
#include "ir/isl_util.h"
#include "ir/problem.h"
#include "ir/status_macros.h"

namespace meshtune::codegen {

std::string Unsoundness::ToString() const {
  return absl::StrCat(code, ": ", tensor, loop.empty() ? "" : " at " + loop, ": ", message);
}

namespace {

using Kind = CommPattern::Kind;
using Op = Expr::Op;

// ---- isl helpers ---------------------------------------------------------------------
// The C++ bindings lack a few operations on flat spaces (building a map from a set,
// flat products, lexicographic order); those call the C API here and nowhere else.

// A flat, anonymous set space of `n` integer dims, and the affine pieces built on it.
class Frame {
 public:
  Frame(isl::ctx ctx, unsigned n) : space_(isl::manage(isl_space_set_alloc(ctx.get(), 0, n))), n_(n) {}
  unsigned dims() const { return n_; }
  const isl::space& space() const { return space_; }
  isl::pw_aff Var(unsigned pos) const { return isl::pw_aff(ir::DomainVar(space_, pos)); }
  std::vector<isl::pw_aff> Vars(unsigned first, unsigned n) const {
    std::vector<isl::pw_aff> out;
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
  isl::set InBox(const std::vector<isl::pw_aff>& a, const std::vector<int64_t>& size) const {
    isl::set s = All();
    for (size_t d = 0; d < a.size(); ++d) s = s.intersect(Within(a[d], 0, size[d]));
    return s;
  }
  // a[d] == b[d] for every d.
  isl::set Equal(const std::vector<isl::pw_aff>& a, const std::vector<isl::pw_aff>& b) const {
    isl::set s = All();
    for (size_t d = 0; d < a.size(); ++d) s = s.intersect(a[d].eq_set(b[d]));
    return s;
  }
  // a[d] != b[d] for some d.
  isl::set Differ(const std::vector<isl::pw_aff>& a, const std::vector<isl::pw_aff>& b) const {
    return All().subtract(Equal(a, b));
  }

 private:
  isl::space space_;
  unsigned n_;
};

std::vector<isl::pw_aff> Plus(const std::vector<isl::pw_aff>& a, const std::vector<isl::pw_aff>& b) {
  std::vector<isl::pw_aff> out;
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
std::vector<int64_t> Witness(const isl::set& s) { return ir::SamplePoint(s.lexmin()); }

// The set holding exactly `point` in a frame of as many dims.
isl::set PointSet(const Frame& f, const std::vector<int64_t>& point) {
  isl::set s = f.All();
  for (size_t i = 0; i < point.size(); ++i) s = s.intersect(f.Var(i).eq_set(f.Cst(point[i])));
  return s;
}

std::vector<int64_t> Slice(const std::vector<int64_t>& v, size_t first, size_t n) {
  return std::vector<int64_t>(v.begin() + first, v.begin() + first + n);
}

// ---- expressions ---------------------------------------------------------------------

// What the variables of an Expr stand for, searched in order (the executor looks up mesh
// axes first, then the enclosing loops outermost first); names not bound evaluate to 0.
struct Env {
  std::vector<std::pair<std::string, isl::pw_aff>> vars;
};

isl::pw_aff Indicator(const isl::set& s) { return s.indicator_function(); }

absl::StatusOr<isl::pw_aff> ToPwAff(const Expr& e, const Frame& f, const Env& env) {
  std::vector<isl::pw_aff> a;
  for (const Expr& x : e.args()) {
    MT_ASSIGN_OR_RETURN(isl::pw_aff v, ToPwAff(x, f, env));
    a.push_back(std::move(v));
  }
  const isl::pw_aff zero = f.Cst(0);
  auto divisor = [&]() -> absl::StatusOr<int64_t> {
    if (!e.args()[1].IsConst()) {
      return absl::UnimplementedError(absl::StrCat("non-constant divisor in ", e.ToString()));
    }
    if (e.args()[1].value() == 0) return absl::InvalidArgumentError(absl::StrCat("division by zero in ", e.ToString()));
    return e.args()[1].value();
  };
  // floor(x / d), for any d != 0.
  auto floordiv = [](const isl::pw_aff& x, int64_t d) {
    return d > 0 ? x.scale_down(d).floor() : x.neg().scale_down(-d).floor();
  };
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
      if (isl_pw_aff_is_cst(a[0].get()) != isl_bool_true && isl_pw_aff_is_cst(a[1].get()) != isl_bool_true) {
        return absl::UnimplementedError(absl::StrCat("non-affine product ", e.ToString()));
      }
      return a[0].mul(a[1]);
    case Op::kFloorDiv: {
      MT_ASSIGN_OR_RETURN(int64_t d, divisor());
      return floordiv(a[0], d);
    }
    case Op::kMod: {
      MT_ASSIGN_OR_RETURN(int64_t d, divisor());
      if (d > 0) return a[0].mod(d);
      return a[0].sub(floordiv(a[0], d).scale(d));
    }
    case Op::kMin:
      return a[0].min(a[1]);
    case Op::kMax:
      return a[0].max(a[1]);
    case Op::kEq:
      return Indicator(a[0].eq_set(a[1]));
    case Op::kLe:
      return Indicator(a[0].le_set(a[1]));
    case Op::kLt:
      return Indicator(a[0].lt_set(a[1]));
    case Op::kGe:
      return Indicator(a[0].ge_set(a[1]));
    case Op::kGt:
      return Indicator(a[0].gt_set(a[1]));
    case Op::kAnd:
      return Indicator(a[0].ne_set(zero).intersect(a[1].ne_set(zero)));
    case Op::kOr:
      return Indicator(a[0].ne_set(zero).unite(a[1].ne_set(zero)));
    case Op::kSelect:
      return a[0].cond(a[1], a[2]);
  }
  return absl::InternalError("unknown expression operator");
}

absl::StatusOr<std::vector<isl::pw_aff>> ToPwAffs(const std::vector<Expr>& es, const Frame& f, const Env& env) {
  std::vector<isl::pw_aff> out;
  for (const Expr& e : es) {
    MT_ASSIGN_OR_RETURN(isl::pw_aff v, ToPwAff(e, f, env));
    out.push_back(std::move(v));
  }
  return out;
}

// ---- the program's statements --------------------------------------------------------

// A leaf of the program tree (Alloc, Transfer, Compute, Reduce) and where it runs. Its
// instances on a rank are ordered by the timestamp [c_0, v_1, c_1, ..., v_d, c_d, 0...]:
// v_k the value of the k-th enclosing loop, c_k the pre-order index of the node at depth k
// (the (k+1)-th enclosing loop, or the leaf itself). Loops run upward from constant lower
// bounds, so the lexicographic order of timestamps is the order of execution.
struct Node {
  const Stmt* stmt = nullptr;
  std::vector<const For*> loops;  // enclosing, outermost first
  std::vector<int64_t> order;     // c_0..c_d
};

std::string Join(const std::vector<int64_t>& v) { return absl::StrJoin(v, ", "); }

class Validator {
 public:
  Validator(const ir::Computation& c, const Program& p)
      : c_(c), p_(p), prob_(c.problem()), ctx_(c.ctx()), na_(p.axis_names.size()) {}

  absl::Status Run();
  const std::optional<Unsoundness>& found() const { return found_; }

 private:
  // ---- reporting ----
  absl::Status Unsound(std::string tensor, std::string loop, std::vector<int64_t> rank, std::string message) {
    Unsoundness u;
    u.tensor = std::move(tensor);
    u.loop = std::move(loop);
    u.rank = std::move(rank);
    u.message = std::move(message);
    found_ = u;
    return absl::FailedPreconditionError(u.ToString());
  }
  std::string RankText(const std::vector<int64_t>& r) const {
    std::vector<std::string> parts;
    for (size_t a = 0; a < r.size() && a < na_; ++a) parts.push_back(absl::StrCat(p_.axis_names[a], "=", r[a]));
    return absl::StrCat("rank (", absl::StrJoin(parts, ", "), ")");
  }
  // " at ko=1, ki=0" for a timestamp of `n`; "" outside loops.
  std::string AtText(const Node& n, const std::vector<int64_t>& ts) const {
    std::vector<std::string> parts;
    for (size_t k = 0; k < n.loops.size(); ++k) parts.push_back(absl::StrCat(n.loops[k]->var, "=", ts[2 * k + 1]));
    return parts.empty() ? "" : " at " + absl::StrJoin(parts, ", ");
  }
  std::string Elem(const std::string& tensor, const std::vector<int64_t>& e) const {
    return absl::StrCat(tensor, "[", Join(e), "]");
  }
  // Element `a` of the statement instance whose index values are `s` (domain order).
  std::string AccessText(const ir::TensorAccess& a, const std::vector<int64_t>& s) const {
    std::vector<int64_t> e;
    for (const std::string& idx : a.indices) e.push_back(s[prob_.IndexPosition(idx)]);
    return Elem(a.tensor, e);
  }
  std::string OutputText(const std::vector<int64_t>& s) const { return AccessText(prob_.output, s); }
  // The statement instance as text: "C[0, 1] += A[0, 2] * B[2, 1]".
  std::string InstanceText(const std::vector<int64_t>& s) const {
    std::vector<std::string> ins;
    for (const ir::TensorAccess& a : prob_.operands) ins.push_back(AccessText(a, s));
    return absl::StrCat(OutputText(s), " += ", absl::StrJoin(ins, Combine()));
  }
  std::string Combine() const { return prob_.combine == ir::Problem::Combine::kSum ? " + " : " * "; }

  // ---- structure ----
  absl::Status Collect(const StmtPtr& s, std::vector<const For*>* loops, std::vector<int64_t>* order);
  absl::Status CheckStructure();
  const Node* NodeAt(const std::vector<int64_t>& ts) const;
  // The (non-shard) buffer's shape; nullptr when the program does not allocate it.
  const std::vector<int64_t>* BufferShape(const std::string& name) const {
    auto it = buffers_.find(name);
    return it == buffers_.end() ? nullptr : &it->second;
  }
  // The shape of what an operand's buffer names: its tensor's shard or a transfer buffer.
  const std::vector<int64_t>* OperandShape(const Operand& o) const {
    if (o.buffer == o.tensor) return &p_.Tensor(o.tensor)->local_shape;
    return BufferShape(o.buffer);
  }

  // ---- frames and relations ----
  // The instances of `n` in frame `f`: ranks at dims [r0, r0+na), timestamps at [t0, t0+N).
  isl::set InstSet(const Frame& f, unsigned r0, unsigned t0, const Node& n) const;
  // The values of n's enclosing loops in frame `f` (timestamps at t0).
  std::vector<isl::pw_aff> LoopValues(const Frame& f, unsigned t0, const Node& n) const {
    std::vector<isl::pw_aff> out;
    for (size_t k = 0; k < n.loops.size(); ++k) out.push_back(f.Var(t0 + 2 * k + 1));
    return out;
  }
  Env MakeEnv(const std::vector<isl::pw_aff>& coords, const Node* n, const std::vector<isl::pw_aff>& loops) const {
    Env env;
    for (size_t a = 0; a < na_; ++a) env.vars.emplace_back(p_.axis_names[a], coords[a]);
    if (n != nullptr) {
      for (size_t k = 0; k < n->loops.size(); ++k) env.vars.emplace_back(n->loops[k]->var, loops[k]);
    }
    return env;
  }
  isl::set InMesh(const Frame& f, const std::vector<isl::pw_aff>& r) const { return f.InBox(r, p_.axis_sizes); }
  // g in the group of r along `axes`: equal coordinates on the other axes, g in the mesh.
  isl::set Group(const Frame& f, const std::vector<isl::pw_aff>& r, const std::vector<isl::pw_aff>& g,
                 const std::vector<int>& axes) const {
    isl::set s = InMesh(f, g);
    for (size_t a = 0; a < na_; ++a) {
      if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end()) s = s.intersect(r[a].eq_set(g[a]));
    }
    return s;
  }
  // Global index of the first element of `tensor`'s shard on the rank at `coords`.
  absl::StatusOr<std::vector<isl::pw_aff>> BlockStart(const std::string& tensor, const Frame& f,
                                                      const std::vector<isl::pw_aff>& coords) const;
  // The rank at `coords` holds element `e` of `tensor`.
  absl::StatusOr<isl::set> Holds(const std::string& tensor, const Frame& f, const std::vector<isl::pw_aff>& coords,
                                 const std::vector<isl::pw_aff>& e) const;

  // ---- concrete evaluation, for messages (as the executor evaluates) ----
  int64_t Eval(const Expr& e, const std::vector<int64_t>& coords, const Node* n, const std::vector<int64_t>& ts) const {
    return e.Eval([&](const std::string& name) -> int64_t {
      for (size_t a = 0; a < na_; ++a) {
        if (p_.axis_names[a] == name) return coords[a];
      }
      if (n != nullptr) {
        for (size_t k = 0; k < n->loops.size(); ++k) {
          if (n->loops[k]->var == name) return ts[2 * k + 1];
        }
      }
      return 0;
    });
  }
  std::vector<int64_t> Eval(const std::vector<Expr>& es, const std::vector<int64_t>& coords, const Node* n,
                            const std::vector<int64_t>& ts) const {
    std::vector<int64_t> out;
    for (const Expr& e : es) out.push_back(Eval(e, coords, n, ts));
    return out;
  }
  std::vector<int64_t> BlockStartAt(const std::string& tensor, const std::vector<int64_t>& coords) const {
    std::vector<int64_t> out;
    for (const DimLayout& l : p_.Tensor(tensor)->layout) {
      int64_t v = 0;
      for (const auto& [block, index] : l.blocks) v += block * Eval(index, coords, nullptr, {});
      out.push_back(v);
    }
    return out;
  }

  // ---- the checks ----
  absl::Status CheckHolders();
  absl::Status CheckTransfer(size_t node);
  absl::Status CheckReduce(size_t node);
  absl::Status CheckKernel(size_t node);
  absl::Status CheckGemm(const Node& n, const Compute& k);
  absl::Status CheckInstances();
  absl::Status ExplainBadTuple(const isl::map& tuple_o, const isl::set& acc_range, const std::vector<int64_t>& path);

  const ir::Computation& c_;
  const Program& p_;
  const ir::Problem& prob_;
  isl::ctx ctx_;
  const size_t na_;
  size_t nt_ = 0;  // timestamp dims (N)
  size_t np_ = 0;  // tile dims
  std::vector<Node> nodes_;
  std::map<std::string, std::vector<int64_t>> buffers_;
  std::optional<Frame> inst_frame_;  // [r, ts]
  std::vector<isl::set> inst_;        // per node, on inst_frame_
  isl::map before_;                   // [r, ts] -> [r, ts']: same rank, ts earlier than ts'
  int64_t next_order_ = 0;

  // Per transfer node: [r, ts, b] -> [s, e]: buffer position b holds element e of the
  // transfer's tensor, copied from rank s.
  std::map<size_t, isl::map> contents_;
  // Per compute node and input operand: [r, ts, p] -> [s, e] (the element read, from s),
  // and the buffer position read: [r, ts, p] -> [b] (kernel frame, tile dims np_).
  std::map<size_t, std::vector<isl::map>> reads_;
  std::map<size_t, std::vector<isl::map>> positions_;
  // Per compute node and input operand: [r, ts] -> [r, ts_w], the transfer that last filled
  // the buffer (absent for shard operands).
  std::map<size_t, std::vector<std::optional<isl::map>>> last_writers_;
  // Path frame [r, ts_K, p, ts_R] + [q, o]: contributions of kernel instances reaching q's o.
  std::optional<isl::set> paths_;

  std::optional<Unsoundness> found_;
};

absl::Status Validator::Collect(const StmtPtr& s, std::vector<const For*>* loops, std::vector<int64_t>* order) {
  const int64_t index = next_order_++;
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& child : b->body) MT_RETURN_IF_ERROR(Collect(child, loops, order));
    return absl::OkStatus();
  }
  if (const auto* f = std::get_if<For>(&s->node)) {
    if (!f->lo.IsConst()) {
      return absl::UnimplementedError(
          absl::StrCat("validation needs constant loop bounds; loop ", f->var, " starts at ", f->lo.ToString()));
    }
    loops->push_back(f);
    order->push_back(index);
    MT_RETURN_IF_ERROR(Collect(f->body, loops, order));
    order->pop_back();
    loops->pop_back();
    return absl::OkStatus();
  }
  Node n;
  n.stmt = s.get();
  n.loops = *loops;
  n.order = *order;
  n.order.push_back(index);
  nodes_.push_back(std::move(n));
  return absl::OkStatus();
}

const Node* Validator::NodeAt(const std::vector<int64_t>& ts) const {
  for (const Node& n : nodes_) {
    bool match = true;
    for (size_t k = 0; k < n.order.size() && match; ++k) match = ts[2 * k] == n.order[k];
    if (match) return &n;
  }
  return nullptr;
}

isl::set Validator::InstSet(const Frame& f, unsigned r0, unsigned t0, const Node& n) const {
  isl::set s = InMesh(f, f.Vars(r0, na_));
  const size_t d = n.loops.size();
  for (size_t k = 0; k <= d; ++k) s = s.intersect(f.Var(t0 + 2 * k).eq_set(f.Cst(n.order[k])));
  for (size_t k = 0; k < d; ++k) {
    const int64_t lo = n.loops[k]->lo.value();
    s = s.intersect(f.Within(f.Var(t0 + 2 * k + 1), lo, lo + n.loops[k]->extent));
  }
  for (size_t j = 2 * d + 1; j < nt_; ++j) s = s.intersect(f.Var(t0 + j).eq_set(f.Cst(0)));
  return s;
}

absl::StatusOr<std::vector<isl::pw_aff>> Validator::BlockStart(const std::string& tensor, const Frame& f,
                                                              const std::vector<isl::pw_aff>& coords) const {
  const Env env = MakeEnv(coords, nullptr, {});
  std::vector<isl::pw_aff> out;
  for (const DimLayout& l : p_.Tensor(tensor)->layout) {
    isl::pw_aff start = f.Cst(0);
    for (const auto& [block, index] : l.blocks) {
      MT_ASSIGN_OR_RETURN(isl::pw_aff i, ToPwAff(index, f, env));
      start = start.add(i.scale(block));
    }
    out.push_back(start);
  }
  return out;
}

absl::StatusOr<isl::set> Validator::Holds(const std::string& tensor, const Frame& f,
                                          const std::vector<isl::pw_aff>& coords,
                                          const std::vector<isl::pw_aff>& e) const {
  MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> start, BlockStart(tensor, f, coords));
  const std::vector<int64_t>& local = p_.Tensor(tensor)->local_shape;
  isl::set s = InMesh(f, coords);
  for (size_t d = 0; d < e.size(); ++d) {
    s = s.intersect(e[d].ge_set(start[d])).intersect(e[d].lt_set(start[d].add(f.Cst(local[d]))));
  }
  return s;
}

// ---- structure ---------------------------------------------------------------------

absl::Status Validator::CheckStructure() {
  if (p_.axis_sizes.size() != na_) return absl::InvalidArgumentError("the program's mesh axes and sizes disagree");
  for (int64_t s : p_.axis_sizes) {
    if (s < 1) return absl::InvalidArgumentError("the program's mesh has an empty axis");
  }
  for (const ir::TensorAccess& a : prob_.operands) {
    if (a.tensor == prob_.output.tensor) {
      return absl::UnimplementedError("validation of statements that read their output is not supported");
    }
  }
  for (const std::string& t : prob_.Tensors()) {
    const TensorInfo* info = p_.Tensor(t);
    if (info == nullptr) return absl::InvalidArgumentError(absl::StrCat("the program lacks tensor ", t));
    const size_t rank = prob_.Shape(t).size();
    if (info->shape != prob_.Shape(t) || info->local_shape.size() != rank || info->layout.size() != rank ||
        info->is_output != prob_.IsOutput(t)) {
      return absl::InvalidArgumentError(absl::StrCat("the program's tensor ", t, " does not fit the statement"));
    }
  }
  for (const Alloc& a : p_.buffers) buffers_[a.buffer] = a.shape;  // the runtime sizes them in order
  if (!p_.body) return absl::InvalidArgumentError("the program has no body");
  std::vector<const For*> loops;
  std::vector<int64_t> order;
  MT_RETURN_IF_ERROR(Collect(p_.body, &loops, &order));
  size_t depth = 0;
  bool kernel = false;
  for (const Node& n : nodes_) {
    depth = std::max(depth, n.loops.size());
    if (const auto* k = std::get_if<Compute>(&n.stmt->node)) {
      kernel = true;
      np_ = std::max(np_, k->tile.size());
    }
  }
  if (!kernel) return absl::InvalidArgumentError("the program has no kernel call");
  nt_ = 2 * depth + 1;
  inst_frame_.emplace(ctx_, na_ + nt_);
  for (const Node& n : nodes_) inst_.push_back(InstSet(*inst_frame_, 0, na_, n));
  std::vector<std::pair<unsigned, unsigned>> same;
  for (unsigned a = 0; a < na_; ++a) same.emplace_back(a, a);
  before_ = isl::manage(isl_map_lex_lt(inst_frame_->space().copy()))
                .intersect(ir::Equalities(inst_frame_->space(), inst_frame_->space(), same));

  const std::string& out = prob_.output.tensor;
  const bool accumulate = prob_.assign == ir::Problem::Assign::kAccumulate;
  if (p_.accumulate != accumulate) {
    return Unsound(out, "", std::vector<int64_t>(na_, 0),
                   absl::StrCat("every rank starts ", out, accumulate ? " from zero but the statement accumulates ('+=')"
                                                                        : " from its old values but the statement assigns ('=')"));
  }
  // Offsets and shapes of every node, as the runtime indexes them.
  auto valid_axes = [&](const std::vector<int>& axes) {
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] < 0 || axes[i] >= static_cast<int>(na_)) return false;
      for (size_t j = 0; j < i; ++j) {
        if (axes[j] == axes[i]) return false;
      }
    }
    return true;
  };
  const absl::Status no_offsets =
      absl::InvalidArgumentError("the program has no offsets (lowered with LowerOptions::offsets = false)");
  for (const Node& n : nodes_) {
    if (const auto* t = std::get_if<Transfer>(&n.stmt->node)) {
      if (prob_.FirstAccess(t->tensor) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("a transfer moves unknown tensor ", t->tensor));
      }
      const size_t rank = prob_.Shape(t->tensor).size();
      const std::vector<Expr>& offset = t->pattern.kind == Kind::kAllGather ? t->global.offset : t->src.offset;
      if (offset.empty() && rank > 0) return no_offsets;
      std::string why;
      if (prob_.IsOutput(t->tensor)) why = "fetches the output as an input";
      if (BufferShape(t->buffer) == nullptr) why = absl::StrCat("fills ", t->buffer, ", which is never allocated");
      else if (BufferShape(t->buffer)->size() != rank) why = absl::StrCat("fills ", t->buffer, " of the wrong rank");
      if (offset.size() != rank) why = "has a box of the wrong rank";
      if (t->pattern.kind != Kind::kAllGather && t->source.size() != na_) why = "names a source of the wrong rank";
      if (!valid_axes(t->pattern.axes) ||
          ((t->pattern.kind == Kind::kShift || t->pattern.kind == Kind::kAllGather ||
            t->pattern.kind == Kind::kBroadcast) && t->pattern.axes.empty())) {
        why = "has invalid mesh axes";
      }
      if (!why.empty()) return Unsound(t->tensor, t->loop, {}, absl::StrCat("the transfer ", why));
    } else if (const auto* r = std::get_if<Reduce>(&n.stmt->node)) {
      const size_t rank = prob_.Shape(prob_.output.tensor).size();
      if (r->global.offset.empty() && rank > 0) return no_offsets;
      std::string why;
      if (r->tensor != prob_.output.tensor) why = absl::StrCat("adds into ", r->tensor, ", which is not the output");
      else if (BufferShape(r->buffer) == nullptr) why = absl::StrCat("reads ", r->buffer, ", which is never allocated");
      else if (BufferShape(r->buffer)->size() != rank) why = absl::StrCat("reads ", r->buffer, " of the wrong rank");
      else if (r->global.offset.size() != rank) why = "has a box of the wrong rank";
      else if (!valid_axes(r->pattern.axes)) why = "has invalid mesh axes";
      if (!why.empty()) return Unsound(r->tensor, r->loop, {}, absl::StrCat("the reduction ", why));
    } else if (const auto* k = std::get_if<Compute>(&n.stmt->node)) {
      std::string why;
      if (k->in.size() != prob_.operands.size()) why = "has the wrong number of operands";
      if (k->sum != (prob_.combine == ir::Problem::Combine::kSum)) why = k->sum ? "adds its operands" : "multiplies its operands";
      for (size_t i = 0; i <= k->in.size() && why.empty(); ++i) {
        const Operand& o = i == 0 ? k->out : k->in[i - 1];
        const std::string& want = i == 0 ? prob_.output.tensor : prob_.operands[i - 1].tensor;
        if (o.tensor != want) {
          why = absl::StrCat("reads ", o.tensor, " where the statement has ", want);
          break;
        }
        if (o.slice.offset.empty() && !o.dims.empty()) return no_offsets;
        const std::vector<int64_t>* shape = OperandShape(o);
        if (shape == nullptr) {
          why = absl::StrCat("uses ", o.buffer, ", which is never allocated");
        } else if (o.dims.size() != shape->size() || o.slice.offset.size() != shape->size()) {
          why = absl::StrCat("indexes ", o.buffer, " with the wrong rank");
        }
      }
      if (!why.empty()) return Unsound(prob_.output.tensor, "", {}, absl::StrCat("the kernel call ", why));
    }
  }
  return absl::OkStatus();
}

// ---- checks ------------------------------------------------------------------------

absl::Status Validator::CheckHolders() {
  const std::string& out = prob_.output.tensor;
  const std::vector<int64_t> shape = prob_.Shape(out);
  const size_t nd = shape.size();
  Frame f(ctx_, na_ + nd);
  MT_ASSIGN_OR_RETURN(const isl::set held, Holds(out, f, f.Vars(0, na_), f.Vars(na_, nd)));
  const Frame e(ctx_, nd);
  const isl::set orphans = e.InBox(e.Vars(0, nd), shape).subtract(Split(held, na_).range());
  if (!orphans.is_empty()) {
    return Unsound(out, "", {}, absl::StrCat(Elem(out, Witness(orphans)), " is held by no rank"));
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckTransfer(size_t index) {
  const Node& n = nodes_[index];
  const Transfer& t = std::get<Transfer>(n.stmt->node);
  const std::vector<int64_t>& shape = *BufferShape(t.buffer);
  const TensorInfo& info = *p_.Tensor(t.tensor);
  const unsigned na = na_, nt = nt_, nd = shape.size();
  // [r, ts, b, s, e]
  const unsigned b0 = na + nt, s0 = b0 + nd, e0 = s0 + na;
  const Frame f(ctx_, e0 + nd);
  const std::vector<isl::pw_aff> r = f.Vars(0, na), b = f.Vars(b0, nd), s = f.Vars(s0, na), e = f.Vars(e0, nd);
  const std::vector<isl::pw_aff> loops = LoopValues(f, na, n);
  const isl::set base = InstSet(f, 0, na, n).intersect(f.InBox(b, shape));
  MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> start_s, BlockStart(t.tensor, f, s));
  const isl::set s_holds_e = f.InBox(s, p_.axis_sizes).intersect(f.InBox([&] {
    std::vector<isl::pw_aff> loc;
    for (size_t d = 0; d < nd; ++d) loc.push_back(e[d].sub(start_s[d]));
    return loc;
  }(), info.local_shape));
  const Frame g_frame(ctx_, na + nt + na);  // [r, ts, g]
  const std::vector<isl::pw_aff> gr = g_frame.Vars(0, na), gg = g_frame.Vars(na + nt, na);
  const std::vector<isl::pw_aff> gloops = LoopValues(g_frame, na, n);
  const isl::set g_base = InstSet(g_frame, 0, na, n);

  // Reports a violation found over [r, ts, b, ...] (dims past b are projected out).
  auto at = [&](const std::vector<int64_t>& w) { return RankText(Slice(w, 0, na)) + AtText(n, Slice(w, na, nt)); };
  auto witness_rtb = [&](const isl::set& v) { return Witness(ProjectOut(v, s0, na + nd)); };
  // The box copied from the shard of the rank `from` at local offset `loc`: every element
  // must lie in that shard.
  auto check_copy = [&](const isl::set& exec,
                        const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& from_at,
                        const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& loc_at,
                        const std::vector<isl::pw_aff>& from, const std::vector<isl::pw_aff>& loc) -> absl::Status {
    const isl::set outside = exec.intersect(InMesh(f, from)).subtract(f.InBox(loc, info.local_shape));
    if (outside.is_empty()) return absl::OkStatus();
    const std::vector<int64_t> w = witness_rtb(outside);
    const std::vector<int64_t> src = from_at(w), l = loc_at(w), st = BlockStartAt(t.tensor, src);
    std::vector<int64_t> elem;
    for (size_t d = 0; d < nd; ++d) elem.push_back(st[d] + l[d]);
    return Unsound(t.tensor, t.loop, Slice(w, 0, na),
                   absl::StrCat(at(w), " reads ", Elem(t.tensor, elem), " from ", RankText(src),
                                ", which does not hold it (", t.pattern.ToString(), " of ", t.buffer, ")"));
  };
  auto coords_of = [&](const std::vector<int64_t>& w) { return Slice(w, 0, na); };
  auto ts_of = [&](const std::vector<int64_t>& w) { return Slice(w, na, nt); };
  auto pos_of = [&](const std::vector<int64_t>& w) { return Slice(w, b0, nd); };

  // Point-to-point from source(W) with the box at W's offset, W and the loop values given
  // (the receiver, or for a Shift the rank whose fetch at time 0 the ring carries here).
  auto point_to_point = [&](const std::vector<isl::pw_aff>& who, const std::vector<isl::pw_aff>& when,
                            const isl::set& exec) -> absl::StatusOr<isl::set> {
    const Env env = MakeEnv(who, &n, when);
    MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> src, ToPwAffs(t.source, f, env));
    MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off, ToPwAffs(t.src.offset, f, env));
    const std::vector<isl::pw_aff> loc = Plus(off, b);
    std::vector<isl::pw_aff> elem;
    for (size_t d = 0; d < nd; ++d) elem.push_back(start_s[d].add(loc[d]));
    return exec.intersect(f.Equal(s, src)).intersect(f.Equal(e, elem)).intersect(s_holds_e);
  };
  auto check_point_to_point = [&](const isl::set& exec) -> absl::Status {
    const Env env = MakeEnv(r, &n, loops);
    MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> src, ToPwAffs(t.source, f, env));
    MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off, ToPwAffs(t.src.offset, f, env));
    const isl::set nowhere = exec.subtract(InMesh(f, src));
    if (!nowhere.is_empty()) {
      const std::vector<int64_t> w = witness_rtb(nowhere);
      return Unsound(t.tensor, t.loop, coords_of(w),
                     absl::StrCat(at(w), " receives from ",
                                  RankText(Eval(t.source, coords_of(w), &n, ts_of(w))), ", which is outside the mesh"));
    }
    return check_copy(
        exec, [&](const std::vector<int64_t>& w) { return Eval(t.source, coords_of(w), &n, ts_of(w)); },
        [&](const std::vector<int64_t>& w) {
          std::vector<int64_t> l = Eval(t.src.offset, coords_of(w), &n, ts_of(w));
          for (size_t d = 0; d < nd; ++d) l[d] += pos_of(w)[d];
          return l;
        },
        src, Plus(off, b));
  };

  isl::set content = f.None();
  switch (t.pattern.kind) {
    case Kind::kLocal: {
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off, ToPwAffs(t.src.offset, f, MakeEnv(r, &n, loops)));
      MT_RETURN_IF_ERROR(check_copy(
          base, coords_of,
          [&](const std::vector<int64_t>& w) {
            std::vector<int64_t> l = Eval(t.src.offset, coords_of(w), &n, ts_of(w));
            for (size_t d = 0; d < nd; ++d) l[d] += pos_of(w)[d];
            return l;
          },
          r, Plus(off, b)));
      std::vector<isl::pw_aff> elem;
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> start_r, BlockStart(t.tensor, f, r));
      for (size_t d = 0; d < nd; ++d) elem.push_back(start_r[d].add(off[d]).add(b[d]));
      content = base.intersect(f.Equal(s, r)).intersect(f.Equal(e, elem)).intersect(s_holds_e);
      break;
    }
    case Kind::kBroadcast: {
      const std::vector<int>& axes = t.pattern.axes;
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> root, ToPwAffs(t.source, f, MakeEnv(r, &n, loops)));
      auto root_at = [&](const std::vector<int64_t>& w) { return Eval(t.source, coords_of(w), &n, ts_of(w)); };
      const isl::set nowhere = base.subtract(InMesh(f, root));
      if (!nowhere.is_empty()) {
        const std::vector<int64_t> w = witness_rtb(nowhere);
        return Unsound(t.tensor, t.loop, coords_of(w),
                       absl::StrCat(at(w), " takes root ", RankText(root_at(w)), ", which is outside the mesh"));
      }
      isl::set outside = f.None();
      for (size_t a = 0; a < na; ++a) {
        if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end()) {
          outside = outside.unite(base.intersect(root[a].ne_set(r[a])));
        }
      }
      if (!outside.is_empty()) {
        const std::vector<int64_t> w = witness_rtb(outside);
        return Unsound(t.tensor, t.loop, coords_of(w),
                       absl::StrCat(at(w), " takes root ", RankText(root_at(w)), ", which is not in its ",
                                    t.pattern.ToString(), " group"));
      }
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> root_r, ToPwAffs(t.source, g_frame, MakeEnv(gr, &n, gloops)));
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> root_g, ToPwAffs(t.source, g_frame, MakeEnv(gg, &n, gloops)));
      const isl::set disagree = g_base.intersect(Group(g_frame, gr, gg, axes)).intersect(g_frame.Differ(root_r, root_g));
      if (!disagree.is_empty()) {
        const std::vector<int64_t> w = Witness(disagree);
        const std::vector<int64_t> g = Slice(w, na + nt, na);
        return Unsound(t.tensor, t.loop, coords_of(w),
                       absl::StrCat(at(w), " takes root ", RankText(root_at(w)), " but ", RankText(g),
                                    " of its group takes ", RankText(Eval(t.source, g, &n, ts_of(w)))));
      }
      // The root copies the box at its own offset.
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off, ToPwAffs(t.src.offset, f, MakeEnv(root, &n, loops)));
      MT_RETURN_IF_ERROR(check_copy(
          base, root_at,
          [&](const std::vector<int64_t>& w) {
            std::vector<int64_t> l = Eval(t.src.offset, root_at(w), &n, ts_of(w));
            for (size_t d = 0; d < nd; ++d) l[d] += pos_of(w)[d];
            return l;
          },
          root, Plus(off, b)));
      std::vector<isl::pw_aff> elem;
      for (size_t d = 0; d < nd; ++d) elem.push_back(start_s[d].add(off[d]).add(b[d]));
      content = base.intersect(f.Equal(s, root)).intersect(f.Equal(e, elem)).intersect(s_holds_e);
      break;
    }
    case Kind::kAllGather: {
      const std::vector<int>& axes = t.pattern.axes;
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off_r,
                          ToPwAffs(t.global.offset, g_frame, MakeEnv(gr, &n, gloops)));
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off_g,
                          ToPwAffs(t.global.offset, g_frame, MakeEnv(gg, &n, gloops)));
      const isl::set disagree = g_base.intersect(Group(g_frame, gr, gg, axes)).intersect(g_frame.Differ(off_r, off_g));
      if (!disagree.is_empty()) {
        const std::vector<int64_t> w = Witness(disagree);
        const std::vector<int64_t> g = Slice(w, na + nt, na);
        return Unsound(t.tensor, t.loop, coords_of(w),
                       absl::StrCat(at(w), " gathers ", Elem(t.tensor, Eval(t.global.offset, coords_of(w), &n, ts_of(w))),
                                    " +: [", Join(shape), "] but ", RankText(g), " of its group gathers ",
                                    Elem(t.tensor, Eval(t.global.offset, g, &n, ts_of(w)))));
      }
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off, ToPwAffs(t.global.offset, f, MakeEnv(r, &n, loops)));
      content = base.intersect(f.Equal(e, Plus(off, b))).intersect(Group(f, r, s, axes)).intersect(s_holds_e);
      break;
    }
    case Kind::kShift: {
      std::vector<size_t> time;
      for (size_t k = 0; k < n.loops.size(); ++k) {
        if (n.loops[k]->var == t.time_loop) time.push_back(k);
      }
      if (time.empty()) {  // never turns: a point-to-point fetch every time
        MT_RETURN_IF_ERROR(check_point_to_point(base));
        MT_ASSIGN_OR_RETURN(content, point_to_point(r, loops, base));
        break;
      }
      const size_t k = time[0];
      if (time.size() > 1 || k + 1 != n.loops.size() || n.loops[k]->lo.value() != 0) {
        return absl::UnimplementedError(absl::StrCat("validation models a Shift whose time loop is the innermost loop "
                                                     "around it and starts at 0; ",
                                                     t.tensor, "'s turns along ", t.time_loop));
      }
      for (size_t other = 0; other < nodes_.size(); ++other) {
        const Node& m = nodes_[other];
        const auto* x = std::get_if<Transfer>(&m.stmt->node);
        const auto* z = std::get_if<Alloc>(&m.stmt->node);
        if (other != index && ((x != nullptr && x->buffer == t.buffer) || (z != nullptr && z->zero && z->buffer == t.buffer))) {
          return absl::UnimplementedError(
              absl::StrCat("validation models a Shift whose buffer nothing else writes; ", t.buffer, " has other writers"));
        }
      }
      const isl::pw_aff v = loops[k];
      const isl::set start = base.intersect(v.eq_set(f.Cst(0))), turned = base.subtract(start);
      MT_RETURN_IF_ERROR(check_point_to_point(start));
      MT_ASSIGN_OR_RETURN(const isl::set fetched, point_to_point(r, loops, start));
      // At time v the buffer holds what the rank at +v*shift along the axis fetched at 0.
      const int axis = t.pattern.axes[0];
      std::vector<isl::pw_aff> who = r, when = loops;
      who[axis] = r[axis].add(v.scale(t.pattern.shift)).mod(p_.axis_sizes[axis]);
      when[k] = f.Cst(0);
      MT_ASSIGN_OR_RETURN(const isl::set carried, point_to_point(who, when, turned));
      content = fetched.unite(carried);
      break;
    }
    default: {  // SendRecv and any other kind: the executor's point-to-point fetch
      MT_RETURN_IF_ERROR(check_point_to_point(base));
      MT_ASSIGN_OR_RETURN(content, point_to_point(r, loops, base));
      break;
    }
  }
  contents_[index] = Split(content, b0 + nd);
  return absl::OkStatus();
}

absl::Status Validator::CheckReduce(size_t index) {
  const Node& n = nodes_[index];
  const Reduce& red = std::get<Reduce>(n.stmt->node);
  if (red.pattern.kind != Kind::kAllReduce && red.pattern.kind != Kind::kReduce &&
      red.pattern.kind != Kind::kReduceScatter) {
    return absl::OkStatus();  // each rank adds its own partial results: nothing to agree on
  }
  const unsigned na = na_, nt = nt_;
  const Frame g_frame(ctx_, na + nt + na);
  const std::vector<isl::pw_aff> gr = g_frame.Vars(0, na), gg = g_frame.Vars(na + nt, na);
  const std::vector<isl::pw_aff> loops = LoopValues(g_frame, na, n);
  MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off_r, ToPwAffs(red.global.offset, g_frame, MakeEnv(gr, &n, loops)));
  MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off_g, ToPwAffs(red.global.offset, g_frame, MakeEnv(gg, &n, loops)));
  const isl::set disagree = InstSet(g_frame, 0, na, n)
                                .intersect(Group(g_frame, gr, gg, red.pattern.axes))
                                .intersect(g_frame.Differ(off_r, off_g));
  if (!disagree.is_empty()) {
    const std::vector<int64_t> w = Witness(disagree);
    const std::vector<int64_t> r = Slice(w, 0, na), ts = Slice(w, na, nt), g = Slice(w, na + nt, na);
    return Unsound(red.tensor, red.loop, r,
                   absl::StrCat(RankText(r), AtText(n, ts), " reduces into ", Elem(red.tensor, Eval(red.global.offset, r, &n, ts)),
                                " +: [", Join(*BufferShape(red.buffer)), "] but ", RankText(g), " of its ",
                                red.pattern.ToString(), " group into ",
                                Elem(red.tensor, Eval(red.global.offset, g, &n, ts))));
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckGemm(const Node& n, const Compute& k) {
  // runtime/rank.cc hands matmul-shaped calls to BLAS, which walks i, j and k only.
  if (k.kernel.rfind("matmul", 0) != 0 || k.in.size() != 2 || k.out.dims.size() < 2) return absl::OkStatus();
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
  const size_t i = pos(k.out.dims[k.out.dims.size() - 2]), j = pos(k.out.dims.back()), kx = pos(kk_name);
  if (i == k.tile.size() || j == k.tile.size() || kx == k.tile.size()) {
    return Unsound(out, "", {}, "the matmul kernel call's tile lacks one of its i, j, k indices");
  }
  auto strides = [&](const Operand& o) {
    const std::vector<int64_t>& shape = *OperandShape(o);
    std::vector<int64_t> st(shape.size(), 1);
    for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * shape[d + 1];
    std::vector<int64_t> out_strides;
    for (const auto& [idx, ext] : k.tile) {
      int64_t s = 0;
      for (size_t d = 0; d < o.dims.size(); ++d) {
        if (o.dims[d] == idx) s += st[d];
      }
      out_strides.push_back(s);
    }
    return out_strides;
  };
  const std::vector<int64_t> so = strides(k.out), sa = strides(k.in[0]), sb = strides(k.in[1]);
  const int64_t m = k.tile[i].second, nn = k.tile[j].second, kk = k.tile[kx].second;
  // GemmKernel's own tests: when one fails it falls back to the generic loop.
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
  // BLAS runs: it computes the tile's product only if nothing else varies.
  std::string why;
  if (k.sum) why = "adds its operands but BLAS multiplies them";
  for (size_t x = 0; x < k.tile.size(); ++x) {
    if (x != i && x != j && x != kx && k.tile[x].second > 1) {
      why = absl::StrCat("BLAS ignores index ", k.tile[x].first, " of the tile");
    }
  }
  if (i == j) why = "BLAS needs distinct i and j";
  if (sa[j] != 0 && nn > 1) why = absl::StrCat("BLAS ignores how ", k.in[0].tensor, " moves along ", k.tile[j].first);
  if (sb[i] != 0 && m > 1) why = absl::StrCat("BLAS ignores how ", k.in[1].tensor, " moves along ", k.tile[i].first);
  if (!why.empty()) {
    (void)n;
    return Unsound(out, "", {}, absl::StrCat("the ", k.kernel, " kernel call computes something else than its tile: ", why));
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckKernel(size_t index) {
  const Node& n = nodes_[index];
  const Compute& k = std::get<Compute>(n.stmt->node);
  MT_RETURN_IF_ERROR(CheckGemm(n, k));
  const unsigned na = na_, nt = nt_, np = np_, nk = na + nt + np;
  const Frame kf(ctx_, nk);  // [r, ts, p]
  const Frame& inst = *inst_frame_;
  const std::vector<isl::pw_aff> r = kf.Vars(0, na);
  isl::set kbase = InstSet(kf, 0, na, n);
  for (size_t j = 0; j < np; ++j) {
    kbase = kbase.intersect(j < k.tile.size() ? kf.Within(kf.Var(na + nt + j), 0, k.tile[j].second)
                                               : kf.Var(na + nt + j).eq_set(kf.Cst(0)));
  }
  const Env env = MakeEnv(r, &n, LoopValues(kf, na, n));
  auto at = [&](const std::vector<int64_t>& w) { return RankText(Slice(w, 0, na)) + AtText(n, Slice(w, na, nt)); };
  const isl::map to_inst = Prefix(kf, inst, na + nt);  // [r, ts, p] -> [r, ts]

  for (size_t i = 0; i <= k.in.size(); ++i) {
    const Operand& o = i == 0 ? k.out : k.in[i - 1];
    const std::vector<int64_t>& shape = *OperandShape(o);
    const unsigned nd = shape.size();
    const bool shard = o.buffer == o.tensor;
    // Buffer positions read (or written): offset + the tile point along each dim's index.
    MT_ASSIGN_OR_RETURN(std::vector<isl::pw_aff> pos, ToPwAffs(o.slice.offset, kf, env));
    for (size_t d = 0; d < nd; ++d) {
      for (size_t j = 0; j < k.tile.size(); ++j) {
        if (k.tile[j].first == o.dims[d]) pos[d] = pos[d].add(kf.Var(na + nt + j));
      }
    }
    const isl::set outside = kbase.subtract(kf.InBox(pos, shape));
    if (!outside.is_empty()) {
      const std::vector<int64_t> w = Witness(outside);
      std::vector<int64_t> b = Eval(o.slice.offset, Slice(w, 0, na), &n, Slice(w, na, nt));
      for (size_t d = 0; d < nd; ++d) {
        for (size_t j = 0; j < k.tile.size(); ++j) {
          if (k.tile[j].first == o.dims[d]) b[d] += w[na + nt + j];
        }
      }
      return Unsound(o.tensor, "", Slice(w, 0, na),
                     absl::StrCat(at(w), " has the kernel ", i == 0 ? "write " : "read ", Elem(o.buffer, b),
                                  ", outside ", shard ? "its shard" : "the buffer", " of shape [", Join(shape), "]"));
    }
    const Frame pf(ctx_, nk + nd);  // [r, ts, p, b]
    isl::set pos_set = InsertDims(kbase, nk, nd);
    {
      std::vector<isl::pw_aff> pos_p;
      const Env penv = MakeEnv(pf.Vars(0, na), &n, LoopValues(pf, na, n));
      MT_ASSIGN_OR_RETURN(pos_p, ToPwAffs(o.slice.offset, pf, penv));
      for (size_t d = 0; d < nd; ++d) {
        for (size_t j = 0; j < k.tile.size(); ++j) {
          if (k.tile[j].first == o.dims[d]) pos_p[d] = pos_p[d].add(pf.Var(na + nt + j));
        }
      }
      pos_set = pos_set.intersect(pf.Equal(pf.Vars(nk, nd), pos_p));
    }
    const isl::map position = Split(pos_set, nk);  // [r, ts, p] -> [b]
    positions_[index].push_back(position);

    // Which instances of which nodes last wrote `o.buffer` before each kernel instance.
    auto writes = [&](const Node& m) {
      if (const auto* x = std::get_if<Transfer>(&m.stmt->node)) return x->buffer == o.buffer;
      if (const auto* z = std::get_if<Alloc>(&m.stmt->node)) return z->zero && z->buffer == o.buffer;
      if (const auto* c = std::get_if<Compute>(&m.stmt->node)) return c->out.buffer == o.buffer && c->out.buffer != c->out.tensor;
      return false;
    };
    if (i == 0) {
      if (shard) continue;
      // A partial-result buffer: accumulated into only after being zeroed.
      isl::set zeros = inst.None();
      for (size_t m = 0; m < nodes_.size(); ++m) {
        const auto* z = std::get_if<Alloc>(&nodes_[m].stmt->node);
        if (z != nullptr && z->zero && z->buffer == o.buffer) zeros = zeros.unite(inst_[m]);
      }
      const isl::set unzeroed = inst_[index].subtract(before_.intersect_domain(zeros).range());
      if (!unzeroed.is_empty()) {
        const std::vector<int64_t> w = Witness(unzeroed);
        return Unsound(o.tensor, "", Slice(w, 0, na),
                       absl::StrCat(at(w), " accumulates into ", o.buffer, " before it is ever zeroed"));
      }
      continue;
    }
    if (shard) {
      // The rank's own shard: element = block start + position.
      const Frame sf(ctx_, nk + na + nd);  // [r, ts, p, s, e]
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> start, BlockStart(o.tensor, sf, sf.Vars(0, na)));
      MT_ASSIGN_OR_RETURN(std::vector<isl::pw_aff> spos,
                          ToPwAffs(o.slice.offset, sf, MakeEnv(sf.Vars(0, na), &n, LoopValues(sf, na, n))));
      for (size_t d = 0; d < nd; ++d) {
        for (size_t j = 0; j < k.tile.size(); ++j) {
          if (k.tile[j].first == o.dims[d]) spos[d] = spos[d].add(sf.Var(na + nt + j));
        }
      }
      isl::set read = InsertDims(kbase, nk, na + nd);
      read = read.intersect(sf.Equal(sf.Vars(nk, na), sf.Vars(0, na)))
                 .intersect(sf.Equal(sf.Vars(nk + na, nd), Plus(start, spos)));
      reads_[index].push_back(Split(read, nk));
      last_writers_[index].push_back(std::nullopt);
      continue;
    }
    isl::set writers = inst.None();
    isl::map content;
    bool any_content = false;
    for (size_t m = 0; m < nodes_.size(); ++m) {
      if (!writes(nodes_[m])) continue;
      writers = writers.unite(inst_[m]);
      const auto* x = std::get_if<Transfer>(&nodes_[m].stmt->node);
      if (x == nullptr || x->tensor != o.tensor) continue;  // zeroed, or another tensor: no element of o's
      if (contents_.count(m) == 0) continue;
      content = any_content ? content.unite(contents_.at(m)) : contents_.at(m);
      any_content = true;
    }
    const isl::map last = before_.intersect_domain(writers).intersect_range(inst_[index]).reverse().lexmax();
    const isl::set unfilled = inst_[index].subtract(last.domain());
    if (!unfilled.is_empty()) {
      const std::vector<int64_t> w = Witness(unfilled);
      return Unsound(o.tensor, "", Slice(w, 0, na),
                     absl::StrCat(at(w), " has the kernel read ", o.buffer, " before any transfer fills it"));
    }
    last_writers_[index].push_back(last);
    // [r, ts, p] -> [w, b] -> [s, e]
    const isl::map where = FlatRangeProduct(to_inst.apply_range(last), position);
    const isl::map read =
        any_content ? where.apply_range(content) : Split(Frame(ctx_, nk + na + nd).None(), nk);  // nothing defined
    reads_[index].push_back(read);
    const isl::set undefined = kbase.subtract(read.domain());
    if (!undefined.is_empty()) {
      const std::vector<int64_t> w = Witness(undefined);
      const std::vector<int64_t> wr = Slice(w, 0, na);
      // Which node wrote the buffer last, and what position is read.
      const isl::set wpoint = PointSet(inst, Slice(w, 0, na + nt));
      const std::vector<int64_t> lw = ir::SamplePoint(last.intersect_domain(wpoint).range());
      const std::vector<int64_t> b = ir::SamplePoint(position.intersect_domain(PointSet(kf, w)).range());
      const Node* m = NodeAt(Slice(lw, na, nt));
      std::string why = "what the last writer left there";
      std::string tensor = o.tensor, loop;
      if (m != nullptr) {
        if (const auto* x = std::get_if<Transfer>(&m->stmt->node)) {
          loop = x->loop;
          if (x->tensor != o.tensor) {
            why = absl::StrCat("an element of ", x->tensor, " (", x->pattern.ToString(), AtText(*m, Slice(lw, na, nt)), ")");
          } else if (x->pattern.kind == Kind::kAllGather) {
            std::vector<int64_t> e = Eval(x->global.offset, wr, m, Slice(lw, na, nt));
            for (size_t d = 0; d < nd; ++d) e[d] += b[d];
            why = absl::StrCat(Elem(o.tensor, e), ", which no rank of its ", x->pattern.ToString(),
                               " group holds (stale data)");
          } else {
            why = absl::StrCat("data its ", x->pattern.ToString(), " did not deliver");
          }
        } else if (std::get_if<Alloc>(&m->stmt->node) != nullptr) {
          why = "zeros";
        } else {
          why = "partial results of the kernel";
        }
      }
      return Unsound(tensor, loop, wr,
                     absl::StrCat(at(w), " has the kernel read ", Elem(o.buffer, b), ", which holds ", why));
    }
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckInstances() {
  const std::string& out_tensor = prob_.output.tensor;
  const std::vector<int64_t> out_shape = prob_.Shape(out_tensor);
  const unsigned na = na_, nt = nt_, np = np_, nd = out_shape.size();
  const unsigned nk = na + nt + np, npath = nk + nt;
  const Frame path_frame(ctx_, npath);
  const Frame kf(ctx_, nk);
  const Frame& inst = *inst_frame_;
  // Paths: [r, ts_K, p, ts_R, q, o] (ts_R = 0 for the kernel's direct writes).
  const unsigned q0 = npath, o0 = q0 + na;
  const Frame f(ctx_, o0 + nd);
  const std::vector<isl::pw_aff> r = f.Vars(0, na), q = f.Vars(q0, na), o = f.Vars(o0, nd);
  isl::set paths = f.None();
  std::vector<std::string> out_loops;  // the loops of the reductions that carry the output
  for (size_t ki = 0; ki < nodes_.size(); ++ki) {
    const auto* k = std::get_if<Compute>(&nodes_[ki].stmt->node);
    if (k == nullptr) continue;
    const Node& n = nodes_[ki];
    isl::set kbase = InstSet(f, 0, na, n);
    for (size_t j = 0; j < np; ++j) {
      kbase = kbase.intersect(j < k->tile.size() ? f.Within(f.Var(na + nt + j), 0, k->tile[j].second)
                                                 : f.Var(na + nt + j).eq_set(f.Cst(0)));
    }
    MT_ASSIGN_OR_RETURN(std::vector<isl::pw_aff> pos, ToPwAffs(k->out.slice.offset, f, MakeEnv(r, &n, LoopValues(f, na, n))));
    for (size_t d = 0; d < nd; ++d) {
      for (size_t j = 0; j < k->tile.size(); ++j) {
        if (k->tile[j].first == k->out.dims[d]) pos[d] = pos[d].add(f.Var(na + nt + j));
      }
    }
    if (k->out.buffer == k->out.tensor) {
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> start, BlockStart(out_tensor, f, r));
      isl::set direct = kbase.intersect(f.Equal(q, r)).intersect(f.Equal(o, Plus(start, pos)));
      for (size_t j = 0; j < nt; ++j) direct = direct.intersect(f.Var(nk + j).eq_set(f.Cst(0)));
      paths = paths.unite(direct);
      continue;
    }
    // Through a partial buffer: every reduction of it after the kernel instance and before
    // the buffer is zeroed again carries the contribution.
    isl::set zeros = inst.None();
    for (size_t m = 0; m < nodes_.size(); ++m) {
      const auto* z = std::get_if<Alloc>(&nodes_[m].stmt->node);
      if (z != nullptr && z->zero && z->buffer == k->out.buffer) zeros = zeros.unite(inst_[m]);
    }
    for (size_t ri = 0; ri < nodes_.size(); ++ri) {
      const auto* red = std::get_if<Reduce>(&nodes_[ri].stmt->node);
      if (red == nullptr || red->buffer != k->out.buffer) continue;
      const Node& rn = nodes_[ri];
      out_loops.push_back(red->loop);
      const isl::map after = before_.intersect_domain(inst_[ki]).intersect_range(inst_[ri]);
      const isl::map between = before_.intersect_domain(inst_[ki])
                                   .intersect_range(zeros)
                                   .apply_range(before_.intersect_domain(zeros).intersect_range(inst_[ri]));
      // [r, ts_K, r', ts_R] with r' = r -> [r, ts_K, ts_R], then room for p, q, o.
      isl::set carried = Flatten(after.subtract(between));
      carried = ProjectOut(carried, na + nt, na);
      carried = InsertDims(carried, na + nt, np);
      carried = InsertDims(carried, npath, na + nd);
      const std::vector<isl::pw_aff> rloops = LoopValues(f, nk, rn);
      std::vector<isl::pw_aff> off_who = r;
      if (red->pattern.kind == Kind::kAllReduce) off_who = q;  // each member adds at its own offset
      MT_ASSIGN_OR_RETURN(const std::vector<isl::pw_aff> off, ToPwAffs(red->global.offset, f, MakeEnv(off_who, &rn, rloops)));
      isl::set reach = carried.intersect(kbase).intersect(f.Equal(o, Plus(off, pos)));
      switch (red->pattern.kind) {
        case Kind::kAllReduce:
        case Kind::kReduce:
        case Kind::kReduceScatter:
          reach = reach.intersect(Group(f, r, q, red->pattern.axes));
          break;
        default:
          reach = reach.intersect(f.Equal(q, r));
      }
      MT_ASSIGN_OR_RETURN(const isl::set held, Holds(out_tensor, f, q, o));
      paths = paths.unite(reach.intersect(held));
    }
  }
  const isl::map reach = Split(paths, npath);  // path -> [q, o]

  // The elements each path multiplies: [r, ts_K, p] -> [e_k], pulled back to paths.
  const isl::map path_to_k = Prefix(path_frame, kf, nk);
  isl::map tuple = reach;
  for (size_t i = 0; i < prob_.operands.size(); ++i) {
    std::optional<isl::map> read;
    for (const auto& [ki, maps] : reads_) {
      const isl::map e = ir::ProjectOutRange(maps[i], 0, na);
      read = read.has_value() ? read->unite(e) : e;
    }
    tuple = FlatRangeProduct(tuple, path_to_k.apply_range(*read));
  }
  // The statement: S -> [out(S), e_1(S), ..., e_n(S)].
  isl::map acc = c_.OperandAccess(0).intersect_domain(c_.domain());
  for (size_t i = 1; i <= prob_.operands.size(); ++i) acc = FlatRangeProduct(acc, c_.OperandAccess(i));
  acc = Anonymous(acc.intersect_domain(c_.domain()));
  const isl::set acc_range = acc.range();
  const isl::map tuple_o = ir::ProjectOutRange(tuple, 0, na);  // path -> [o, e...]
  const isl::set bad = tuple_o.subtract(tuple_o.intersect_range(acc_range)).domain();
  if (!bad.is_empty()) return ExplainBadTuple(tuple_o, acc_range, Witness(bad));

  // [q, S] -> path: every holder gets every instance of its elements exactly once.
  const Frame qf(ctx_, na);
  const isl::map to_instances = FlatProduct(Identity(qf), acc.reverse());  // [q, o, e] -> [q, S]
  const isl::map by_instance = tuple.apply_range(to_instances).reverse();
  const unsigned ni = prob_.indices.size();
  auto path_text = [&](const std::vector<int64_t>& w) {
    const Node* kn = NodeAt(Slice(w, na, nt));
    const Node* rn = NodeAt(Slice(w, nk, nt));
    std::string s = RankText(Slice(w, 0, na)) + (kn ? AtText(*kn, Slice(w, na, nt)) : "");
    if (rn != nullptr && rn != kn) {
      const Reduce& red = std::get<Reduce>(rn->stmt->node);
      absl::StrAppend(&s, " through ", red.pattern.ToString(), " of ", red.buffer, AtText(*rn, Slice(w, nk, nt)));
    }
    return s;
  };
  auto path_loop = [&](const std::vector<int64_t>& w) -> std::string {
    const Node* rn = NodeAt(Slice(w, nk, nt));
    if (rn == nullptr) return "";
    if (const auto* red = std::get_if<Reduce>(&rn->stmt->node)) return red->loop;
    return "";
  };
  if (!by_instance.is_single_valued()) {
    const isl::map first = by_instance.lexmin();
    const isl::map others = by_instance.subtract(first);
    const std::vector<int64_t> w = Witness(others.domain());
    const isl::set at = PointSet(Frame(ctx_, na + ni), w);
    const std::vector<int64_t> p1 = ir::SamplePoint(first.intersect_domain(at).range());
    const std::vector<int64_t> p2 = Witness(others.intersect_domain(at).range());
    const std::vector<int64_t> qr = Slice(w, 0, na), s = Slice(w, na, ni);
    return Unsound(out_tensor, path_loop(p2), qr,
                   absl::StrCat(RankText(qr), " receives ", InstanceText(s), " twice: from ", path_text(p1),
                                " and from ", path_text(p2)));
  }
  const isl::set got = by_instance.domain();
  // Who must get what: { [q, S] : q holds out(S) }.
  const Frame ho(ctx_, na + nd);
  MT_ASSIGN_OR_RETURN(const isl::set held, Holds(out_tensor, ho, ho.Vars(0, na), ho.Vars(na, nd)));
  const isl::map out_of = Anonymous(c_.OperandAccess(0).intersect_domain(c_.domain()));
  const isl::set need = Flatten(Split(held, na).apply_range(out_of.reverse()));
  const isl::set missing = need.subtract(got);
  if (!missing.is_empty()) {
    const std::vector<int64_t> w = Witness(missing);
    const std::vector<int64_t> qr = Slice(w, 0, na), s = Slice(w, na, ni);
    return Unsound(out_tensor, out_loops.empty() ? "" : out_loops[0], qr,
                   absl::StrCat(RankText(qr), " holds ", OutputText(s), " but never receives ", InstanceText(s)));
  }
  const isl::set extra = got.subtract(need);
  if (!extra.is_empty()) {
    const std::vector<int64_t> w = Witness(extra);
    const std::vector<int64_t> qr = Slice(w, 0, na), s = Slice(w, na, ni);
    return Unsound(out_tensor, "", qr,
                   absl::StrCat(RankText(qr), " receives ", InstanceText(s), " but does not hold its output"));
  }
  return absl::OkStatus();
}

absl::Status Validator::ExplainBadTuple(const isl::map& tuple_o, const isl::set& acc_range,
                                        const std::vector<int64_t>& path) {
  const std::string& out_tensor = prob_.output.tensor;
  const unsigned na = na_, nt = nt_, np = np_, nk = na + nt + np;
  const Frame path_frame(ctx_, nk + nt);
  const isl::set at = PointSet(path_frame, path);
  const std::vector<int64_t> tuple = Witness(tuple_o.intersect_domain(at).range().subtract(acc_range));
  // Components: the output, then each operand.
  std::vector<std::string> tensors = {out_tensor};
  std::vector<size_t> first = {0}, len = {prob_.Shape(out_tensor).size()};
  for (const ir::TensorAccess& a : prob_.operands) {
    first.push_back(first.back() + len.back());
    len.push_back(prob_.Shape(a.tensor).size());
    tensors.push_back(a.tensor);
  }
  auto comp = [&](const std::vector<int64_t>& t, size_t j) { return Slice(t, first[j], len[j]); };
  const Frame tf(ctx_, tuple.size());
  // Component j is the odd one out when the others belong to one statement instance; then
  // `needed[j]` is what that instance needs there.
  std::vector<size_t> suspects;
  std::map<size_t, std::vector<int64_t>> needed;
  for (size_t j = 0; j < tensors.size(); ++j) {
    isl::set s = acc_range;
    for (size_t x = 0; x < tuple.size(); ++x) {
      if (x >= first[j] && x < first[j] + len[j]) continue;
      s = s.intersect(tf.Var(x).eq_set(tf.Cst(tuple[x])));
    }
    if (!s.is_empty()) {
      suspects.push_back(j);
      needed[j] = comp(Witness(s), j);
    }
  }
  const std::vector<int64_t> rank = Slice(path, 0, na), kts = Slice(path, na, nt), rts = Slice(path, nk, nt);
  const Node* kn = NodeAt(kts);
  const Node* rn = NodeAt(rts);
  const size_t knode = kn - nodes_.data();
  const Compute& k = std::get<Compute>(kn->stmt->node);
  const std::string at_text = RankText(rank) + AtText(*kn, kts);
  // Where operand j's element came from: the transfer that filled its buffer, the rank it
  // sent from, and the element the program says that buffer position holds.
  struct Source {
    std::string loop, from;
    bool contradicts_claim = false;
  };
  auto source_of = [&](size_t j) {
    Source src;
    const Operand& o = k.in[j - 1];
    if (o.buffer == o.tensor) {
      src.from = "its own shard";
      return src;
    }
    const isl::set kpoint = PointSet(Frame(ctx_, nk), Slice(path, 0, nk));
    const std::vector<int64_t> se = Witness(reads_.at(knode)[j - 1].intersect_domain(kpoint).range());
    src.from = RankText(Slice(se, 0, na));
    const std::vector<int64_t> lw =
        ir::SamplePoint(last_writers_.at(knode)[j - 1]->intersect_domain(PointSet(*inst_frame_, Slice(path, 0, na + nt))).range());
    const Node* wn = NodeAt(Slice(lw, na, nt));
    if (wn == nullptr) return src;
    const Transfer& x = std::get<Transfer>(wn->stmt->node);
    src.loop = x.loop;
    // The transfer's own account of its box: global.offset + position.
    const std::vector<int64_t> b = ir::SamplePoint(positions_.at(knode)[j].intersect_domain(kpoint).range());
    std::vector<int64_t> claim = Eval(x.global.offset, rank, wn, Slice(lw, na, nt));
    if (claim.size() == b.size()) {
      for (size_t d = 0; d < b.size(); ++d) claim[d] += b[d];
      src.contradicts_claim = claim != comp(tuple, j);
    }
    return src;
  };
  std::vector<std::string> ins;
  for (size_t j = 1; j < tensors.size(); ++j) ins.push_back(Elem(tensors[j], comp(tuple, j)));
  const std::string product = absl::StrJoin(ins, Combine());
  size_t culprit = tensors.size();
  if (suspects.size() == 1) {
    culprit = suspects[0];
  } else {
    std::vector<size_t> contradicted;
    for (size_t j : suspects) {
      if (j > 0 && source_of(j).contradicts_claim) contradicted.push_back(j);
    }
    if (contradicted.size() == 1) culprit = contradicted[0];
  }
  if (culprit == 0) {
    const Reduce* red = rn != nullptr && rn != kn ? std::get_if<Reduce>(&rn->stmt->node) : nullptr;
    return Unsound(out_tensor, red ? red->loop : "", rank,
                   absl::StrCat(at_text, " adds ", product, " into ", Elem(out_tensor, comp(tuple, 0)),
                                red ? absl::StrCat(" (", red->pattern.ToString(), " of ", red->buffer, AtText(*rn, rts), ")")
                                    : "",
                                ", but it belongs to ", Elem(out_tensor, needed[0])));
  }
  if (culprit < tensors.size()) {
    const Source src = source_of(culprit);
    return Unsound(tensors[culprit], src.loop, rank,
                   absl::StrCat(at_text, " reads ", Elem(tensors[culprit], comp(tuple, culprit)), " from ", src.from,
                                " for ", Elem(out_tensor, comp(tuple, 0)), " += ", product, ", which needs ",
                                Elem(tensors[culprit], needed[culprit])));
  }
  return Unsound(out_tensor, "", rank,
                 absl::StrCat(at_text, " computes ", Elem(out_tensor, comp(tuple, 0)), " += ", product,
                              ", which is no instance of the statement"));
}

absl::Status Validator::Run() {
  MT_RETURN_IF_ERROR(CheckStructure());
  MT_RETURN_IF_ERROR(CheckHolders());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (std::holds_alternative<Transfer>(nodes_[i].stmt->node)) MT_RETURN_IF_ERROR(CheckTransfer(i));
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (std::holds_alternative<Reduce>(nodes_[i].stmt->node)) MT_RETURN_IF_ERROR(CheckReduce(i));
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (std::holds_alternative<Compute>(nodes_[i].stmt->node)) MT_RETURN_IF_ERROR(CheckKernel(i));
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

}  // namespace meshtune::codegen
