// The median of a list of numbers: what every layer quotes of repeated timings.
#ifndef MESHTUNE_BASE_MEDIAN_H_
#define MESHTUNE_BASE_MEDIAN_H_

#include <algorithm>
#include <limits>
#include <vector>

namespace meshtune::base {

// The median of `v` (the mean of the middle two for an even count); NaN when empty.
inline double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace meshtune::base

#endif  // MESHTUNE_BASE_MEDIAN_H_
