// GemmTable: exact at the grid, interpolated in log space between, clamped above, in
// proportion below; bad grids refused with their reason.
#include "cost/gemm_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace meshtune::cost {
namespace {

// A full grid over {16, 64, 256} per dim with rate(m, n, k) = f(m, n, k).
template <typename F>
std::vector<GemmSample> Grid(F f) {
  std::vector<GemmSample> out;
  for (int64_t m : {16, 64, 256}) {
    for (int64_t n : {16, 64, 256}) {
      for (int64_t k : {16, 64, 256}) out.push_back({m, n, k, f(m, n, k)});
    }
  }
  return out;
}

// A rate linear in log2 of each size: trilinear interpolation in log space is exact for it.
double LogLinear(double m, double n, double k) {
  return 1e9 * (1 + std::log2(m) + 2 * std::log2(n) + 3 * std::log2(k));
}

TEST(GemmTableTest, ExactAtEveryMeasuredShape) {
  const auto samples =
      Grid([](int64_t m, int64_t n, int64_t k) { return 1e9 * (m + 3 * n + 7 * k); });
  const absl::StatusOr<GemmTable> t = GemmTable::Create(samples);
  ASSERT_TRUE(t.ok()) << t.status();
  for (const GemmSample& s : samples) {
    EXPECT_DOUBLE_EQ(t->Rate(s.m, s.n, s.k), s.flops_per_s) << s.m << "x" << s.n << "x" << s.k;
    EXPECT_DOUBLE_EQ(t->Seconds(s.m, s.n, s.k), 2.0 * s.m * s.n * s.k / s.flops_per_s);
  }
}

TEST(GemmTableTest, InterpolatesInLogSpaceBetweenGridPoints) {
  const absl::StatusOr<GemmTable> t = GemmTable::Create(Grid([](int64_t m, int64_t n, int64_t k) {
    return LogLinear(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k));
  }));
  ASSERT_TRUE(t.ok()) << t.status();
  // Every shape inside the grid's range, not only midpoints.
  for (int64_t m = 16; m <= 256; m += 13) {
    for (int64_t n = 16; n <= 256; n += 29) {
      for (int64_t k = 16; k <= 256; k += 41) {
        const double expected =
            LogLinear(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k));
        EXPECT_NEAR(t->Rate(m, n, k), expected, 1e-6 * expected) << m << "x" << n << "x" << k;
      }
    }
  }
  // Halfway in log space (32 between 16 and 64) is the mean of the two rates.
  EXPECT_DOUBLE_EQ(t->Rate(32, 16, 16), (t->Rate(16, 16, 16) + t->Rate(64, 16, 16)) / 2);
}

TEST(GemmTableTest, ClampedAboveAndProportionalBelow) {
  const absl::StatusOr<GemmTable> t =
      GemmTable::Create(Grid([](int64_t m, int64_t n, int64_t k) { return 1e9 * (m + n + k); }));
  ASSERT_TRUE(t.ok());
  // Larger than the grid: the rate of the largest size.
  EXPECT_DOUBLE_EQ(t->Rate(4096, 64, 16), t->Rate(256, 64, 16));
  EXPECT_DOUBLE_EQ(t->Rate(1000, 1000, 1000), t->Rate(256, 256, 256));
  // Smaller: a call costs what one of the smallest size does (rate in proportion).
  EXPECT_DOUBLE_EQ(t->Rate(4, 64, 16), t->Rate(16, 64, 16) / 4);
  EXPECT_DOUBLE_EQ(t->Seconds(4, 64, 16), t->Seconds(16, 64, 16));
  EXPECT_DOUBLE_EQ(t->Rate(1, 1, 1), t->Rate(16, 16, 16) / (16.0 * 16 * 16));
  EXPECT_DOUBLE_EQ(t->Rate(0, 1, 1), t->Rate(1, 1, 1));  // sizes below 1 count as 1
}

TEST(GemmTableTest, ScaledMultipliesEveryRate) {
  const absl::StatusOr<GemmTable> t =
      GemmTable::Create(Grid([](int64_t m, int64_t n, int64_t k) { return 1e9 * (m + n * k); }));
  ASSERT_TRUE(t.ok());
  const GemmTable half = t->Scaled(0.5);
  for (int64_t x : {1, 20, 100, 300}) EXPECT_DOUBLE_EQ(half.Rate(x, 64, x), t->Rate(x, 64, x) / 2);
}

TEST(GemmTableTest, EmptyTableHasNoRate) {
  const absl::StatusOr<GemmTable> t = GemmTable::Create({});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->Empty());
  EXPECT_EQ(t->Rate(64, 64, 64), 0);
  EXPECT_EQ(t->Seconds(64, 64, 64), 0);
}

TEST(GemmTableTest, RefusesGridsItCannotInterpolate) {
  std::vector<GemmSample> samples = Grid([](int64_t, int64_t, int64_t) { return 1e9; });
  std::vector<GemmSample> missing = samples;
  missing.erase(missing.begin() + 5);  // 16 x 64 x 256
  EXPECT_EQ(GemmTable::Create(missing).status().message(),
            "the GEMM rates do not form a full grid: shape 16x64x256 is missing");
  std::vector<GemmSample> twice = samples;
  twice.push_back(samples[3]);
  EXPECT_EQ(GemmTable::Create(twice).status().message(), "GEMM shape 16x64x16 is measured twice");
  std::vector<GemmSample> bad = samples;
  bad[0].flops_per_s = -1;
  EXPECT_EQ(GemmTable::Create(bad).status().message(),
            "GEMM rate of shape 16x16x16 is -1; it must be positive");
  bad = samples;
  bad[0].k = 0;
  EXPECT_EQ(GemmTable::Create(bad).status().message(),
            "GEMM rate of shape 16x16x0: sizes must be positive");
}

}  // namespace
}  // namespace meshtune::cost
