#include "search/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace meshtune::search {

namespace {

bool Has(const ir::TensorAccess& a, const std::string& index) {
  return std::find(a.indices.begin(), a.indices.end(), index) != a.indices.end();
}

}  // namespace

std::optional<double> MatmulCommLowerBound(const ir::Problem& p, int64_t ranks) {
  if (ranks <= 1 || p.combine != ir::Problem::Combine::kProduct || p.operands.size() != 2)
    return std::nullopt;
  const ir::TensorAccess& out = p.output;
  const ir::TensorAccess& a = p.operands[0];
  const ir::TensorAccess& b = p.operands[1];
  if (a.tensor == b.tensor || a.tensor == out.tensor || b.tensor == out.tensor) return std::nullopt;
  double m = 1, n = 1, k = 1;
  for (const std::string& index : p.indices) {
    const bool in_out = Has(out, index), in_a = Has(a, index), in_b = Has(b, index);
    const double extent = static_cast<double>(p.extents.at(index));
    if (in_out && in_a && !in_b) {
      m *= extent;
    } else if (in_out && in_b && !in_a) {
      n *= extent;
    } else if (in_a && in_b && !in_out) {
      k *= extent;
    } else {
      return std::nullopt;
    }
  }
  std::vector<double> d = {m, n, k};
  std::sort(d.begin(), d.end(), std::greater<double>());
  const double d1 = d[0], d2 = d[1], d3 = d[2];
  const double procs = static_cast<double>(ranks);
  double accessed = 0;
  if (procs <= d1 / d2) {
    accessed = (d1 * d2 + d1 * d3) / procs + d2 * d3;
  } else if (procs <= d1 * d2 / (d3 * d3)) {
    accessed = 2 * std::sqrt(d1 * d2 * d3 * d3 / procs) + d1 * d2 / procs;
  } else {
    accessed = 3 * std::cbrt(std::pow(d1 * d2 * d3 / procs, 2));
  }
  return accessed - (d1 * d2 + d1 * d3 + d2 * d3) / procs;
}

}  // namespace meshtune::search
