#include "search/closed_form.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "codegen/lower.h"
#include "codegen/pattern.h"
#include "codegen/patterns.h"
#include "codegen/simplify.h"
#include "ir/legality.h"
#include "ir/legality_closed_form.h"
#include "ir/transfer.h"

namespace meshtune::search {

using codegen::CommPattern;
using codegen::Expr;
using codegen::StmtPtr;
using ir::Computation;
using ir::LoopKind;

struct ClosedFormLowering::Plan {
  bool output = false;
  int depth = 0;  // serial loops around the statement
  StmtPtr alloc, stmt;
};

namespace {

// Questions decided by enumeration give up past this many points (isl answers instead).
constexpr int64_t kMaxPoints = int64_t{1} << 22;

absl::Status Outside(const std::string& what) {
  return absl::UnimplementedError(absl::StrCat("outside the closed forms: ", what));
}

// The schedule forms the closed forms cover (see the file comment); the reason otherwise.
absl::Status CheckForms(const Computation& c) {
  const ir::Problem& p = c.problem();
  std::map<std::string, int> accesses;
  ++accesses[p.output.tensor];
  for (const ir::TensorAccess& a : p.operands) ++accesses[a.tensor];
  for (const auto& [tensor, n] : accesses) {
    if (n > 1) return Outside(absl::StrCat(base::Excerpt(tensor), " is accessed more than once"));
  }
  const std::vector<ir::Loop>& loops = c.loops();
  bool tensorized = false;
  std::set<int> axes;
  for (const ir::Loop& l : loops) {
    if (l.kind == LoopKind::kTensorized) {
      tensorized = true;
    } else if (tensorized) {
      return Outside("a loop inside the kernel's loops");
    }
    if (l.kind == LoopKind::kDistributed &&
        (l.extent != c.mesh().axes[l.axis].size || !axes.insert(l.axis).second)) {
      return Outside(absl::StrCat("loop ", base::Excerpt(l.name), " does not cover its mesh axis"));
    }
    for (const std::string& by : l.rotate) {
      const int j = c.LoopIndex(by);
      if (j < 0 || loops[j].kind != LoopKind::kDistributed)
        return Outside(absl::StrCat("loop ", base::Excerpt(l.name), " turns with a serial loop"));
    }
    if (l.rotate_step != 1)
      return Outside(
          absl::StrCat("loop ", base::Excerpt(l.name), " rotates in steps of ", l.rotate_step));
  }
  // Per index, its loops of several iterations form a mixed radix reaching its extent.
  for (const std::string& index : p.indices) {
    std::vector<const ir::Loop*> digits;
    for (const ir::Loop& l : loops) {
      if (l.origin == index && l.extent > 1) digits.push_back(&l);
    }
    std::sort(digits.begin(), digits.end(),
              [](const ir::Loop* a, const ir::Loop* b) { return a->stride > b->stride; });
    int64_t span = 1;
    for (size_t i = digits.size(); i-- > 0;) {
      if (digits[i]->stride != span)
        return Outside(
            absl::StrCat("the loops of ", base::Excerpt(index), " are not nested digits"));
      span *= digits[i]->extent;
    }
    // (Past the extent where blocks do not divide it: the full blocks' sizes, as lowering.)
    if (span < p.extents.at(index))
      return Outside(absl::StrCat("the loops of ", base::Excerpt(index), " do not cover it"));
  }
  return absl::OkStatus();
}

Expr FloorDivBy(const Expr& e, int64_t d) {
  return d == 1 ? e : Expr::Make(Expr::Op::kFloorDiv, {e, Expr::Const(d)});
}
Expr ModBy(const Expr& e, int64_t m) { return Expr::Make(Expr::Op::kMod, {e, Expr::Const(m)}); }

// Loop j's digit of its index at a transfer: the rank's coordinate for a distributed loop,
// the loop variable for a serial one (turned back by its rotation: the loop runs
// (t + sum rotate) mod extent, so the digit is that).
Expr Digit(const Computation& c, int j) {
  const ir::Loop& l = c.loops()[j];
  if (l.kind == LoopKind::kDistributed) return Expr::Var(c.mesh().axes[l.axis].name);
  Expr t = Expr::Var(l.name);
  if (l.rotate.empty()) return t;
  for (const std::string& by : l.rotate) t = t + Digit(c, c.LoopIndex(by));
  return ModBy(t, l.extent);
}

// The box the access `indices` touches in one instance of the first `prefix` loops: per
// dim its size and its global origin over mesh coordinates and serial loop variables.
struct Box {
  std::vector<int64_t> size;
  std::vector<Expr> origin;
};

Box AccessBox(const Computation& c, const std::vector<std::string>& indices, int prefix) {
  Box box;
  for (const std::string& index : indices) {
    int64_t size = 1;
    Expr origin = Expr::Const(0);
    for (int j = 0; j < static_cast<int>(c.loops().size()); ++j) {
      const ir::Loop& l = c.loops()[j];
      if (l.origin != index || l.extent <= 1) continue;
      const bool fixed =
          l.kind == LoopKind::kDistributed || (l.kind == LoopKind::kSerial && j < prefix);
      if (fixed) {
        origin = origin + Digit(c, j) * Expr::Const(l.stride);
      } else {
        size += (l.extent - 1) * l.stride;
      }
    }
    // Where blocks do not divide the extent, a box never holds more than the extent (as
    // lowering's box, the largest any instance uses: the one at origin 0).
    box.size.push_back(std::min(size, c.problem().extents.at(index)));
    box.origin.push_back(origin);
  }
  return box;
}

// The owner of the element at `origin`: per mesh axis its coordinate, the reader's own
// along axes the tensor is replicated over.
absl::StatusOr<std::vector<Expr>> Owner(const Computation& c, const std::string& tensor,
                                        const std::vector<Expr>& origin) {
  const ir::Mesh& mesh = c.mesh();
  const size_t na = mesh.axes.size();
  const ir::Sharding* s = c.sharding(tensor);
  std::vector<std::optional<Expr>> src(na);
  for (size_t a = 0; a < na; ++a) {
    if (s == nullptr || s->replicated_axes[a]) src[a] = Expr::Var(mesh.axes[a].name);
  }
  // target(source coordinates) == block index of the origin, one equation per shard target
  // (none for a tensor without a sharding: whole on every rank, read from the rank itself).
  std::vector<std::pair<const ir::AxisExpr*, Expr>> equations;
  for (size_t d = 0; s != nullptr && d < s->blocks.size(); ++d) {
    int64_t outer = c.problem().Shape(tensor)[d];
    for (const auto& [block, target] : s->blocks[d]) {
      Expr index = FloorDivBy(origin[d], block);
      if (outer != c.problem().Shape(tensor)[d]) index = ModBy(index, outer / block);
      equations.emplace_back(&target, index);
      outer = block;
    }
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& [target, index] : equations) {
      if (target == nullptr) continue;
      int unknown = -1, count = 0;
      int64_t coeff = 0;
      Expr rest = Expr::Const(target->constant);
      for (const auto& [axis, k] : target->terms) {
        const int a = mesh.AxisIndex(axis);
        if (src[a].has_value()) {
          rest = rest + Expr::Const(k) * *src[a];
        } else {
          unknown = a;
          coeff = k;
          ++count;
        }
      }
      if (count > 1) continue;
      if (count == 1) {
        const int64_t size = mesh.axes[unknown].size;
        if ((coeff != 1 && coeff != -1) || (target->modulus != 0 && target->modulus != size))
          return Outside(absl::StrCat("target ", target->ToString(), " of ", tensor));
        Expr value = Expr::Const(coeff) * (index - rest);
        src[unknown] = target->modulus != 0 ? ModBy(value, size) : value;
      }
      target = nullptr;  // solved, or a consistency condition that legality has checked
      progress = true;
    }
  }
  std::vector<Expr> out;
  for (size_t a = 0; a < na; ++a) {
    if (!src[a].has_value())
      return Outside(
          absl::StrCat("the owners of ", base::Excerpt(tensor), " along ", mesh.axes[a].name));
    out.push_back(*src[a]);
  }
  return out;
}

// An Expr flattened for evaluation over variable slots: its nodes in post-order (arguments
// before their node), evaluated in one pass. One thread at a time (scratch space).
class Compiled {
 public:
  Compiled(const Expr& e, const std::vector<std::string>& names) {
    Add(e, names);
    scratch_.resize(nodes_.size());
  }
  int64_t operator()(const std::vector<int64_t>& vals) const {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      switch (n.op) {
        case Expr::Op::kConst:
          scratch_[i] = n.value;
          break;
        case Expr::Op::kVar:
          scratch_[i] = n.value < 0 ? 0 : vals[n.value];
          break;
        default:
          scratch_[i] = codegen::ApplyOp(n.op, n.args[0] < 0 ? 0 : scratch_[n.args[0]],
                                         n.args[1] < 0 ? 0 : scratch_[n.args[1]],
                                         n.args[2] < 0 ? 0 : scratch_[n.args[2]]);
      }
    }
    return scratch_.back();
  }

