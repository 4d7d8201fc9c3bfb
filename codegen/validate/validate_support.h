// Internal to the validator (codegen/validate/validate.h): the isl helpers on flat spaces, the
// translation of an Expr to a quasi-affine function, and the program's leaves (Node) that
// the validator's files share.
#ifndef MESHTUNE_CODEGEN_VALIDATE_VALIDATE_SUPPORT_H_
#define MESHTUNE_CODEGEN_VALIDATE_VALIDATE_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/isl_util.h"

namespace meshtune::codegen::validation {

using Affs = std::vector<isl::pw_aff>;
using Point = std::vector<int64_t>;

// ---- isl helpers ---------------------------------------------------------------------
// The C++ bindings lack a few operations on flat spaces (a map from a set, flat products,
// inserting dims); those call the C API (validate_support.cc).

// A flat, anonymous set space of `n` integer dims, and the quasi-affine pieces built on it.
class Frame {
 public:
  Frame(isl::ctx ctx, unsigned n);
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

Affs Plus(const Affs& a, const Affs& b);

// The map whose domain is the first `n_in` dims of `s` and whose range is the rest.
isl::map Split(const isl::set& s, unsigned n_in);

// The flat set [domain..., range...] of `m`.
isl::set Flatten(const isl::map& m);

// `s` with `n` unconstrained dims inserted at `pos`.
isl::set InsertDims(const isl::set& s, unsigned pos, unsigned n);

isl::set ProjectOut(const isl::set& s, unsigned first, unsigned n);

// { x -> [f(x), g(x)] } from { x -> f(x) } and { x -> g(x) }, flat.
isl::map FlatRangeProduct(const isl::map& a, const isl::map& b);

// { [a, c] -> [b, d] : a -> b in m1, c -> d in m2 }, flat.
isl::map FlatProduct(const isl::map& a, const isl::map& b);

isl::map Identity(const Frame& f);

// `m` with anonymous domain and range tuples.
isl::map Anonymous(const isl::map& m);

// { [a] -> [b] : a[i] == b[i] for i < n } from a frame of `from` dims onto one of `to`.
isl::map Prefix(const Frame& from, const Frame& to, unsigned n);

// The lexicographically smallest point of a non-empty, bounded set.
Point Witness(const isl::set& s);

Point Slice(const Point& v, size_t first, size_t n);

std::string Join(const Point& v);

// ---- expressions ---------------------------------------------------------------------

// What the variables of an Expr stand for, searched in order (the executor looks up mesh
// axes first, then the enclosing loops outermost first); names not bound evaluate to 0.
struct Env {
  std::vector<std::pair<std::string, isl::pw_aff>> vars;
};

// `e` as a piecewise quasi-affine function on frame `f`, with Expr's semantics (floor
// division, non-negative remainder, comparisons as 0/1). Unimplemented when not affine.
absl::StatusOr<isl::pw_aff> ToPwAff(const Expr& e, const Frame& f, const Env& env);

absl::StatusOr<Affs> ToPwAffs(const std::vector<Expr>& es, const Frame& f, const Env& env);

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
size_t CommonDepth(const Node& x, const Node& y);

}  // namespace meshtune::codegen::validation

#endif  // MESHTUNE_CODEGEN_VALIDATE_VALIDATE_SUPPORT_H_
