#include "ir/isl_util.h"

#include <isl/map.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/val.h>

#include <cstdlib>

#include "ir/check.h"

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

isl::map NameDomainDims(const isl::map& m, const std::vector<std::string>& names) {
  isl_map* r = m.copy();
  for (size_t i = 0; i < names.size(); ++i) r = isl_map_set_dim_name(r, isl_dim_in, i, names[i].c_str());
  return isl::manage(r);
}

isl::map NameRangeDims(const isl::map& m, const std::vector<std::string>& names) {
  isl_map* r = m.copy();
  for (size_t i = 0; i < names.size(); ++i) r = isl_map_set_dim_name(r, isl_dim_out, i, names[i].c_str());
  return isl::manage(r);
}

isl::set NameSetDims(const isl::set& s, const std::vector<std::string>& names) {
  isl_set* r = s.copy();
  for (size_t i = 0; i < names.size(); ++i) r = isl_set_set_dim_name(r, isl_dim_set, i, names[i].c_str());
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