 private:
  struct Node {
    Expr::Op op;
    int64_t value = 0;  // constant, or slot of a variable (-1: unbound, 0)
    int args[3] = {-1, -1, -1};
  };
  int Add(const Expr& e, const std::vector<std::string>& names) {
    Node n{e.op()};
    if (e.op() == Expr::Op::kConst) {
      n.value = e.value();
    } else if (e.op() == Expr::Op::kVar) {
      auto it = std::find(names.begin(), names.end(), e.name());
      n.value = it == names.end() ? -1 : it - names.begin();
    } else {
      for (size_t i = 0; i < e.args().size() && i < 3; ++i) n.args[i] = Add(e.args()[i], names);
    }
    nodes_.push_back(n);
    return static_cast<int>(nodes_.size()) - 1;
  }
  std::vector<Node> nodes_;
  mutable std::vector<int64_t> scratch_;
};

// The variables of a transfer's pattern questions: every mesh axis and the serial loops of
// its prefix, with their ranges; Each enumerates the assignments of some of them.
class Domain {
 public:
  Domain(const Computation& c, int prefix) {
    for (const ir::MeshAxis& a : c.mesh().axes) {
      names_.push_back(a.name);
      sizes_.push_back(a.size);
    }
    for (int j = 0; j < prefix; ++j) {
      const ir::Loop& l = c.loops()[j];
      if (l.kind != LoopKind::kSerial) continue;
      names_.push_back(l.name);
      sizes_.push_back(l.extent);
    }
  }
  const std::vector<std::string>& names() const { return names_; }
  int64_t size(int slot) const { return sizes_[slot]; }
  int Slot(const std::string& name) const {
    return static_cast<int>(std::find(names_.begin(), names_.end(), name) - names_.begin());
  }

