// The validator's isl helpers and the translation of an Expr to a quasi-affine function
// (validate_support.h).
#include "codegen/validate/validate_support.h"

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/space.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace meshtune::codegen::validation {

using Op = Expr::Op;

Frame::Frame(isl::ctx ctx, unsigned n)
    : space_(isl::manage(isl_space_set_alloc(ctx.get(), 0, n))), n_(n) {}

Affs Plus(const Affs& a, const Affs& b) {
  Affs out;
  for (size_t d = 0; d < a.size(); ++d) out.push_back(a[d].add(b[d]));
  return out;
}

isl::map Split(const isl::set& s, unsigned n_in) {
  isl_map* m = isl_map_from_range(s.copy());
  return isl::manage(isl_map_move_dims(m, isl_dim_in, 0, isl_dim_out, 0, n_in));
}

isl::set Flatten(const isl::map& m) { return m.wrap().flatten(); }

isl::set InsertDims(const isl::set& s, unsigned pos, unsigned n) {
  return isl::manage(isl_set_insert_dims(s.copy(), isl_dim_set, pos, n));
}

isl::set ProjectOut(const isl::set& s, unsigned first, unsigned n) {
  return isl::manage(isl_set_project_out(s.copy(), isl_dim_set, first, n));
}

isl::map FlatRangeProduct(const isl::map& a, const isl::map& b) {
  return isl::manage(isl_map_flat_range_product(a.copy(), b.copy()));
}

isl::map FlatProduct(const isl::map& a, const isl::map& b) {
  return isl::manage(isl_map_flat_product(a.copy(), b.copy()));
}

isl::map Identity(const Frame& f) {
  return isl::manage(isl_map_identity(isl_space_map_from_set(f.space().copy())));
}

isl::map Anonymous(const isl::map& m) {
  isl_map* r = isl_map_reset_tuple_id(m.copy(), isl_dim_in);
  return isl::manage(isl_map_reset_tuple_id(r, isl_dim_out));
}

isl::map Prefix(const Frame& from, const Frame& to, unsigned n) {
  std::vector<std::pair<unsigned, unsigned>> pairs;
  for (unsigned i = 0; i < n; ++i) pairs.emplace_back(i, i);
  return ir::Equalities(from.space(), to.space(), pairs);
}

Point Witness(const isl::set& s) { return ir::SamplePoint(s.lexmin()); }

Point Slice(const Point& v, size_t first, size_t n) {
  return Point(v.begin() + first, v.begin() + first + n);
}

std::string Join(const Point& v) { return absl::StrJoin(v, ", "); }

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

size_t CommonDepth(const Node& x, const Node& y) {
  size_t c = 0;
  while (c < x.depth() && c < y.depth() && x.loops[c] == y.loops[c]) ++c;
  return c;
}

}  // namespace meshtune::codegen::validation
