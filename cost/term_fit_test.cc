// FitTermScales: scales and the message wait that made the measured times are found again,
// from many random sets of schedules; with noise, classes are pulled toward their common
// scale and those the runs do not have take it; too few runs, runs that do not tell the
// classes apart and bad times are refused with messages that say so.
#include "cost/term_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace meshtune::cost {
namespace {

// `n` schedules with random terms, their measured times made by `truth` (and a random
// overlap), each with a relative error drawn from N(0, noise).
std::vector<TermSample> Samples(std::mt19937& rng, int n, const TermScales& truth,
                                double noise = 0) {
  std::normal_distribution<double> error(0, noise > 0 ? noise : 1);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  std::vector<TermSample> out;
  for (int i = 0; i < n; ++i) {
    TermSample s;
    s.compute = 10 * u(rng);
    s.point_to_point = u(rng);
    s.collective = u(rng);
    s.reduction = u(rng);
    s.overlap = 0.1 * u(rng);
    s.messages = truth.message > 0 ? std::floor(100 * u(rng)) : 0;
    s.measured = truth.compute * s.compute + truth.point_to_point * s.point_to_point +
                 truth.collective * s.collective + truth.reduction * s.reduction +
                 truth.message * s.messages - s.overlap;
    if (noise > 0) s.measured *= 1 + error(rng);
    out.push_back(s);
  }
  return out;
}

TEST(TermFitTest, RecoversTheScalesThatMadeTheTimes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> scale(0.3, 4.0);
  for (int trial = 0; trial < 200; ++trial) {
    const TermScales truth{scale(rng), scale(rng), scale(rng), scale(rng),
                           trial % 2 ? 0.01 * scale(rng) : 0};
    const int n = 7 + trial % 20;
    absl::StatusOr<TermScales> fit = FitTermScales(Samples(rng, n, truth));
    ASSERT_TRUE(fit.ok()) << fit.status();
    EXPECT_NEAR(fit->compute, truth.compute, 1e-9 * truth.compute) << trial;
    EXPECT_NEAR(fit->point_to_point, truth.point_to_point, 1e-9 * truth.point_to_point) << trial;
    EXPECT_NEAR(fit->collective, truth.collective, 1e-9 * truth.collective) << trial;
    EXPECT_NEAR(fit->reduction, truth.reduction, 1e-9 * truth.reduction) << trial;
    EXPECT_NEAR(fit->message, truth.message, 1e-9) << trial;
  }
}

// Noisy runs (5% relative error) of 12 schedules whose classes all cost 1.3 times what
// calibration says, and 0.02 s a message: over many sets of runs, the classes that make up
// a small part of the time stay within 0.3 (rms) of 1.3, where a free least squares strays
// about 0.6 (computed aside); and a class the runs do not have takes the common scale, not 1.
TEST(TermFitTest, NoisyRunsPullTheClassesTowardTheirCommonScale) {
  std::mt19937 rng(11);
  double squares = 0, compute_squares = 0, wait_squares = 0;
  const int trials = 100;
  for (int trial = 0; trial < trials; ++trial) {
    const std::vector<TermSample> samples = Samples(rng, 12, {1.3, 1.3, 1.3, 1.3, 0.02}, 0.05);
    absl::StatusOr<TermScales> fit = FitTermScales(samples);
    ASSERT_TRUE(fit.ok()) << fit.status();
    for (double v : {fit->point_to_point, fit->collective, fit->reduction})
      squares += (v - 1.3) * (v - 1.3) / 3;
    compute_squares += (fit->compute - 1.3) * (fit->compute - 1.3);
    wait_squares += (fit->message - 0.02) * (fit->message - 0.02);
  }
  EXPECT_LT(std::sqrt(squares / trials), 0.3);
  EXPECT_LT(std::sqrt(compute_squares / trials), 0.1);
  EXPECT_LT(std::sqrt(wait_squares / trials), 0.01);
  // Without reductions in the runs, reductions take the others' scale.
  std::vector<TermSample> samples = Samples(rng, 12, {1.3, 1.3, 1.3, 1.3, 0}, 0.05);
  for (TermSample& s : samples) {
    s.measured -= 1.3 * s.reduction;
    s.reduction = 0;
  }
  absl::StatusOr<TermScales> fit = FitTermScales(samples);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->reduction, 1.3, 0.1);
  EXPECT_NE(fit->reduction, 1);
  EXPECT_EQ(fit->message, 0);  // no sample receives a message
}