  // The slots of the variables `exprs` mention, plus `extra`.
  std::vector<int> SlotsOf(const std::vector<Expr>& exprs, std::vector<int> extra) const {
    std::vector<std::string> used;
    for (const Expr& e : exprs) e.CollectVars(&used);
    for (const std::string& u : used) {
      const int s = Slot(u);
      if (s < static_cast<int>(names_.size()) &&
          std::find(extra.begin(), extra.end(), s) == extra.end())
        extra.push_back(s);
    }
    return extra;
  }

  // Calls `visit` on every assignment of `slots` (the others 0), the last slot fastest,
  // with `last_limit` in place of the last slot's range when >= 0; stops when `visit`
  // returns false. Unimplemented when more than kMaxPoints assignments would be visited (a
  // larger domain is enumerated as long as `visit` may still stop it early).
  absl::StatusOr<bool> Each(const std::vector<int>& slots,
                            const std::function<bool(std::vector<int64_t>&)>& visit,
                            int64_t last_limit = -1) const {
    std::vector<int64_t> limit;
    for (size_t i = 0; i < slots.size(); ++i) {
      limit.push_back(i + 1 == slots.size() && last_limit >= 0 ? last_limit : sizes_[slots[i]]);
      if (limit.back() <= 0) return true;
    }
    std::vector<int64_t> vals(names_.size(), 0);
    for (int64_t points = 1;; ++points) {
      if (points > kMaxPoints) return Outside("too many ranks and iterations to enumerate");
      if (!visit(vals)) return false;
      size_t i = slots.size();
      while (i > 0 && ++vals[slots[i - 1]] == limit[i - 1]) vals[slots[--i]] = 0;
      if (i == 0) return true;
    }
  }

