#include "codegen/simplify.h"

#include <numeric>
#include <optional>
#include <unordered_map>
#include <vector>

namespace meshtune::codegen {

namespace {

using Op = Expr::Op;

struct Range {
  int64_t lo = 0, hi = 0;
};

bool Mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool Add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// A linear combination c0 + sum coeff * atom; atoms are variables or expressions that are
// not linear (floord, floormod, min, ...), merged by their text.
struct Lin {
  int64_t c0 = 0;
  std::vector<std::pair<Expr, int64_t>> terms;
};

class Simplifier {
 public:
  explicit Simplifier(const VarRanges& ranges) : ranges_(ranges) {}

  // `e` simplified, or `e` itself when an intermediate coefficient would overflow.
  Expr Run(const Expr& e) {
    std::optional<Lin> l = ToLin(e);
    return l.has_value() ? FromLin(*l) : e;
  }

 private:
  static std::optional<Lin> Constant(int64_t v) {
    Lin l;
    l.c0 = v;
    return l;
  }

  static std::optional<Lin> Atom(const Expr& e) {
    if (e.IsConst()) return Constant(e.value());
    Lin l;
    l.terms.emplace_back(e, 1);
    return l;
  }

  // a + k * b.
  static std::optional<Lin> Combine(Lin a, const Lin& b, int64_t k) {
    int64_t c = 0;
    if (!Mul(b.c0, k, &c) || !Add(a.c0, c, &a.c0)) return std::nullopt;
    for (const auto& [atom, coeff] : b.terms) {
      if (!Mul(coeff, k, &c)) return std::nullopt;
      const std::string key = atom.ToString();
      bool merged = false;
      for (auto& [other, oc] : a.terms) {
        if (other.ToString() == key) {
          if (!Add(oc, c, &oc)) return std::nullopt;
          merged = true;
          break;
        }
      }
      if (!merged) a.terms.emplace_back(atom, c);
    }
    std::vector<std::pair<Expr, int64_t>> kept;
    for (auto& t : a.terms) {
      if (t.second != 0) kept.push_back(std::move(t));
    }
    a.terms = std::move(kept);
    return a;
  }

  std::optional<Lin> ToLin(const Expr& e) {
    const std::vector<Expr>& args = e.args();
    switch (e.op()) {
      case Op::kConst:
        return Constant(e.value());
      case Op::kVar:
        return Atom(e);
      case Op::kAdd:
      case Op::kSub: {
        std::optional<Lin> a = ToLin(args[0]), b = ToLin(args[1]);
        if (!a.has_value() || !b.has_value()) return std::nullopt;
        return Combine(*a, *b, e.op() == Op::kAdd ? 1 : -1);
      }
      case Op::kNeg: {
        std::optional<Lin> a = ToLin(args[0]);
        if (!a.has_value()) return std::nullopt;
        return Combine(Lin{}, *a, -1);
      }
      case Op::kMul: {
        std::optional<Lin> a = ToLin(args[0]), b = ToLin(args[1]);
        if (!a.has_value() || !b.has_value()) return std::nullopt;
        if (b->terms.empty()) return Combine(Lin{}, *a, b->c0);
        if (a->terms.empty()) return Combine(Lin{}, *b, a->c0);
        return Atom(Expr::Make(Op::kMul, {FromLin(*a), FromLin(*b)}));
      }
      case Op::kFloorDiv:
      case Op::kMod: {
        std::optional<Lin> a = ToLin(args[0]), b = ToLin(args[1]);
        if (!a.has_value() || !b.has_value()) return std::nullopt;
        if (!b->terms.empty() || b->c0 <= 0)
          return Atom(Expr::Make(e.op(), {FromLin(*a), FromLin(*b)}));
        return e.op() == Op::kFloorDiv ? FloorDivBy(*a, b->c0) : ModBy(*a, b->c0);
      }
      default: {
        std::vector<Expr> simplified;
        for (const Expr& x : args) simplified.push_back(Run(x));
        return Atom(Expr::Make(e.op(), std::move(simplified)));
      }
    }
  }

  // floord(a, d): the multiples of d taken out, then decided by range when it can be.
  std::optional<Lin> FloorDivBy(const Lin& a, int64_t d) {
    Lin q, r;
    q.c0 = FloorDiv(a.c0, d);
    r.c0 = FloorMod(a.c0, d);
    for (const auto& [atom, coeff] : a.terms) {
      if (coeff % d == 0) {
        q.terms.emplace_back(atom, coeff / d);
      } else {
        r.terms.emplace_back(atom, coeff);
      }
    }
    if (r.terms.empty()) return q;  // 0 <= r.c0 < d
    const std::optional<Range> rr = RangeOf(r);
    if (rr.has_value() && FloorDiv(rr->lo, d) == FloorDiv(rr->hi, d))
      return Combine(q, *Constant(FloorDiv(rr->lo, d)), 1);
    // floord(g*r', g*d') = floord(r', d').
    const int64_t g = Gcd(r, d);
    if (g > 1) {
      d /= g;
      r.c0 /= g;
      for (auto& term : r.terms) term.second /= g;
    }
    std::optional<Lin> atom = Atom(Expr::Make(Op::kFloorDiv, {FromLin(r), Expr::Const(d)}));
    return Combine(q, *atom, 1);
  }

