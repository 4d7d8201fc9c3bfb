// FitTermScales: scales that made the measured times are found again, from many random
// sets of schedules; classes the runs do not have keep 1; too few runs, runs that do not
// tell the classes apart and bad times are refused with messages that say so.
#include "search/term_fit.h"

#include <gtest/gtest.h>

#include <random>

namespace meshtune::search {
namespace {

// `n` schedules with random terms, their measured times made by `truth` (and a random
// overlap).
std::vector<TermSample> Samples(std::mt19937& rng, int n, const TermScales& truth) {
  std::uniform_real_distribution<double> u(0.1, 2.0);
  std::vector<TermSample> out;
  for (int i = 0; i < n; ++i) {
    TermSample s;
    s.compute = 10 * u(rng);
    s.point_to_point = u(rng);
    s.collective = u(rng);
    s.reduction = u(rng);
    s.overlap = 0.1 * u(rng);
    s.measured = truth.compute * s.compute + truth.point_to_point * s.point_to_point +
                 truth.collective * s.collective + truth.reduction * s.reduction - s.overlap;
    out.push_back(s);
  }
  return out;
}

TEST(TermFitTest, RecoversTheScalesThatMadeTheTimes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> scale(0.3, 4.0);
  for (int trial = 0; trial < 200; ++trial) {
    const TermScales truth{scale(rng), scale(rng), scale(rng), scale(rng)};
    const int n = 6 + trial % 20;
    absl::StatusOr<TermScales> fit = FitTermScales(Samples(rng, n, truth));
    ASSERT_TRUE(fit.ok()) << fit.status();
    EXPECT_NEAR(fit->compute, truth.compute, 1e-9 * truth.compute) << trial;
    EXPECT_NEAR(fit->point_to_point, truth.point_to_point, 1e-9 * truth.point_to_point) << trial;
    EXPECT_NEAR(fit->collective, truth.collective, 1e-9 * truth.collective) << trial;
    EXPECT_NEAR(fit->reduction, truth.reduction, 1e-9 * truth.reduction) << trial;
  }
}

TEST(TermFitTest, AClassTheRunsDoNotHaveKeepsOne) {
  std::mt19937 rng(3);
  std::vector<TermSample> samples = Samples(rng, 10, {1.1, 2.5, 3, 1.7});
  for (TermSample& s : samples) {
    s.measured -= 1.7 * s.reduction;
    s.reduction = 0;
    s.measured -= 3 * s.collective;
    s.collective = 1e-6 * s.compute;  // under 1% of the modelled time: says nothing
  }
  absl::StatusOr<TermScales> fit = FitTermScales(samples);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->compute, 1.1, 1e-4);
  EXPECT_NEAR(fit->point_to_point, 2.5, 1e-3);
  EXPECT_EQ(fit->collective, 1);
  EXPECT_EQ(fit->reduction, 1);
}

TEST(TermFitTest, RefusesWhatCannotBeFitted) {
  std::mt19937 rng(5);
  std::vector<TermSample> samples = Samples(rng, 5, {1, 2, 3, 4});
  EXPECT_EQ(FitTermScales(samples).status().message(),
            "fitting 4 term scales needs at least 6 measured schedules, got 5");
  EXPECT_EQ(FitTermScales({}).status().message(),
            "fitting 0 term scales needs at least 2 measured schedules, got 0");
  samples = Samples(rng, 8, {1, 2, 3, 4});
  samples[2].measured = 0;
  EXPECT_EQ(FitTermScales(samples).status().message(),
            "sample 3 has measured time 0; it must be positive");
  // Every schedule with the same proportions of compute and point-to-point time.
  std::vector<TermSample> alike;
  for (int i = 1; i <= 6; ++i) alike.push_back({10.0 * i, 1.0 * i, 0, 0, 0, 12.0 * i});
  EXPECT_EQ(FitTermScales(alike).status().message(),
            "the runs do not tell the term classes apart (every schedule has them in the same "
            "proportions); measure schedules that differ in them");
  // Longer where there is less point-to-point time: a negative scale.
  std::vector<TermSample> odd;
  for (int i = 1; i <= 6; ++i) odd.push_back({10, 1.0 * i, 0, 0, 0, 12.0 - 0.5 * i});
  EXPECT_EQ(FitTermScales(odd).status().message(),
            "the runs give point-to-point transfers a scale of -0.5; measure schedules that "
            "differ in them");
}

}  // namespace
}  // namespace meshtune::search