 private:
  std::vector<std::string> names_;
  std::vector<int64_t> sizes_;
};

// An expression over the domain's variables as an affine form L (coefficients per slot and
// a constant) taken modulo `modulus` (none when 0): the shape of every source and box origin
// the closed forms build (loop values are floormod(step + rotation, extent), sources solve
// block levels, origins scale them by strides). A variable outside the domain counts 0, as in
// Compiled.
struct AffineMod {
  std::map<int, int64_t> coeffs;
  int64_t constant = 0;
  int64_t modulus = 0;
  int64_t Coeff(int slot) const {
    auto it = coeffs.find(slot);
    return it == coeffs.end() ? 0 : it->second;
  }
  bool IsConstant() const { return modulus == 0 && coeffs.empty(); }
};

AffineMod Scaled(AffineMod f, int64_t k) {
  for (auto& [slot, c] : f.coeffs) c *= k;
  f.constant *= k;
  f.modulus *= k;
  return f;
}

// `e` as an AffineMod, or nullopt when it is not one (a sum of a reduced term and anything
// but a constant 0, a product of two variables, a negative multiple of a reduced term, a
// modulus that does not divide the inner one, any other operation).
std::optional<AffineMod> AffineOf(const Expr& e, const Domain& dom) {
  using Op = Expr::Op;
  switch (e.op()) {
    case Op::kConst: {
      AffineMod f;
      f.constant = e.value();
      return f;
    }
    case Op::kVar: {
      AffineMod f;
      const int slot = dom.Slot(e.name());
      if (slot < static_cast<int>(dom.names().size())) f.coeffs[slot] = 1;
      return f;
    }
    case Op::kNeg: {
      std::optional<AffineMod> a = AffineOf(e.args()[0], dom);
      if (!a.has_value() || a->modulus != 0) return std::nullopt;
      return Scaled(*a, -1);
    }
    case Op::kAdd:
    case Op::kSub: {
      std::optional<AffineMod> a = AffineOf(e.args()[0], dom);
      std::optional<AffineMod> b = AffineOf(e.args()[1], dom);
      if (!a.has_value() || !b.has_value()) return std::nullopt;
      const int64_t sign = e.op() == Op::kAdd ? 1 : -1;
      if (b->IsConstant() && b->constant == 0) return a;
      if (a->IsConstant() && a->constant == 0 && sign == 1) return b;
      if (a->modulus != 0 || b->modulus != 0) return std::nullopt;
      for (const auto& [slot, c] : b->coeffs) a->coeffs[slot] += sign * c;
      a->constant += sign * b->constant;
      return a;
    }
    case Op::kMul: {
      std::optional<AffineMod> a = AffineOf(e.args()[0], dom);
      std::optional<AffineMod> b = AffineOf(e.args()[1], dom);
      if (!a.has_value() || !b.has_value()) return std::nullopt;
      if (!a->IsConstant()) std::swap(a, b);
      if (!a->IsConstant()) return std::nullopt;
      const int64_t k = a->constant;
      if (k == 0) return AffineMod{};
      if (b->modulus != 0 && k < 0) return std::nullopt;
      return Scaled(*b, k);  // k (L mod M) = (k L) mod (k M) for k > 0
    }
    case Op::kMod: {
      std::optional<AffineMod> a = AffineOf(e.args()[0], dom);
      std::optional<AffineMod> m = AffineOf(e.args()[1], dom);
      if (!a.has_value() || !m.has_value() || !m->IsConstant() || m->constant <= 0)
        return std::nullopt;
      if (a->modulus != 0 && a->modulus % m->constant != 0) return std::nullopt;
      a->modulus = m->constant;  // (L mod kM) mod M = L mod M
      return a;
    }
    default:
      return std::nullopt;
  }
}

