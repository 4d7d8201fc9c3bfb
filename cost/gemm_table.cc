#include "cost/gemm_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace meshtune::cost {
namespace {

// Where `x` falls on `axis` (ascending): the cell's lower index and the weight of the upper
// one in log2 space, clamped to the axis's range; `below` is x / axis[0] when x is under it
// (the rate's factor there), else 1.
struct Position {
  size_t lo = 0;
  double t = 0;
  double below = 1;
};

Position Locate(const std::vector<int64_t>& axis, int64_t x) {
  Position p;
  const double v = static_cast<double>(std::max<int64_t>(x, 1));
  if (v <= static_cast<double>(axis.front())) {
    p.below = v / static_cast<double>(axis.front());
    return p;
  }
  if (v >= static_cast<double>(axis.back())) {
    p.lo = axis.size() - 1;
    return p;
  }
  while (p.lo + 1 < axis.size() && static_cast<double>(axis[p.lo + 1]) <= v) ++p.lo;
  if (p.lo + 1 == axis.size()) return p;
  const double a = std::log2(static_cast<double>(axis[p.lo]));
  const double b = std::log2(static_cast<double>(axis[p.lo + 1]));
  p.t = (std::log2(v) - a) / (b - a);
  return p;
}

}  // namespace

absl::StatusOr<GemmTable> GemmTable::Create(const std::vector<GemmSample>& samples) {
  GemmTable table;
  if (samples.empty()) return table;
  std::set<int64_t> values[3];
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> rate;
  for (const GemmSample& s : samples) {
    const std::string shape = absl::StrCat(s.m, "x", s.n, "x", s.k);
    if (s.m < 1 || s.n < 1 || s.k < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("GEMM rate of shape ", shape, ": sizes must be positive"));
    }
    if (!(s.flops_per_s > 0) || !std::isfinite(s.flops_per_s)) {
      return absl::InvalidArgumentError(absl::StrCat("GEMM rate of shape ", shape, " is ",
                                                     s.flops_per_s, "; it must be positive"));
    }
    if (!rate.emplace(std::make_tuple(s.m, s.n, s.k), s.flops_per_s).second) {
      return absl::InvalidArgumentError(absl::StrCat("GEMM shape ", shape, " is measured twice"));
    }
    values[0].insert(s.m);
    values[1].insert(s.n);
    values[2].insert(s.k);
  }
  for (int d = 0; d < 3; ++d) table.axis_[d].assign(values[d].begin(), values[d].end());
  for (int64_t m : table.axis_[0]) {
    for (int64_t n : table.axis_[1]) {
      for (int64_t k : table.axis_[2]) {
        const auto it = rate.find(std::make_tuple(m, n, k));
        if (it == rate.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "the GEMM rates do not form a full grid: shape ", m, "x", n, "x", k, " is missing"));
        }
        table.rates_.push_back(it->second);
      }
    }
  }
  return table;
}

double GemmTable::Rate(int64_t m, int64_t n, int64_t k) const {
  if (Empty()) return 0;
  const Position p[3] = {Locate(axis_[0], m), Locate(axis_[1], n), Locate(axis_[2], k)};
  double rate = 0;
  for (int corner = 0; corner < 8; ++corner) {
    size_t at[3];
    double w = 1;
    for (int d = 0; d < 3; ++d) {
      const bool up = (corner >> d) & 1;
      if (up && p[d].t == 0) {
        w = 0;
        break;
      }
      at[d] = p[d].lo + (up ? 1 : 0);
      w *= up ? p[d].t : 1 - p[d].t;
    }
    if (w > 0) rate += w * At(at[0], at[1], at[2]);
  }
  return rate * p[0].below * p[1].below * p[2].below;
}

double GemmTable::Seconds(int64_t m, int64_t n, int64_t k) const {
  if (Empty()) return 0;
  const double flops = 2.0 * static_cast<double>(std::max<int64_t>(m, 1)) *
                       static_cast<double>(std::max<int64_t>(n, 1)) *
                       static_cast<double>(std::max<int64_t>(k, 1));
  return flops / Rate(m, n, k);
}

GemmTable GemmTable::Scaled(double factor) const {
  GemmTable out = *this;
  for (double& r : out.rates_) r *= factor;
  return out;
}

}  // namespace meshtune::cost
