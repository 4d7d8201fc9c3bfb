#include "ir/isl_util.h"

#include <isl/aff.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>

#include <cstdlib>

#include "base/check.h"

namespace meshtune::ir {

IslContext::IslContext() : ctx_(isl_ctx_alloc()) {
  MT_CHECK(ctx_ != nullptr);
  isl_options_set_on_error(ctx_, ISL_ON_ERROR_CONTINUE);
}

IslContext::~IslContext() { isl_ctx_free(ctx_); }

isl::map ProjectOutRange(const isl::map& m, unsigned first, unsigned n) {
  return isl::manage(isl_map_project_out(m.copy(), isl_dim_out, first, n));
}

isl::map ProjectOutDomain(const isl::map& m, unsigned first, unsigned n) {
  return isl::manage(isl_map_project_out(m.copy(), isl_dim_in, first, n));
}

isl::map MapFromDomainAndRange(const isl::set& domain, const isl::set& range) {
  return isl::manage(isl_map_from_domain_and_range(domain.copy(), range.copy()));
}

namespace {

// `v` as an isl value in `a`'s context (the _si/_ui setters of isl take int and unsigned:
// every integer goes through an isl_val so 64-bit extents are never cut).
isl_val* Val(const isl::aff& a, int64_t v) {
  return isl_val_int_from_si(isl_aff_get_ctx(a.get()), v);
}

}  // namespace

isl::aff DomainVar(const isl::space& set_space, unsigned pos) {
  return isl::manage(
      isl_aff_var_on_domain(isl_local_space_from_space(set_space.copy()), isl_dim_set, pos));
}

isl::aff FloorDiv(const isl::aff& a, int64_t d) {
  if (d == 1) return a;
  return isl::manage(isl_aff_floor(isl_aff_scale_down_val(a.copy(), Val(a, d))));
}

isl::aff Mod(const isl::aff& a, int64_t m) {
  return isl::manage(isl_aff_mod_val(a.copy(), Val(a, m)));
}

isl::aff Sub(const isl::aff& a, const isl::aff& b) {
  return isl::manage(isl_aff_sub(a.copy(), b.copy()));
}

isl::aff Add(const isl::aff& a, const isl::aff& b) {
  return isl::manage(isl_aff_add(a.copy(), b.copy()));
}

isl::aff Linear(const isl::space& set_space, const std::vector<std::pair<unsigned, int64_t>>& terms,
                int64_t constant) {
  isl_ctx* ctx = isl_space_get_ctx(set_space.get());
  isl_aff* a = isl_aff_zero_on_domain(isl_local_space_from_space(set_space.copy()));
  for (const auto& [pos, coeff] : terms)
    a = isl_aff_add_coefficient_val(a, isl_dim_in, pos, isl_val_int_from_si(ctx, coeff));
  return isl::manage(isl_aff_add_constant_val(a, isl_val_int_from_si(ctx, constant)));
}

isl::aff Scale(const isl::aff& a, int64_t k) {
  return isl::manage(isl_aff_scale_val(a.copy(), Val(a, k)));
}

isl::map MapFromAffs(const isl::space& set_space, const std::string& tuple,
                     const std::vector<isl::aff>& fs) {
  isl_space* space = isl_space_map_from_domain_and_range(
      set_space.copy(), isl_space_set_alloc(isl_space_get_ctx(set_space.get()), 0, fs.size()));
  space = isl_space_set_tuple_name(space, isl_dim_out, tuple.c_str());
  isl_aff_list* list = isl_aff_list_alloc(isl_space_get_ctx(set_space.get()), fs.size());
  for (const isl::aff& f : fs) list = isl_aff_list_add(list, f.copy());
  return isl::manage(isl_map_from_multi_aff(isl_multi_aff_from_aff_list(space, list)));
}

isl::space SetSpace(isl::ctx ctx, const std::string& tuple, unsigned n) {
  return isl::manage(
      isl_space_set_tuple_name(isl_space_set_alloc(ctx.get(), 0, n), isl_dim_set, tuple.c_str()));
}

isl::set Box(const isl::space& set_space, const std::vector<int64_t>& upper) {
  isl_ctx* ctx = isl_space_get_ctx(set_space.get());
  isl_set* s = isl_set_universe(set_space.copy());
  for (size_t d = 0; d < upper.size(); ++d) {
    if (upper[d] <= 0) continue;
    s = isl_set_lower_bound_val(s, isl_dim_set, d, isl_val_zero(ctx));
    s = isl_set_upper_bound_val(s, isl_dim_set, d, isl_val_int_from_si(ctx, upper[d] - 1));
  }
  return isl::manage(s);
}

isl::map Equalities(const isl::space& a, const isl::space& b,
                    const std::vector<std::pair<unsigned, unsigned>>& pairs) {
  isl_map* m = isl_map_universe(isl_space_map_from_domain_and_range(a.copy(), b.copy()));
  for (const auto& [p, q] : pairs) m = isl_map_equate(m, isl_dim_in, p, isl_dim_out, q);
  return isl::manage(m);
}

isl::map MinusOrigin(const isl::map& m, const isl::pw_multi_aff& origin) {
  return isl::manage(isl_map_sum(m.copy(), isl_map_neg(origin.as_map().release())));
}

isl::map RangeComponent(const isl::map& m, unsigned a) {
  const unsigned n = m.range_tuple_dim();
  return ProjectOutRange(ProjectOutRange(m, a + 1, n - a - 1), 0, a);
}

bool IndependentOfDim(const isl::map& m, unsigned dim) {
  // Every image any value of `dim` gives, with the other dims fixed: m is independent of
  // `dim` exactly when that is no more than m itself (it always contains m).
  const char* tuple = isl_map_get_tuple_name(m.get(), isl_dim_in);
  isl_map* any = isl_map_project_out(m.copy(), isl_dim_in, dim, 1);
  any = isl_map_insert_dims(any, isl_dim_in, dim, 1);
  if (tuple != nullptr) any = isl_map_set_tuple_name(any, isl_dim_in, tuple);
  return isl::manage(any).intersect_domain(m.domain()).is_subset(m);
}

isl::map FreeRangeDim(const isl::map& m, unsigned pos) {
  // Project the dim out and put a fresh one back: what the other dims' constraints implied
  // through it stays (dropping the constraints that mention it would lose that).
  const std::string tuple = isl_map_get_tuple_name(m.get(), isl_dim_out)
                                ? isl_map_get_tuple_name(m.get(), isl_dim_out)
                                : "";
  isl_map* r = isl_map_project_out(m.copy(), isl_dim_out, pos, 1);
  r = isl_map_insert_dims(r, isl_dim_out, pos, 1);
  if (!tuple.empty()) r = isl_map_set_tuple_name(r, isl_dim_out, tuple.c_str());
  return isl::manage(r);
}

isl::map NameDomainDims(const isl::map& m, const std::vector<std::string>& names) {
  isl_map* r = m.copy();
  for (size_t i = 0; i < names.size(); ++i)
    r = isl_map_set_dim_name(r, isl_dim_in, i, names[i].c_str());
  return isl::manage(r);
}

isl::map NameRangeDims(const isl::map& m, const std::vector<std::string>& names) {
  isl_map* r = m.copy();
  for (size_t i = 0; i < names.size(); ++i)
    r = isl_map_set_dim_name(r, isl_dim_out, i, names[i].c_str());
  return isl::manage(r);
}

isl::set NameSetDims(const isl::set& s, const std::vector<std::string>& names) {
  isl_set* r = s.copy();
  for (size_t i = 0; i < names.size(); ++i)
    r = isl_set_set_dim_name(r, isl_dim_set, i, names[i].c_str());
  return isl::manage(r);
}

std::vector<int64_t> SamplePoint(const isl::set& s) {
  isl_point* p = isl_set_sample_point(s.copy());
  MT_CHECK(p != nullptr && !isl_point_is_void(p));
  const isl_size n = isl_set_dim(s.get(), isl_dim_set);
  std::vector<int64_t> out;
  for (isl_size i = 0; i < n; ++i) {
    isl_val* v = isl_point_get_coordinate_val(p, isl_dim_set, i);
    out.push_back(isl_val_get_num_si(v));
    isl_val_free(v);
  }
  isl_point_free(p);
  return out;
}

std::string ToString(const isl::map& m) {
  char* c = isl_map_to_str(m.get());
  std::string s = c ? c : "";
  free(c);
  return s;
}

std::string ToString(const isl::set& s) {
  char* c = isl_set_to_str(s.get());
  std::string r = c ? c : "";
  free(c);
  return r;
}

}  // namespace meshtune::ir