// Runs that finish sooner the more messages they receive, or whose messages come in
// proportion to their point-to-point time, say nothing of waiting: no wait.
TEST(TermFitTest, AWaitTheRunsCannotShowIsNone) {
  std::mt19937 rng(13);
  std::vector<TermSample> samples = Samples(rng, 10, {1.2, 1.5, 1.1, 2, 0});
  for (TermSample& s : samples) {
    s.messages = 1 + (&s - samples.data());
    s.measured -= 1e-3 * s.messages;
  }
  absl::StatusOr<TermScales> fit = FitTermScales(samples);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->message, 0);
  EXPECT_NEAR(fit->compute, 1.2, 0.2);
  samples = Samples(rng, 10, {1.2, 1.5, 1.1, 2, 0});
  for (TermSample& s : samples) s.messages = 1000 * s.point_to_point;
  fit = FitTermScales(samples);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->message, 0);
  EXPECT_NEAR(fit->point_to_point, 1.5, 1e-9);
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
  samples = Samples(rng, 6, {1, 2, 3, 4, 1e-3});
  EXPECT_EQ(FitTermScales(samples).status().message(),
            "fitting 4 term scales and the message wait needs at least 7 measured schedules, "
            "got 6");
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

// Samples known closely outweigh noisy ones: three measured tightly (weight 10^4) at
// compute x 1.2 and transfers x 0.8, three barely known (weight 1) at twice their terms; the
// weighted fit follows the tight ones, the unweighted one lands between.
TEST(TermFitTest, WeightsFollowTheSpread) {
  EXPECT_DOUBLE_EQ(SpreadWeight(1.0, 0.9, 1.1), 1 / (0.1 * 0.1));
  EXPECT_DOUBLE_EQ(SpreadWeight(1.0, 0.999, 1.001), 1e4);     // at least 1%
  EXPECT_DOUBLE_EQ(SpreadWeight(1.0, 1.0, 1.0), 1 / 0.0025);  // unknown: 5%
  std::vector<TermSample> samples;
  const double compute[] = {1, 2, 3, 1.5, 2.5, 0.5}, transfers[] = {2, 0.5, 1, 1, 3, 2};
  for (int i = 0; i < 6; ++i) {
    TermSample s;
    s.compute = compute[i];
    s.point_to_point = transfers[i];
    s.measured =
        i < 3 ? 1.2 * s.compute + 0.8 * s.point_to_point : 2 * (s.compute + s.point_to_point);
    s.weight = i < 3 ? 1e4 : 1;
    samples.push_back(s);
  }
  const absl::StatusOr<TermScales> weighted = FitTermScales(samples);
  ASSERT_TRUE(weighted.ok()) << weighted.status();
  for (TermSample& s : samples) s.weight = 1;
  const absl::StatusOr<TermScales> equal = FitTermScales(samples);
  ASSERT_TRUE(equal.ok()) << equal.status();
  EXPECT_NEAR(weighted->compute, 1.2, 0.05);
  EXPECT_NEAR(weighted->point_to_point, 0.8, 0.05);
  EXPECT_GT(std::fabs(equal->compute - 1.2) + std::fabs(equal->point_to_point - 0.8), 0.2)
      << equal->compute << " " << equal->point_to_point;
  samples[2].weight = 0;
  EXPECT_EQ(FitTermScales(samples).status().message(),
            "sample 3 has weight 0; it must be positive");
}

}  // namespace
}  // namespace meshtune::cost