  // floormod(a, m): terms that are multiples of m dropped, then decided by range.
  std::optional<Lin> ModBy(const Lin& a, int64_t m) {
    Lin r;
    r.c0 = FloorMod(a.c0, m);
    for (const auto& [atom, coeff] : a.terms) {
      if (coeff % m != 0) r.terms.emplace_back(atom, coeff);
    }
    const std::optional<Range> rr = RangeOf(r);
    if (rr.has_value() && FloorDiv(rr->lo, m) == FloorDiv(rr->hi, m)) {
      int64_t shift = 0;
      if (!Mul(FloorDiv(rr->lo, m), m, &shift)) return std::nullopt;
      return Combine(r, *Constant(-shift), 1);
    }
    // floormod(g*r', g*m') = g * floormod(r', m').
    const int64_t g = Gcd(r, m);
    if (g > 1) {
      r.c0 /= g;
      for (auto& term : r.terms) term.second /= g;
      std::optional<Lin> atom = Atom(Expr::Make(Op::kMod, {FromLin(r), Expr::Const(m / g)}));
      return Combine(Lin{}, *atom, g);
    }
    return Atom(Expr::Make(Op::kMod, {FromLin(r), Expr::Const(m)}));
  }

  // The greatest common divisor of `l`'s coefficients, its constant and `d`.
  static int64_t Gcd(const Lin& l, int64_t d) {
    int64_t g = std::gcd(d, l.c0);
    for (const auto& term : l.terms) g = std::gcd(g, term.second);
    return g < 0 ? -g : g;
  }

  std::optional<Range> RangeOf(const Lin& l) {
    Range out{l.c0, l.c0};
    for (const auto& [atom, coeff] : l.terms) {
      std::optional<Range> r = RangeOf(atom);
      if (!r.has_value()) return std::nullopt;
      int64_t a = 0, b = 0;
      if (!Mul(r->lo, coeff, &a) || !Mul(r->hi, coeff, &b)) return std::nullopt;
      if (a > b) std::swap(a, b);
      if (!Add(out.lo, a, &out.lo) || !Add(out.hi, b, &out.hi)) return std::nullopt;
    }
    return out;
  }

  // The range of an atom: a variable's from `ranges_`, a floormod's [0, m - 1], a floord's
  // from its operand's.
  std::optional<Range> RangeOf(const Expr& e) {
    switch (e.op()) {
      case Op::kConst:
        return Range{e.value(), e.value()};
      case Op::kVar: {
        auto it = ranges_.find(e.name());
        if (it == ranges_.end()) return std::nullopt;
        return Range{it->second.first, it->second.second};
      }
      case Op::kMod:
        if (e.args()[1].IsConst() && e.args()[1].value() > 0)
          return Range{0, e.args()[1].value() - 1};
        return std::nullopt;
      case Op::kFloorDiv: {
        if (!e.args()[1].IsConst() || e.args()[1].value() <= 0) return std::nullopt;
        std::optional<Lin> a = ToLin(e.args()[0]);
        std::optional<Range> r = a.has_value() ? RangeOf(*a) : std::nullopt;
        if (!r.has_value()) return std::nullopt;
        const int64_t d = e.args()[1].value();
        return Range{FloorDiv(r->lo, d), FloorDiv(r->hi, d)};
      }
      default:
        return std::nullopt;
    }
  }

  // The combination as an Expr: positive terms added, negative ones subtracted, the
  // constant last ("no + y - x", "2 * ko + 1").
  static Expr FromLin(const Lin& l) {
    std::optional<Expr> out;
    for (const auto& [atom, coeff] : l.terms) {
      const int64_t mag = coeff < 0 ? -coeff : coeff;
      const Expr term = mag == 1 ? atom : atom * Expr::Const(mag);
      if (!out.has_value()) {
        out = coeff < 0 ? Expr::Make(Op::kNeg, {term}) : term;
      } else {
        out = coeff < 0 ? *out - term : *out + term;
      }
    }
    if (!out.has_value()) return Expr::Const(l.c0);
    if (l.c0 > 0) return *out + Expr::Const(l.c0);
    if (l.c0 < 0 && l.c0 != INT64_MIN) return *out - Expr::Const(-l.c0);
    if (l.c0 < 0) return *out + Expr::Const(l.c0);
    return *out;
  }

  const VarRanges& ranges_;
};

}  // namespace

Expr Simplify(const Expr& e, const VarRanges& ranges) { return Simplifier(ranges).Run(e); }

}  // namespace meshtune::codegen
