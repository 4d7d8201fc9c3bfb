#include "base/sample_stats.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace meshtune::base {
namespace {

TEST(SampleStatsTest, OrderStatisticsOfASmallSample) {
  const SampleStats s = Summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 5);
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.q1, 2);  // type 7: h = 4 * 0.25 = 1
  EXPECT_EQ(s.q3, 4);
  // Five samples cannot give 95%: the whole range, covering 1 - 2/32.
  EXPECT_EQ(s.ci_low, 1);
  EXPECT_EQ(s.ci_high, 5);
  EXPECT_DOUBLE_EQ(s.ci_level, 1 - 2.0 / 32);
}

TEST(SampleStatsTest, CoverageByCountAndAsMessagesPrintIt) {
  EXPECT_EQ(MedianCiLevel(0), 0);
  EXPECT_EQ(MedianCiLevel(1), 0);
  EXPECT_DOUBLE_EQ(MedianCiLevel(3), 0.75);
  EXPECT_DOUBLE_EQ(MedianCiLevel(5), 1 - 2.0 / 32);
  EXPECT_DOUBLE_EQ(MedianCiLevel(6), 1 - 2.0 / 64);
  for (int n = 1; n <= 40; ++n) {
    EXPECT_DOUBLE_EQ(MedianCiLevel(n), Summarize(std::vector<double>(n, 1.0)).ci_level) << n;
    EXPECT_EQ(MedianCiLevel(n) >= kConfidence, n >= kSamplesFor95) << n;
  }
  EXPECT_EQ(CiPercent(0.75), 75);
  EXPECT_EQ(CiPercent(0.9375), 93);
  EXPECT_EQ(CiPercent(0.96875), 95);
  EXPECT_EQ(CiPercent(0), 0);
}

TEST(SampleStatsTest, EvenCountsInterpolate) {
  const SampleStats s = Summarize({4, 1, 3, 2});
  EXPECT_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.q1, 1.75);
  EXPECT_DOUBLE_EQ(s.q3, 3.25);
}

// The interval's ranks match the binomial table (e.g. Conover, Practical Nonparametric
// Statistics): n = 6 -> [x1, x6], n = 9 -> [x2, x8], n = 20 -> [x6, x15], n = 100 ->
// [x40, x61].
TEST(SampleStatsTest, IntervalRanksMatchTheBinomialTable) {
  const std::vector<std::pair<int, int>> table = {{6, 1}, {8, 1}, {9, 2}, {20, 6}, {100, 40}};
  for (const auto& [n, j] : table) {
    std::vector<double> v;
    for (int i = 1; i <= n; ++i) v.push_back(i);
    const SampleStats s = Summarize(v);
    EXPECT_EQ(s.ci_low, j) << n;
    EXPECT_EQ(s.ci_high, n + 1 - j) << n;
    EXPECT_GE(s.ci_level, kConfidence) << n;
  }
}

// Property: over many samples of a known distribution the interval holds the true median
// at least about 95% of the time.
TEST(SampleStatsTest, IntervalCoversTheTrueMedian) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(0, 0.5);  // median exp(0) = 1
  int covered = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(15);
    for (double& x : v) x = d(rng);
    const SampleStats s = Summarize(v);
    if (s.ci_low <= 1 && 1 <= s.ci_high) ++covered;
  }
  EXPECT_GE(covered, 0.94 * trials);
}

TEST(SampleStatsTest, EmptyIsNaN) {
  const SampleStats s = Summarize({});
  EXPECT_EQ(s.n, 0);
  EXPECT_TRUE(std::isnan(s.median));
}

TEST(SampleStatsTest, PairedRatiosSeparateWhatIsApartAndNotWhatIsNoise) {
  // b is 10% slower in every round, whatever the round's noise: separated.
  std::vector<double> a, b;
  for (int i = 0; i < 8; ++i) {
    const double round = 1 + 0.5 * (i % 3);  // a slow second lands on both
    a.push_back(round);
    b.push_back(1.1 * round);
  }
  PairedComparison c = ComparePaired(a, b);
  EXPECT_TRUE(c.separated);
  EXPECT_NEAR(c.ratio.median, 1 / 1.1, 1e-12);
  // Unpaired, the same numbers overlap: the round noise is larger than the difference.
  EXPECT_FALSE(IntervalsSeparate(Summarize(a), Summarize(b)));
  // Ratios on both sides of 1: not separated.
  c = ComparePaired({1, 2, 1, 2, 1, 2, 1, 2}, {2, 1, 2, 1, 2, 1, 2, 1});
  EXPECT_FALSE(c.separated);
  // Too few rounds never separate, however far apart.
  EXPECT_FALSE(ComparePaired({1, 1, 1}, {2, 2, 2}).separated);
  // A round one of them lacks (0) is left out.
  EXPECT_EQ(ComparePaired({1, 0, 1}, {2, 2, 2}).ratio.n, 2);
}

}  // namespace
}  // namespace meshtune::base