// r mod size as a step around a ring of `size`: in (-size/2, size/2].
int64_t RingDistance(int64_t r, int64_t size) {
  int64_t d = ((r % size) + size) % size;
  if (d > size / 2) d -= size;
  return d;
}

// Whether every function of `fs` takes one value along variable `slot` for each value of
// the others.
absl::StatusOr<bool> Independent(const Domain& dom, const std::vector<Expr>& fs, int slot) {
  for (const Expr& f : fs) {
    std::vector<std::string> used;
    f.CollectVars(&used);
    if (std::find(used.begin(), used.end(), dom.names()[slot]) == used.end()) continue;
    const Compiled fn(f, dom.names());
    std::vector<int> slots = dom.SlotsOf({f}, {});
    slots.erase(std::find(slots.begin(), slots.end(), slot));
    slots.push_back(slot);  // fastest: compare along it
    int64_t first = 0;
    MT_ASSIGN_OR_RETURN(bool same, dom.Each(slots, [&](std::vector<int64_t>& v) {
      const int64_t value = fn(v);
      if (v[slot] == 0) first = value;
      return value == first;
    }));
    if (!same) return false;
  }
  return true;
}

// Whether the closed forms `origin` of a fetch's box, at the next iteration of loop slot `v`,
// equal the neighbour's at +d along axis `a` (of `size` ranks) now, over domain `dom`.
absl::StatusOr<bool> NextIsNeighbours(const Domain& dom, const std::vector<Expr>& origin, int a,
                                      int v, int64_t d, int64_t size, int64_t last_extent) {
  // By the affine forms when every origin has one: (L + u) mod M equals (L + w) mod M for
  // every L exactly when u = w mod M (without a modulus: u = w). One step of the loop adds
  // its coefficient; the neighbour adds the axis's times d, or times d - size where the
  // ring wraps, and some rank of the ring wraps while another does not.
  bool all_affine = true, all_equal = true;
  for (const Expr& e : origin) {
    const std::optional<AffineMod> f = AffineOf(e, dom);
    if (!f.has_value()) {
      all_affine = false;
      break;
    }
    const int64_t u = f->Coeff(v), ca = f->Coeff(a);
    const int64_t wrap = d > 0 ? d - size : d + size;
    for (const int64_t w : {ca * d, ca * wrap}) {
      const int64_t diff = u - w;
      all_equal = all_equal && (f->modulus == 0 ? diff == 0 : diff % f->modulus == 0);
    }
  }
  if (all_affine) return all_equal;
  // Only the origins that mention the loop or the moving axis can differ between the two
  // sides; the others are equal everywhere and need no enumeration.
  std::vector<Compiled> fo;
  std::vector<Expr> moving_origin;
  for (const Expr& e : origin) {
    std::vector<std::string> used;
    e.CollectVars(&used);
    if (std::find(used.begin(), used.end(), dom.names()[v]) == used.end() &&
        std::find(used.begin(), used.end(), dom.names()[a]) == used.end())
      continue;
    fo.emplace_back(e, dom.names());
    moving_origin.push_back(e);
  }
  std::vector<int> slots = dom.SlotsOf(moving_origin, {a});
  slots.erase(std::remove(slots.begin(), slots.end(), v), slots.end());
  slots.push_back(v);
  return dom.Each(
      slots,
      [&](std::vector<int64_t>& p) {
        const int64_t ra = p[a];
        for (const Compiled& f : fo) {
          ++p[v];
          const int64_t next = f(p);
          --p[v];
          p[a] = ((ra + d) % size + size) % size;
          const int64_t there = f(p);
          p[a] = ra;
          if (next != there) return false;
        }
        return true;
      },
      last_extent - 1);
}

