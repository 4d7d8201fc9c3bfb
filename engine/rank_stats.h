// Rank statistics for comparing a model's predictions with measurements: Spearman's rho,
// Kendall's tau-b (both with ties), the median, and relative errors.
#ifndef MESHTUNE_ENGINE_RANK_STATS_H_
#define MESHTUNE_ENGINE_RANK_STATS_H_

#include <vector>

namespace meshtune::engine {

// The ranks of `v` (1-based, ascending values), tied values sharing their average rank.
std::vector<double> Ranks(const std::vector<double>& v);

// Spearman's rho of `x` and `y` (equal sizes): the Pearson correlation of their ranks.
// NaN when there are fewer than 2 pairs or either side is constant.
double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y);

// Kendall's tau-b of `x` and `y` (equal sizes): (concordant - discordant pairs) over the
// geometric mean of the pairs untied in x and untied in y. NaN when there are fewer than 2
// pairs or either side is constant.
double KendallTau(const std::vector<double>& x, const std::vector<double>& y);

// The median of `v` (the mean of the middle two for an even count); NaN when empty.
double Median(std::vector<double> v);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_RANK_STATS_H_
