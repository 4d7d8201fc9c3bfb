#include "base/sample_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace meshtune::base {

namespace {

// The type-7 quantile q of the sorted `v` (not empty).
double Quantile(const std::vector<double>& v, double q) {
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// P(X <= k) for X ~ binomial(n, 1/2), by summing the terms in log space (n up to millions).
double BinomialHalfCdf(int n, int k) {
  if (k < 0) return 0;
  if (k >= n) return 1;
  double sum = 0;
  const double log_half_n = n * std::log(0.5);
  for (int i = 0; i <= k; ++i) {
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                    log_half_n);
  }
  return std::min(1.0, sum);
}

// The largest j with P(X <= j - 1) <= alpha / 2 for a sample of n: the interval [x_(j),
// x_(n+1-j)] misses the median only when j - 1 or fewer samples fall on one side.
int MedianCiRank(int n) {
  const double tail = (1 - kConfidence) / 2;
  int j = 1;
  while (j + 1 <= (n + 1) / 2 && BinomialHalfCdf(n, j) <= tail) ++j;
  return j;
}

}  // namespace

double MedianCiLevel(int n) { return n < 1 ? 0 : 1 - 2 * BinomialHalfCdf(n, MedianCiRank(n) - 1); }

int CiPercent(double level) {
  if (!(level > 0)) return 0;
  return level >= kConfidence ? static_cast<int>(100 * kConfidence + 0.5)
                              : static_cast<int>(100 * level);
}

SampleStats Summarize(std::vector<double> v) {
  SampleStats s;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (v.empty()) {
    s.min = s.q1 = s.median = s.q3 = s.max = s.ci_low = s.ci_high = s.ci_level = nan;
    return s;
  }
  std::sort(v.begin(), v.end());
  const int n = static_cast<int>(v.size());
  s.n = n;
  s.min = v.front();
  s.max = v.back();
  s.q1 = Quantile(v, 0.25);
  s.q3 = Quantile(v, 0.75);
  s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  const int j = MedianCiRank(n);
  s.ci_low = v[j - 1];
  s.ci_high = v[n - j];
  s.ci_level = MedianCiLevel(n);
  return s;
}

PairedComparison ComparePaired(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] > 0 && b[i] > 0 && std::isfinite(a[i]) && std::isfinite(b[i])) {
      ratios.push_back(a[i] / b[i]);
    }
  }
  PairedComparison out;
  out.ratio = Summarize(std::move(ratios));
  out.separated = out.ratio.n >= kSamplesFor95 && (out.ratio.ci_high < 1 || out.ratio.ci_low > 1);
  return out;
}

bool IntervalsSeparate(const SampleStats& a, const SampleStats& b) {
  return a.n > 0 && b.n > 0 && (a.ci_high < b.ci_low || b.ci_high < a.ci_low);
}

}  // namespace meshtune::base