// The step by which the source `src` of a fetch moves along axis `a` per iteration of the
// loop `last` around it (loop slot `v`), when it is one constant step modulo the ring of
// `size` ranks (0 < |d| <= size / 2); nullopt otherwise.
absl::StatusOr<std::optional<int64_t>> RingStep(const Domain& dom, const std::vector<Expr>& src,
                                                int a, int v, int64_t size) {
  // By the affine form when it has one: one iteration adds the loop's coefficient u, as it
  // is, or taken modulo the ring (u mod size, or that minus size, where it wraps).
  if (const std::optional<AffineMod> f = AffineOf(src[a], dom);
      f.has_value() && (f->modulus == 0 || f->modulus == size)) {
    const int64_t d = RingDistance(f->Coeff(v), size);
    if (d == 0) return std::nullopt;
    return d;
  }
  const Compiled fa(src[a], dom.names());
  // The steps of the source from one iteration of the last loop to the next: at most two
  // distinct ones (a constant step, and its wrap around the ring).
  std::vector<int64_t> deltas;
  int64_t previous = 0;
  std::vector<int> slots = dom.SlotsOf({src[a]}, {});
  slots.erase(std::remove(slots.begin(), slots.end(), v), slots.end());
  slots.push_back(v);  // fastest: consecutive iterations follow each other
  MT_ASSIGN_OR_RETURN(bool all, dom.Each(slots, [&](std::vector<int64_t>& p) {
    const int64_t now = fa(p);
    const int64_t delta = now - previous;
    previous = now;
    if (p[v] == 0 || std::find(deltas.begin(), deltas.end(), delta) != deltas.end()) return true;
    deltas.push_back(delta);
    return deltas.size() <= 2;
  }));
  if (!all || deltas.empty()) return std::nullopt;
  const int64_t lo = *std::min_element(deltas.begin(), deltas.end());
  const int64_t hi = *std::max_element(deltas.begin(), deltas.end());
  int64_t d = ((lo % size) + size) % size;
  if (d > size / 2) d -= size;
  if ((lo != hi && hi - lo != size) || d == 0) return std::nullopt;
  return d;
}

// codegen::DetectFetchPattern's answer for a single-source fetch with sources `src` and box
// origin `origin`, both over mesh coordinates and the serial loops of `prefix`: the same
// facts (codegen/pattern.h, TransferFacts), from the closed forms.
absl::StatusOr<CommPattern> FetchPattern(const Computation& c, int prefix,
                                         const std::vector<Expr>& src,
                                         const std::vector<Expr>& origin) {
  const Domain dom(c, prefix);
  const int na = static_cast<int>(c.mesh().axes.size());
  codegen::TransferFacts facts;
  facts.role = codegen::TransferFacts::Role::kFetchOne;
  for (int a = 0; a < na; ++a) {
    const Compiled fn(src[a], dom.names());
    MT_ASSIGN_OR_RETURN(bool own, dom.Each(dom.SlotsOf({src[a]}, {a}),
                                           [&](std::vector<int64_t>& v) { return fn(v) == v[a]; }));
    if (!own) facts.axes.push_back(a);
  }
  facts.one_root_per_group = [&]() -> absl::StatusOr<bool> {
    for (int a : facts.axes) {
      MT_ASSIGN_OR_RETURN(bool s, Independent(dom, src, a));
      if (!s) return false;
      MT_ASSIGN_OR_RETURN(bool o, Independent(dom, origin, a));
      if (!o) return false;
    }
    return true;
  };
  // Shift: the source along the moving axis steps by a constant (modulo the ring) from one
  // iteration of the last loop to the next, and the data a rank needs next is what its
  // neighbour at that step needs now.
  facts.neighbour_step = [&]() -> absl::StatusOr<std::optional<int>> {
    const ir::Loop* last = prefix > 0 ? &c.loops()[prefix - 1] : nullptr;
    if (last == nullptr || last->kind != LoopKind::kSerial || last->extent <= 1)
      return std::nullopt;
    const int a = facts.axes[0];
    const int64_t size = c.mesh().axes[a].size;
    const int v = dom.Slot(last->name);
    MT_ASSIGN_OR_RETURN(const std::optional<int64_t> d, RingStep(dom, src, a, v, size));
    if (!d.has_value()) return std::nullopt;
    MT_ASSIGN_OR_RETURN(const bool neighbour,
                        NextIsNeighbours(dom, origin, a, v, *d, size, last->extent));
    if (!neighbour) return std::nullopt;
    return static_cast<int>(*d);
  };
  return codegen::RecognizeTransfer(facts);
}

