#include "runtime/reference.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/box.h"
#include "runtime/fill.h"

namespace meshtune::runtime {

namespace {

const TensorSpec& Find(const std::vector<TensorSpec>& tensors, const std::string& name) {
  for (const TensorSpec& t : tensors) {
    if (t.name == name) return t;
  }
  return tensors[0];
}

}  // namespace

std::string CheckOutputElements(const ReferenceCheck& check, int64_t n,
                                const std::function<bool(int64_t, std::vector<int64_t>*)>& index,
                                const std::function<double(int64_t)>& value) {
  const StatementSpec& statement = *check.statement;
  const std::vector<TensorSpec>& tensors = *check.tensors;
  const TensorSpec& out = Find(tensors, statement.output);
  std::map<std::string, int64_t> extent;
  for (const TensorSpec& t : tensors) {
    for (size_t d = 0; d < t.dims.size(); ++d) extent[t.dims[d]] = t.shape[d];
  }
  std::vector<std::string> reduction;
  std::vector<int64_t> red_extent;
  int64_t red_size = 1;
  for (const auto& [idx, e] : extent) {
    if (std::find(out.dims.begin(), out.dims.end(), idx) != out.dims.end()) continue;
    reduction.push_back(idx);
    red_extent.push_back(e);
    red_size *= e;
  }
  constexpr int64_t kLimit = 4'000'000;
  const int64_t step = n * red_size > kLimit ? std::max<int64_t>(1, n * red_size / kLimit) : 1;
  std::map<std::string, int64_t> at;
  std::vector<int64_t> g;
  for (int64_t i = 0; i < n; i += step) {
    if (!index(i, &g)) continue;
    for (size_t d = 0; d < out.dims.size(); ++d) at[out.dims[d]] = g[d];
    double ref = check.accumulate ? ElementValue(check.seed, out.name, Linear(g, out.shape)) : 0.0;
    double mag = std::abs(ref);
    ForEachPoint(red_extent.empty() ? std::vector<int64_t>{1} : red_extent,
                 [&](const std::vector<int64_t>& ri) {
                   for (size_t k = 0; k < reduction.size(); ++k) at[reduction[k]] = ri[k];
                   double term = statement.sum ? 0.0 : 1.0;
                   for (const auto& [tensor, dims] : statement.operands) {
                     std::vector<int64_t> e;
                     for (const std::string& d : dims) e.push_back(at[d]);
                     const double v =
                         ElementValue(check.seed, tensor, Linear(e, Find(tensors, tensor).shape));
                     term = statement.sum ? term + v : term * v;
                   }
                   ref += term;
                   mag += std::abs(term);
                 });
    const double got = value(i);
    if (!(std::abs(got - ref) <= check.tolerance * mag + 1e-6)) {
      std::vector<std::string> coord;
      for (size_t a = 0; a < check.coords.size(); ++a)
        coord.push_back(absl::StrCat((*check.axis_names)[a], "=", check.coords[a]));
      return absl::StrFormat("rank (%s): %s[%s] = %.6g but the reference is %.6g",
                             absl::StrJoin(coord, ", "), out.name, absl::StrJoin(g, ", "), got,
                             ref);
    }
  }
  return "";
}

std::string CheckOutputShard(const ReferenceCheck& check,
                             const std::function<double(int64_t)>& value) {
  const TensorSpec& out = Find(*check.tensors, check.statement->output);
  const std::vector<int64_t> start = out.block_start(check.coords);
  return CheckOutputElements(
      check, Elements(out.local_shape),
      [&](int64_t i, std::vector<int64_t>* g) {
        *g = Unlinear(i, out.local_shape);
        for (size_t d = 0; d < start.size(); ++d) (*g)[d] += start[d];
        return true;
      },
      value);
}

}  // namespace meshtune::runtime
