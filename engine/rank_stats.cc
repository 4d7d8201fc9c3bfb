#include "engine/rank_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "base/median.h"

namespace meshtune::engine {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Pearson's correlation; NaN when a side has no variance.
double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

int Sign(double v) { return (v > 0) - (v < 0); }

}  // namespace

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return rank;
}

double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 2 || x.size() != y.size()) return kNaN;
  return Pearson(Ranks(x), Ranks(y));
}

double KendallTau(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 2 || x.size() != y.size()) return kNaN;
  double concordant = 0, discordant = 0, untied_x = 0, untied_y = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) {
      const int sx = Sign(x[i] - x[j]), sy = Sign(y[i] - y[j]);
      untied_x += sx != 0;
      untied_y += sy != 0;
      if (sx * sy > 0) ++concordant;
      if (sx * sy < 0) ++discordant;
    }
  }
  if (untied_x == 0 || untied_y == 0) return kNaN;
  return (concordant - discordant) / std::sqrt(untied_x * untied_y);
}

double Median(std::vector<double> v) { return base::Median(std::move(v)); }

}  // namespace meshtune::engine