// The ranges of the variables of the closed forms' expressions: mesh coordinates and serial
// loop variables (the loops start at 0).
codegen::VarRanges RangesOf(const Computation& c) {
  codegen::VarRanges out;
  for (const ir::MeshAxis& a : c.mesh().axes) out[a.name] = {0, a.size - 1};
  for (const ir::Loop& l : c.loops()) {
    if (l.kind == LoopKind::kSerial) out[l.name] = {0, l.extent - 1};
  }
  return out;
}

// What FetchPattern's answer depends on: the mesh, the serial loops of `prefix` (the last
// loop's kind too), the sources and the box origin.
std::string FetchPatternKey(const Computation& c, int prefix, const std::vector<Expr>& src,
                            const std::vector<Expr>& origin) {
  std::string key = c.mesh().ToString();
  for (int j = 0; j < prefix; ++j) {
    const ir::Loop& l = c.loops()[j];
    absl::StrAppend(&key, ";", l.name, ":", static_cast<int>(l.kind), ":", l.extent);
  }
  for (const Expr& e : src) absl::StrAppend(&key, "|", e.ToString());
  absl::StrAppend(&key, "|origin");
  for (const Expr& e : origin) absl::StrAppend(&key, "|", e.ToString());
  return key;
}

absl::StatusOr<std::shared_ptr<const ClosedFormLowering::Plan>> MakePlan(
    const Computation& c, const ir::Communication& t,
    std::map<std::string, absl::StatusOr<CommPattern>>* patterns) {
  auto plan = std::make_shared<ClosedFormLowering::Plan>();
  const int prefix = ir::TransferPrefix(c, t);
  plan->output = c.problem().IsOutput(t.tensor);
  plan->depth = codegen::SerialDepth(c, prefix);
  const std::string buffer = (plan->output ? "Part" : "Trans") + t.tensor;
  const Box box = AccessBox(c, c.problem().FirstAccess(t.tensor)->indices, prefix);
  codegen::Slice global;
  global.size = box.size;
  plan->alloc = codegen::MakeStmt(codegen::Alloc{buffer, box.size, plan->output});
  if (plan->output) {
    MT_ASSIGN_OR_RETURN(CommPattern pattern, codegen::DetectReducePattern(c, t, box.size));
    codegen::Reduce r{t.tensor, buffer, t.loop, std::move(pattern), global};
    codegen::PatternOf(r.pattern.kind).Land(c.mesh(), r);
    plan->stmt = codegen::MakeStmt(std::move(r));
    return plan;
  }
  codegen::Transfer x;
  x.tensor = t.tensor;
  x.buffer = buffer;
  x.loop = t.loop;
  x.src.size = box.size;
  x.global = global;
  // One source, or an all-gather along some axes: by arithmetic, else asked of isl.
  std::optional<std::vector<int>> gather = ir::ClosedFormGatherAxes(c, t);
  const bool single = gather.has_value() ? gather->empty() : ir::SingleSource(c, t);
  if (!single) {
    if (!gather.has_value()) gather = ir::GatherAxes(c, t);
    // From ranks anywhere on the mesh (an all-to-all): the closed forms do not say where.
    if (gather->empty()) return Outside("a transfer from several ranks");
    codegen::TransferFacts facts;
    facts.role = codegen::TransferFacts::Role::kFetchMany;
    facts.axes = *gather;
    MT_ASSIGN_OR_RETURN(x.pattern, codegen::RecognizeTransfer(facts));
  } else {
    MT_ASSIGN_OR_RETURN(x.source, Owner(c, t.tensor, box.origin));
    const codegen::VarRanges ranges = RangesOf(c);
    for (Expr& e : x.source) e = codegen::Simplify(e, ranges);
    // Memoized: the same fetch recurs in other cells (another rotation, another tensor's
    // option), and its enumeration grows with the mesh.
    const std::string key = FetchPatternKey(c, prefix, x.source, box.origin);
    auto it = patterns->find(key);
    if (it == patterns->end())
      it = patterns->emplace(key, FetchPattern(c, prefix, x.source, box.origin)).first;
    MT_ASSIGN_OR_RETURN(x.pattern, it->second);
    if (codegen::PatternOf(x.pattern.kind).AcrossSteps()) x.time_loop = c.loops()[prefix - 1].name;
  }
  plan->stmt = codegen::MakeStmt(std::move(x));
  return plan;
}

