// Rank statistics against values worked by hand and properties over every permutation of a
// few items: rho and tau are 1 for the same order, -1 for the reverse, symmetric, and
// unchanged by any increasing transform of either side.
#include "engine/rank_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace meshtune::engine {
namespace {

TEST(RankStatsTest, RanksShareTiesAverage) {
  EXPECT_EQ(Ranks({30, 10, 20, 10}), (std::vector<double>{4, 1.5, 3, 1.5}));
}

TEST(RankStatsTest, HandWorkedValues) {
  // x ranks 1..5; y ranks 1,3,2,5,4: d^2 = 0+1+1+1+1 = 4, rho = 1 - 6*4/(5*24) = 0.8.
  const std::vector<double> x = {1, 2, 3, 4, 5}, y = {10, 30, 20, 50, 40};
  EXPECT_NEAR(SpearmanRho(x, y), 0.8, 1e-12);
  // 10 pairs, 2 discordant: (8 - 2) / 10.
  EXPECT_NEAR(KendallTau(x, y), 0.6, 1e-12);
  // Ties in y: pairs (1,2) tied in y; 9 untied in y, 10 in x; concordant 9, discordant 0.
  EXPECT_NEAR(KendallTau({1, 2, 3, 4, 5}, {1, 1, 2, 3, 4}), 9 / std::sqrt(90.0), 1e-12);
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(Median({})));
  EXPECT_TRUE(std::isnan(SpearmanRho({1}, {2})));
  EXPECT_TRUE(std::isnan(KendallTau({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(SpearmanRho({1, 2, 3}, {5, 5, 5})));
}

// Every permutation of 6 values: the properties, and rho as 1 - 6 sum d^2 / (n (n^2 - 1))
// (exact without ties).
TEST(RankStatsTest, PropertiesOverEveryPermutation) {
  std::vector<double> x(6), y(6);
  std::iota(x.begin(), x.end(), 1.0);
  y = x;
  int seen = 0;
  do {
    ++seen;
    double d2 = 0;
    for (size_t i = 0; i < x.size(); ++i) d2 += (x[i] - y[i]) * (x[i] - y[i]);
    const double rho = SpearmanRho(x, y), tau = KendallTau(x, y);
    EXPECT_NEAR(rho, 1 - 6 * d2 / (6 * 35), 1e-12);
    EXPECT_NEAR(rho, SpearmanRho(y, x), 1e-12);
    EXPECT_NEAR(tau, KendallTau(y, x), 1e-12);
    std::vector<double> cubed(y.size());
    for (size_t i = 0; i < y.size(); ++i) cubed[i] = std::exp(y[i]) + 7;
    EXPECT_NEAR(rho, SpearmanRho(x, cubed), 1e-12);
    EXPECT_NEAR(tau, KendallTau(x, cubed), 1e-12);
    EXPECT_GE(rho, -1 - 1e-12);
    EXPECT_LE(rho, 1 + 1e-12);
  } while (std::next_permutation(y.begin(), y.end()));
  EXPECT_EQ(seen, 720);
  std::vector<double> reversed(x.rbegin(), x.rend());
  EXPECT_NEAR(SpearmanRho(x, reversed), -1, 1e-12);
  EXPECT_NEAR(KendallTau(x, reversed), -1, 1e-12);
  EXPECT_NEAR(KendallTau(x, x), 1, 1e-12);
}

}  // namespace
}  // namespace meshtune::engine