// The kernel call, as codegen::Lower builds it (boxes of the kernel's loops).
StmtPtr KernelCall(const Computation& c) {
  const ir::Problem& prob = c.problem();
  codegen::Compute k = codegen::KernelHead(c);
  const int prefix = codegen::KernelPrefix(c);
  for (size_t i = 0; i <= prob.operands.size(); ++i) {
    const ir::TensorAccess& a = i == 0 ? prob.output : prob.operands[i - 1];
    codegen::Operand op;
    op.tensor = a.tensor;
    op.dims = a.indices;
    op.buffer =
        c.TransferOf(a.tensor) == nullptr ? a.tensor : (i == 0 ? "Part" : "Trans") + a.tensor;
    op.slice.size = AccessBox(c, a.indices, prefix).size;
    if (i == 0) {
      k.out = std::move(op);
    } else {
      k.in.push_back(std::move(op));
    }
  }
  return codegen::MakeStmt(std::move(k));
}

}  // namespace

ClosedFormLowering::ClosedFormLowering() = default;
ClosedFormLowering::~ClosedFormLowering() = default;

absl::StatusOr<codegen::Program> ClosedFormLowering::Lower(const Computation& c) {
  MT_RETURN_IF_ERROR(CheckForms(c));
  codegen::Program p = codegen::DescribeTensors(c);
  std::vector<int> serial;
  for (int j = 0; j < static_cast<int>(c.loops().size()); ++j) {
    if (c.loops()[j].kind == LoopKind::kSerial) serial.push_back(j);
  }
  const int q = static_cast<int>(serial.size());
  // Per depth: fetches (alloc, transfer), zeroed partial buffers, then after the loop
  // inside, reductions; in the order of the communicates.
  std::vector<std::vector<StmtPtr>> before(q + 1), after(q + 1);
  std::vector<std::vector<StmtPtr>> zeros(q + 1);
  for (const ir::Communication& t : c.transfers()) {
    const std::string key = absl::StrCat(c.LoopsKey(), "|", c.TensorKey(t.tensor));
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, MakePlan(c, t, &patterns_)).first;
    if (!it->second.ok()) return it->second.status();
    const Plan& plan = **it->second;
    p.buffers.push_back(std::get<codegen::Alloc>(plan.alloc->node));
    if (plan.output) {
      // A ring's buffer is zeroed before its loop (codegen/program.h).
      const bool ring =
          codegen::PatternOf(std::get<codegen::Reduce>(plan.stmt->node).pattern.kind).AcrossSteps();
      zeros[ring ? plan.depth - 1 : plan.depth].push_back(plan.alloc);
      after[plan.depth].push_back(codegen::WithPrefetch(plan.stmt, t.prefetch));
    } else {
      before[plan.depth].push_back(plan.alloc);
      before[plan.depth].push_back(codegen::WithPrefetch(plan.stmt, t.prefetch));
    }
  }
  StmtPtr inner = KernelCall(c);
  for (int k = q; k >= 0; --k) {
    codegen::Block body;
    body.body = before[k];
    body.body.insert(body.body.end(), zeros[k].begin(), zeros[k].end());
    body.body.push_back(inner);
    body.body.insert(body.body.end(), after[k].begin(), after[k].end());
    inner = codegen::MakeStmt(std::move(body));
    if (k > 0) {
      const ir::Loop& l = c.loops()[serial[k - 1]];
      inner = codegen::MakeStmt(codegen::For{l.name, Expr::Const(0), l.extent, inner});
    }
  }
  p.body = inner;
  return p;
}

}  // namespace meshtune::search
