// RunFidelity with fake runners whose "measurements" are known: the spread sample, the
// statistics and the per-pattern errors follow from it; the candidates are measured side by
// side in one call, each point's time its samples' median as measured (no scaling); rho and
// tau with bootstrap intervals, and the pairs beyond the noise the model orders right, as
// computed by hand; failed runs are kept but left out of the statistics; bad counts are
// refused. And the scatter SVG: one circle per verified point, escaped text, a legend per
// family.
#include "engine/fidelity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/job.h"
#include "engine/report/scatter_svg.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "search/runner.h"
#include "search/tuner.h"

namespace meshtune::engine {
namespace {

// Measures `time(call)` for each candidate, one sample, by the order Run is called (the
// default RunSideBySide: the candidates in the model's order); fails every `fail_every`-th
// run when set.
class FakeRunner : public search::Runner {
 public:
  FakeRunner(std::function<double(int)> time, int fail_every = 0)
      : time_(std::move(time)), fail_every_(fail_every) {}
  bool measures() const override { return true; }
  search::CandidateRun Run(const search::MeasureInput& in) override {
    search::CandidateRun r;
    traces.insert(in.trace->ToString());
    order.push_back(in.trace->ToString());
    ++calls_;
    if (fail_every_ > 0 && calls_ % fail_every_ == 0) {
      r.error = "fake failure";
      return r;
    }
    r.verified = true;
    search::SetSamples({time_(calls_)}, 1, &r);
    return r;
  }
  std::set<std::string> traces;
  std::vector<std::string> order;  // the traces in the order they ran

 private:
  std::function<double(int)> time_;
  int fail_every_;
  int calls_ = 0;
};

struct Workload {
  ir::Problem problem;
  ir::Mesh mesh;
  cost::CostParams params;
};

Workload Matmul() {
  Workload s;
  s.problem = *ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=64,n=64,k=64");
  s.mesh = *ir::ParseMesh("x=2,y=2");
  s.params.alpha = 1e-6;
  s.params.beta = 1e-9;
  s.params.alpha_coll = 1e-6;
  s.params.beta_coll = 1e-9;
  s.params.gamma = 1e-10;
  return s;
}

TEST(FidelityTest, MeasurementsInTheModelsOrderGiveRhoAndTauOfOne) {
  const Workload s = Matmul();
  // The runs come in the model's order (best first) and take longer each time: the same
  // order as the predictions (ties in the prediction aside).
  FakeRunner runner([](int call) { return 0.001 * call; });
  FidelityOptions options;
  options.count = 6;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->points_size(), 6);
  EXPECT_EQ(runner.traces.size(), 6u);  // six distinct candidates
  EXPECT_EQ(r->ranks(0), 1);            // the best
  EXPECT_EQ(r->ranks(5), r->costed());  // the worst
  for (int i = 1; i < 6; ++i) {
    EXPECT_LT(r->ranks(i - 1), r->ranks(i));
    EXPECT_LE(r->points(i - 1).predicted_s(), r->points(i).predicted_s());
  }
  EXPECT_EQ(r->verified(), 6);
  ASSERT_TRUE(r->has_spearman_rho() && r->has_kendall_tau());
  EXPECT_GT(r->spearman_rho(), 0.9);
  EXPECT_GT(r->kendall_tau(), 0.8);
  EXPECT_EQ(r->mesh(), "x=2,y=2");
  EXPECT_EQ(r->problem(), "C[m,n] += A[m,k] * B[k,n] with k=64,m=64,n=64");
}

TEST(FidelityTest, ErrorsAreRelativeToTheMeasurement) {
  // Every run measures twice its own prediction: relative error 0.5 overall and for every
  // pattern kind, whatever the order.
  v1::FidelityResult r;
  for (double predicted : {1.0, 2.0, 3.0}) {
    v1::MeasuredCandidate* p = r.add_points();
    p->set_predicted_s(predicted);
    p->set_measured_s(2 * predicted);
    p->set_verified(true);
    p->add_patterns(predicted == 1.0 ? "A@ko AllGather(axes=[1])" : "B@ko Shift(axis=0, +1)");
  }
  v1::MeasuredCandidate* failed = r.add_points();
  failed->set_predicted_s(9);
  failed->set_error("timeout");
  Summarize(&r);
  EXPECT_EQ(r.verified(), 3);
  EXPECT_DOUBLE_EQ(r.median_relative_error(), 0.5);
  EXPECT_DOUBLE_EQ(r.spearman_rho(), 1.0);
  ASSERT_EQ(r.patterns_size(), 2);
  EXPECT_EQ(r.patterns(0).pattern(), "AllGather");
  EXPECT_EQ(r.patterns(0).candidates(), 1);
  EXPECT_EQ(r.patterns(1).pattern(), "Shift");
  EXPECT_EQ(r.patterns(1).candidates(), 2);
  EXPECT_DOUBLE_EQ(r.patterns(1).median_relative_error(), 0.5);
  // A model too slow by half: negative signed errors, the same absolute one.
  for (v1::MeasuredCandidate& p : *r.mutable_points()) p.set_measured_s(p.predicted_s() / 2);
  Summarize(&r);
  EXPECT_DOUBLE_EQ(r.median_relative_error(), 1.0);
  EXPECT_DOUBLE_EQ(r.patterns(0).median_relative_error(), -1.0);
}

// RecostFidelity keeps the measurements and the points, and gives each the prediction the
// search makes of it under the new numbers: recosting under the run's own numbers changes
// nothing, under numbers twice as slow everywhere doubles every prediction.
TEST(FidelityTest, RecostKeepsTheRunsAndRepredictsEachPoint) {
  const Workload s = Matmul();
  FakeRunner runner([](int call) { return 0.001 * (7 - call); });  // the reverse order
  FidelityOptions options;
  options.count = 6;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<v1::FidelityResult> same = RecostFidelity(*r, s.params);
  ASSERT_TRUE(same.ok()) << same.status();
  ASSERT_EQ(same->points_size(), r->points_size());
  for (int i = 0; i < r->points_size(); ++i) {
    EXPECT_NEAR(same->points(i).predicted_s(), r->points(i).predicted_s(),
                1e-9 * r->points(i).predicted_s())
        << r->points(i).trace().text();
    EXPECT_EQ(same->points(i).measured_s(), r->points(i).measured_s());
  }
  EXPECT_EQ(same->spearman_rho(), r->spearman_rho());
  cost::CostParams slow = s.params;
  for (double* x : {&slow.alpha, &slow.beta, &slow.alpha_coll, &slow.beta_coll, &slow.gamma})
    *x *= 2;
  absl::StatusOr<v1::FidelityResult> doubled = RecostFidelity(*r, slow);
  ASSERT_TRUE(doubled.ok());
  for (int i = 0; i < r->points_size(); ++i)
    EXPECT_NEAR(doubled->points(i).predicted_s(), 2 * r->points(i).predicted_s(),
                1e-9 * r->points(i).predicted_s());
  v1::FidelityResult bad = *r;
  bad.set_problem("C[m,n] += A[m,k] * B[k,n]");
  EXPECT_EQ(RecostFidelity(bad, s.params).status().message(),
            "fidelity result's problem \"C[m,n] += A[m,k] * B[k,n]\" is not \"EXPR with "
            "EXTENTS\"");
  bad = *r;
  bad.mutable_points(0)->mutable_trace()->set_text("shard(A, q@x)\n");
  EXPECT_EQ(RecostFidelity(bad, s.params).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FidelityTest, FailedRunsAreKeptButNotCounted) {
  const Workload s = Matmul();
  FakeRunner runner([](int call) { return 0.001 * call; }, /*fail_every=*/2);
  FidelityOptions options;
  options.count = 4;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->points_size(), 4);
  EXPECT_EQ(r->verified(), 2);
  EXPECT_EQ(r->points(1).error(), "fake failure");
  EXPECT_FALSE(r->points(1).has_measured_s());
  EXPECT_EQ(FidelityScatter(*r).size(), 2u);
}

// Measures every candidate side by side: RunSideBySide gives item i (in the model's order)
// `samples(i)`, one a round of batches of 4, verified unless i is in `failing` (then "fake
// failure", the samples kept). Run is never to be called. Keeps what it was asked.
class SideBySideRunner : public search::Runner {
 public:
  explicit SideBySideRunner(std::function<std::vector<double>(size_t)> samples,
                            std::set<size_t> failing = {})
      : samples_(std::move(samples)), failing_(std::move(failing)) {}
  bool measures() const override { return true; }
  search::CandidateRun Run(const search::MeasureInput&) override {
    ADD_FAILURE() << "Run called: the candidates are to be measured side by side";
    return {};
  }
  std::vector<search::CandidateRun> RunSideBySide(const std::vector<search::MeasureItem>& items,
                                                  double budget_s) override {
    ++calls;
    budget = budget_s;
    std::vector<search::CandidateRun> out;
    for (size_t i = 0; i < items.size(); ++i) {
      traces.push_back(items[i].schedule->trace->ToString());
      timeouts.push_back(items[i].schedule->timeout_s);
      search::CandidateRun r;
      r.verified = failing_.count(i) == 0;
      if (!r.verified) r.error = "fake failure";
      search::SetSamples(samples_(i), 4, &r);
      out.push_back(std::move(r));
    }
    return out;
  }
  int calls = 0;
  double budget = 0;
  std::vector<std::string> traces;  // of the items, in order
  std::vector<double> timeouts;

 private:
  std::function<std::vector<double>(size_t)> samples_;
  std::set<size_t> failing_;
};

// The predictions of `r`'s points strictly increase (the spread of Matmul() has no ties,
// which the hand-computed ranks below assume).
void ExpectStrictlyIncreasingPredictions(const v1::FidelityResult& r) {
  for (int i = 1; i < r.points_size(); ++i)
    ASSERT_LT(r.points(i - 1).predicted_s(), r.points(i).predicted_s()) << i;
}

// One RunSideBySide call measures every candidate, each item bounded by the timeout and the
// rounds by kRoundsShareOfTimeout of it; each point keeps its samples exactly as measured
// (round_s, `sample`), its time their median (or their fastest); a failed one keeps its
// samples but no time.
TEST(FidelityTest, TheCandidatesAreMeasuredSideBySideInOneCall) {
  const Workload s = Matmul();
  SideBySideRunner runner(
      [](size_t i) {
        const double k = static_cast<double>(i + 1);
        return std::vector<double>{0.003 * k, 0.001 * k, 0.002 * k, 0.005 * k};
      },
      /*failing=*/{1});
  FidelityOptions options;
  options.count = 4;
  options.max_evaluations = 200;
  options.timeout_s = 50;
  std::vector<int64_t> reported;
  options.on_measured = [&](const v1::MeasuredCandidate&, int64_t rank) {
    reported.push_back(rank);
  };
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(runner.calls, 1);
  EXPECT_DOUBLE_EQ(runner.budget, 40);
  EXPECT_EQ(runner.timeouts, std::vector<double>(4, 50));
  ASSERT_EQ(r->points_size(), 4);
  ASSERT_EQ(runner.traces.size(), 4u);
  EXPECT_EQ(reported, std::vector<int64_t>(r->ranks().begin(), r->ranks().end()));
  ExpectStrictlyIncreasingPredictions(*r);
  for (int i : {0, 2, 3}) {
    const v1::MeasuredCandidate& p = r->points(i);
    const double k = i + 1;
    EXPECT_EQ(runner.traces[i], p.trace().text());
    EXPECT_TRUE(p.verified());
    EXPECT_EQ(std::vector<double>(p.round_s().begin(), p.round_s().end()),
              (std::vector<double>{0.003 * k, 0.001 * k, 0.002 * k, 0.005 * k}));
    EXPECT_DOUBLE_EQ(p.measured_s(), 0.0025 * k);
    EXPECT_EQ(p.sample().n(), 4);
    EXPECT_EQ(p.sample().batch(), 4);
    EXPECT_DOUBLE_EQ(p.sample().median_s(), 0.0025 * k);
    EXPECT_DOUBLE_EQ(p.sample().min_s(), 0.001 * k);
    EXPECT_DOUBLE_EQ(p.sample().max_s(), 0.005 * k);
    EXPECT_DOUBLE_EQ(p.sample().ci_level(), 0.875);  // 4 samples: the whole range, 1 - 2^-3
    EXPECT_EQ(p.sample().samples_s_size(), 4);
  }
  EXPECT_FALSE(r->points(1).verified());
  EXPECT_EQ(r->points(1).error(), "fake failure");
  EXPECT_FALSE(r->points(1).has_measured_s());
  EXPECT_EQ(r->points(1).round_s_size(), 4);
  EXPECT_EQ(r->verified(), 3);
  EXPECT_EQ(r->round_statistic(), "median");
  EXPECT_DOUBLE_EQ(r->spearman_rho(), 1.0);
  // Four rounds: no pair separates (ComparePaired needs 6).
  EXPECT_EQ(r->separable_pairs(), 0);
  EXPECT_FALSE(r->has_separable_share());
  // Their fastest instead: 0.001 (i + 1), the samples unchanged.
  v1::FidelityResult fastest = *r;
  ApplyRoundStatistic(RoundStatistic::kMin, &fastest);
  EXPECT_EQ(fastest.round_statistic(), "min");
  for (int i : {0, 2, 3}) EXPECT_DOUBLE_EQ(fastest.points(i).measured_s(), 0.001 * (i + 1));
  EXPECT_FALSE(fastest.points(1).has_measured_s());
  EXPECT_EQ(fastest.points(0).round_s_size(), 4);
}

// Six rounds of four candidates (the model's order 0 < 1 < 2 < 3), of medians 1, 3, 2 and
// 3.05: measured order 0, 2, 1, 3. Ranks (1, 3, 2, 4) against (1, 2, 3, 4): rho = 1 -
// 6 * 2 / (4 * 15) = 0.8; one discordant pair of six: tau = (5 - 1) / 6. Per-round ratios:
// 1 against 3 straddle 1 (3.0/3.2 = 0.94 to 3.0/2.9 = 1.03), every other pair's lie on one
// side: 5 separable pairs, of which the model orders 1 against 2 wrong: 4 of 5.
TEST(FidelityTest, RhoTauAndTheSeparableShareAsComputedByHand) {
  const Workload s = Matmul();
  const std::vector<std::vector<double>> table = {{1.0, 1.1, 1.0, 1.05, 0.95, 1.0},
                                                  {3.0, 3.1, 2.9, 3.0, 3.2, 2.8},
                                                  {2.0, 2.1, 1.9, 2.0, 2.2, 1.8},
                                                  {3.2, 3.0, 3.1, 2.9, 3.4, 2.9}};
  SideBySideRunner runner([&](size_t i) { return table[i]; });
  FidelityOptions options;
  options.count = 4;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->points_size(), 4);
  ExpectStrictlyIncreasingPredictions(*r);
  EXPECT_DOUBLE_EQ(r->points(1).measured_s(), 3.0);
  EXPECT_DOUBLE_EQ(r->points(3).measured_s(), 3.05);
  EXPECT_DOUBLE_EQ(r->spearman_rho(), 0.8);
  EXPECT_DOUBLE_EQ(r->kendall_tau(), 4.0 / 6);
  EXPECT_EQ(r->separable_pairs(), 5);
  EXPECT_EQ(r->separable_agree(), 4);
  ASSERT_TRUE(r->has_separable_share());
  EXPECT_DOUBLE_EQ(r->separable_share(), 0.8);
  // The bootstrap intervals: inside [-1, 1], in order, and the same again (a fixed seed).
  ASSERT_TRUE(r->has_spearman_rho_ci_low() && r->has_spearman_rho_ci_high());
  ASSERT_TRUE(r->has_kendall_tau_ci_low() && r->has_kendall_tau_ci_high());
  EXPECT_LE(-1, r->spearman_rho_ci_low());
  EXPECT_LE(r->spearman_rho_ci_low(), r->spearman_rho_ci_high());
  EXPECT_LE(r->spearman_rho_ci_high(), 1);
  EXPECT_LE(-1, r->kendall_tau_ci_low());
  EXPECT_LE(r->kendall_tau_ci_low(), r->kendall_tau_ci_high());
  EXPECT_LE(r->kendall_tau_ci_high(), 1);
  EXPECT_LT(r->spearman_rho_ci_low(), 0.8);  // four points: a wide interval
  v1::FidelityResult again = *r;
  Summarize(&again);
  EXPECT_EQ(again.spearman_rho_ci_low(), r->spearman_rho_ci_low());
  EXPECT_EQ(again.spearman_rho_ci_high(), r->spearman_rho_ci_high());
  EXPECT_EQ(again.kendall_tau_ci_low(), r->kendall_tau_ci_low());
  EXPECT_EQ(again.kendall_tau_ci_high(), r->kendall_tau_ci_high());
}

// Noise so large that no pair separates: each candidate's six rounds are 1, ..., 6 rotated
// by its place (plus 0.001 per place), so any two candidates' per-round ratios lie on both
// sides of 1. The medians still follow the model: rho and tau 1, and every resample that
// has them agrees (intervals [1, 1]); but no separable pair, and no share.
TEST(FidelityTest, NoiseSoLargeThatNoPairSeparatesGivesNoShare) {
  const Workload s = Matmul();
  SideBySideRunner runner([](size_t i) {
    std::vector<double> v;
    for (size_t r = 0; r < 6; ++r) v.push_back(1.0 + static_cast<double>((r + i) % 6) + 0.001 * i);
    return v;
  });
  FidelityOptions options;
  options.count = 4;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStrictlyIncreasingPredictions(*r);
  EXPECT_EQ(r->verified(), 4);
  EXPECT_DOUBLE_EQ(r->spearman_rho(), 1.0);
  EXPECT_DOUBLE_EQ(r->kendall_tau(), 1.0);
  EXPECT_DOUBLE_EQ(r->spearman_rho_ci_low(), 1.0);
  EXPECT_DOUBLE_EQ(r->spearman_rho_ci_high(), 1.0);
  EXPECT_DOUBLE_EQ(r->kendall_tau_ci_low(), 1.0);
  EXPECT_DOUBLE_EQ(r->kendall_tau_ci_high(), 1.0);
  EXPECT_EQ(r->separable_pairs(), 0);
  EXPECT_EQ(r->separable_agree(), 0);
  EXPECT_FALSE(r->has_separable_share());
}

// Points of different sample counts compare by the intervals of their medians (unpaired),
// those of the same count by their per-round ratios, and fewer than 6 samples never
// separate. P0 ~1 (6 samples) and P3 ~3 (6, predicted fastest): paired, apart, ordered
// wrong; P1 ~2 (7): apart from both, unpaired, right against P0, wrong against P3; P2 (3
// samples) separates from none. 1 of 3; and no intervals with one verified point.
TEST(FidelityTest, DifferentSampleCountsCompareUnpaired) {
  v1::FidelityResult r;
  const std::vector<std::pair<double, std::vector<double>>> points = {
      {1.0, {1.0, 1.1, 1.2, 1.0, 1.05, 1.15}},
      {2.0, {2.0, 2.1, 1.9, 2.2, 2.0, 2.05, 1.95}},
      {3.0, {10, 10, 10}},
      {0.5, {3.0, 2.9, 3.1, 3.2, 2.8, 3.0}}};
  for (const auto& [predicted, samples] : points) {
    v1::MeasuredCandidate* p = r.add_points();
    p->set_verified(true);
    p->set_predicted_s(predicted);
    for (double x : samples) p->add_round_s(x);
  }
  ApplyRoundStatistic(RoundStatistic::kMedian, &r);
  EXPECT_EQ(r.verified(), 4);
  EXPECT_EQ(r.separable_pairs(), 3);
  EXPECT_EQ(r.separable_agree(), 1);
  EXPECT_DOUBLE_EQ(r.separable_share(), 1.0 / 3);
  r.mutable_points()->DeleteSubrange(1, 3);
  Summarize(&r);
  EXPECT_EQ(r.verified(), 1);
  EXPECT_FALSE(r.has_spearman_rho());
  EXPECT_FALSE(r.has_spearman_rho_ci_low());
  EXPECT_FALSE(r.has_kendall_tau_ci_high());
  EXPECT_EQ(r.separable_pairs(), 0);
  EXPECT_FALSE(r.has_separable_share());
}

// FitToRuns: runs whose measured times the model makes with scales (1.3, 2.5, 0.7, 3) are
// reproduced by the fitted scales (a class the runs lack keeps 1, which costs nothing
// there); before the fit the model is off.
TEST(FidelityTest, FitToRunsFindsTheScalesThatMadeTheRuns) {
  const Workload s = Matmul();
  std::vector<v1::FidelityResult> runs;
  cost::CostParams truth = s.params;
  truth.scales = {1.3, 2.5, 0.7, 3};
  for (const char* mesh : {"x=2,y=2", "x=4"}) {
    FakeRunner runner([](int) { return 1.0; });
    FidelityOptions options;
    options.count = 12;
    options.max_evaluations = 400;
    absl::StatusOr<v1::FidelityResult> r =
        RunFidelity(ir::ProgramOf(s.problem), *ir::ParseMesh(mesh), s.params, options, runner);
    ASSERT_TRUE(r.ok()) << r.status();
    absl::StatusOr<v1::FidelityResult> made = RecostFidelity(*r, truth);
    ASSERT_TRUE(made.ok()) << made.status();
    for (v1::MeasuredCandidate& p : *r->mutable_points()) p.set_measured_s(0);
    for (int i = 0; i < r->points_size(); ++i)
      r->mutable_points(i)->set_measured_s(made->points(i).predicted_s());
    runs.push_back(*r);
  }
  absl::StatusOr<RunFit> fit = FitToRuns(runs, s.params);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->schedules, 24);
  ASSERT_EQ(fit->before.size(), 2u);
  ASSERT_EQ(fit->after.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(fit->before[i].median_relative_error(), 0.05);
    EXPECT_LT(fit->after[i].median_relative_error(), 1e-6);
    EXPECT_EQ(fit->after[i].points_size(), 12);
  }
  EXPECT_NEAR(fit->scales.compute, 1.3, 1e-6);
  // Bad input: a run whose trace does not lower, too few schedules.
  std::vector<v1::FidelityResult> bad = runs;
  bad[0].mutable_points(0)->mutable_trace()->set_text("shard(A, q@x)\n");
  EXPECT_EQ(FitToRuns(bad, s.params).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<v1::FidelityResult> few = {runs[0]};
  few[0].mutable_points()->DeleteSubrange(2, 10);
  EXPECT_EQ(FitToRuns(few, s.params).status().code(), absl::StatusCode::kInvalidArgument);
}

// FidelityOptions::space ranks tune's wider spaces: with all-to-all transfers, matmul with k
// in steps that cut the blocks on x=4 has more points to rank, and some use one.
TEST(FidelityTest, RanksTheSpaceItIsGiven) {
  Workload s = Matmul();
  s.problem = *ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=4,n=4,k=12");
  s.mesh = *ir::ParseMesh("x=4");
  FidelityOptions options;
  options.count = 40;
  options.max_evaluations = 1000000;  // every point ranked
  FakeRunner plain_runner([](int call) { return 1.0 + call; });
  absl::StatusOr<v1::FidelityResult> plain =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, plain_runner);
  ASSERT_TRUE(plain.ok()) << plain.status();
  options.space.all_to_all = true;
  FakeRunner wide_runner([](int call) { return 1.0 + call; });
  absl::StatusOr<v1::FidelityResult> wide =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, wide_runner);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_GT(wide->costed(), plain->costed());
  auto all_to_all = [](const v1::FidelityResult& r) {
    int n = 0;
    for (const v1::MeasuredCandidate& p : r.points()) {
      for (const std::string& label : p.patterns())
        n += label.find("AllToAll") != std::string::npos;
    }
    return n;
  };
  EXPECT_EQ(all_to_all(*plain), 0);
  EXPECT_GT(all_to_all(*wide), 0);
}

// The rounds' own rho: the median over pairs of rounds of the rank correlation between
// their times, over the verified points; absent with one round.
TEST(FidelityTest, TheRoundsOwnRhoIsTheMedianOverPairsOfRounds) {
  v1::FidelityResult r;
  const std::vector<std::vector<double>> rounds = {{1, 1, 4}, {2, 2, 3}, {3, 3, 2}, {4, 4, 1}};
  for (const std::vector<double>& times : rounds) {
    v1::MeasuredCandidate* p = r.add_points();
    p->set_verified(true);
    p->set_predicted_s(times[0]);
    p->set_measured_s(times[0]);
    for (double t : times) p->add_round_s(t);
  }
  v1::MeasuredCandidate* failed = r.add_points();  // not verified: left out
  failed->add_round_s(9);
  Summarize(&r);
  // Pairs: (1, 2) agree, rho 1; (1, 3) and (2, 3) reverse, -1: the median is -1.
  EXPECT_DOUBLE_EQ(r.round_spearman_rho(), -1.0);
  for (v1::MeasuredCandidate& p : *r.mutable_points()) p.mutable_round_s()->Truncate(1);
  Summarize(&r);
  EXPECT_FALSE(r.has_round_spearman_rho());
}

// A machine three times slower every other call: the times stay as measured, slow spells
// and all (nothing reads them at a pace). Candidate i takes 0.001 (i + 1) s at full speed,
// three times that for odd i: measured 1, 6, 3, 12, 5, 18 ms, ranks (1, 4, 2, 5, 3, 6)
// against the model's (1, ..., 6): rho = 1 - 6 * 10 / (6 * 35) = 5/7.
TEST(FidelityTest, TimesAreAsMeasured) {
  const Workload s = Matmul();
  FakeRunner runner([](int call) { return 0.001 * call * (call % 2 == 0 ? 3 : 1); });
  FidelityOptions options;
  options.count = 6;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->points_size(), 6);
  ExpectStrictlyIncreasingPredictions(*r);
  for (int i = 0; i < 6; ++i) {
    const v1::MeasuredCandidate& p = r->points(i);
    const double measured = 0.001 * (i + 1) * (i % 2 == 1 ? 3 : 1);
    ASSERT_EQ(p.round_s_size(), 1);
    EXPECT_EQ(p.round_s(0), measured);
    EXPECT_EQ(p.measured_s(), measured);
    EXPECT_EQ(p.sample().median_s(), measured);
  }
  EXPECT_DOUBLE_EQ(r->spearman_rho(), 5.0 / 7);
  // The fastest of one sample is the sample.
  ApplyRoundStatistic(RoundStatistic::kMin, &*r);
  EXPECT_DOUBLE_EQ(r->points(1).measured_s(), 0.006);
  EXPECT_DOUBLE_EQ(r->spearman_rho(), 5.0 / 7);
}

// Measures programs side by side: RunSideBySide gives item i (in the model's order) six
// samples of 0.001 (i + 1) s, verified. Keeps what it was asked; Run is never to be called.
class ProgramRunner : public search::Runner {
 public:
  bool measures() const override { return true; }
  search::CandidateRun Run(const search::MeasureInput&) override {
    ADD_FAILURE() << "Run called: the programs are to be measured side by side";
    return {};
  }
  std::vector<search::CandidateRun> RunSideBySide(const std::vector<search::MeasureItem>& items,
                                                  double) override {
    ++calls;
    std::vector<search::CandidateRun> out;
    for (size_t i = 0; i < items.size(); ++i) {
      const search::MeasureItem& item = items[i];
      EXPECT_EQ(item.schedule, nullptr);
      EXPECT_EQ(item.library, nullptr);
      programs += item.program != nullptr;
      if (item.program != nullptr) {
        statements.push_back(static_cast<int>(item.program->programs.size()));
        EXPECT_EQ(item.program->program->statements.size(), 2u);
        EXPECT_EQ(item.program->mesh->ToString(), "x=2,y=2");
        EXPECT_GT(item.program->footprint.shard_bytes, 0);
      }
      search::CandidateRun r;
      r.verified = true;
      const double k = static_cast<double>(i + 1);
      search::SetSamples({0.001 * k, 0.0011 * k, 0.0009 * k, 0.001 * k, 0.00105 * k, 0.00095 * k},
                         1, &r);
      out.push_back(std::move(r));
    }
    return out;
  }
  int calls = 0;
  int programs = 0;             // items that were programs
  std::vector<int> statements;  // each program item's statements
};

// A two-statement program (T an intermediate between them) on x=2,y=2.
ir::StatementProgram TwoMatmuls() {
  return *ir::ParseStatementProgram("T[i,k] = A[i,j] * B[j,k]; C[i,l] += T[i,k] * D[k,l]",
                                    "i=8,j=8,k=8,l=8");
}

// The model-only tune's predicted seconds of every program it ranks (the joint programs and
// "separate"), by program trace: what a fidelity run's points are to predict.
std::map<std::string, double> TunedPredictions(const ir::StatementProgram& program,
                                               const Workload& s, int64_t max_evaluations) {
  search::TuneOptions tune;
  tune.program = program;
  tune.meshes = {s.mesh};
  tune.params = s.params;
  tune.max_evaluations = max_evaluations;
  tune.top_k = 64;
  std::unique_ptr<search::Runner> none = search::NewModelOnlyRunner();
  absl::StatusOr<search::SearchResult> r = search::Tune(tune, *none);
  EXPECT_TRUE(r.ok()) << r.status();
  std::map<std::string, double> out;
  if (!r.ok() || !r->program) return out;
  std::vector<search::ProgramCandidate> all = r->program->ranked;
  all.push_back(r->program->separate);
  for (const search::ProgramCandidate& c : all) {
    std::vector<std::string> traces;
    for (const search::Candidate& statement : c.statements) traces.push_back(statement.trace);
    out[ir::ProgramTraceText(program, traces)] = c.seconds;
  }
  return out;
}

// A program of several statements: its candidates are whole programs of the tune's
// ranking, measured as program items in one RunSideBySide call; each point's trace is a
// program trace of both statements, its prediction the tune's of that program (statements
// and moves); the statistics follow. Its problem reads back as the program; recosting under
// the same numbers changes nothing, under numbers twice as slow doubles every prediction.
TEST(FidelityTest, AProgramsCandidatesAreWholeProgramsMeasuredSideBySide) {
  Workload s = Matmul();
  const ir::StatementProgram program = TwoMatmuls();
  ProgramRunner runner;
  FidelityOptions options;
  options.count = 4;
  options.max_evaluations = 100;
  absl::StatusOr<v1::FidelityResult> r = RunFidelity(program, s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(runner.calls, 1);
  EXPECT_EQ(runner.programs, 4);
  EXPECT_EQ(runner.statements, std::vector<int>(4, 2));
  EXPECT_EQ(r->problem(),
            "T[i,k] = A[i,j] * B[j,k]; C[i,l] += T[i,k] * D[k,l] with i=8,j=8,k=8,l=8");
  const size_t with = r->problem().rfind(" with ");
  v1::Problem stated;
  stated.set_expr(r->problem().substr(0, with));
  stated.set_extents(r->problem().substr(with + 6));
  absl::StatusOr<ir::StatementProgram> back = ProgramOf(stated);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Fingerprint(), program.Fingerprint());
  const std::map<std::string, double> tuned = TunedPredictions(program, s, options.max_evaluations);
  ASSERT_EQ(r->points_size(), 4);
  EXPECT_EQ(r->ranks(0), 1);
  EXPECT_EQ(r->ranks(3), r->costed());
  EXPECT_GE(r->costed(), 4);
  EXPECT_LE(r->costed(), static_cast<int64_t>(tuned.size()));
  for (int i = 0; i < 4; ++i) {
    const v1::MeasuredCandidate& p = r->points(i);
    absl::StatusOr<std::vector<ir::Trace>> traces = ir::ParseProgramTrace(p.trace().text(), 2);
    ASSERT_TRUE(traces.ok()) << traces.status() << "\n" << p.trace().text();
    EXPECT_EQ(traces->size(), 2u);
    EXPECT_NE(p.trace().text().find("# statement 2: C[i,l] += T[i,k] * D[k,l]\n"),
              std::string::npos)
        << p.trace().text();
    const auto predicted = tuned.find(p.trace().text());
    ASSERT_NE(predicted, tuned.end()) << p.trace().text();
    EXPECT_EQ(p.predicted_s(), predicted->second);
    EXPECT_TRUE(p.verified());
    EXPECT_DOUBLE_EQ(p.measured_s(), 0.001 * (i + 1));
    EXPECT_EQ(p.round_s_size(), 6);
    EXPECT_EQ(p.mesh(), "x=2,y=2");
    EXPECT_TRUE(absl::StartsWith(p.family(), "x=2,y=2: ")) << p.family();
    EXPECT_NE(p.family().find(" | "), std::string::npos) << p.family();
    if (i > 0) {
      EXPECT_LE(r->points(i - 1).predicted_s(), p.predicted_s());
    }
  }
  EXPECT_EQ(r->verified(), 4);
  ASSERT_TRUE(r->has_spearman_rho() && r->has_kendall_tau());
  EXPECT_GT(r->spearman_rho(), 0.5);  // the measured order is the model's, but for ties
  EXPECT_TRUE(r->has_median_relative_error());
  EXPECT_FALSE(r->patterns().empty());

  absl::StatusOr<v1::FidelityResult> same = RecostFidelity(*r, s.params);
  ASSERT_TRUE(same.ok()) << same.status();
  cost::CostParams slow = s.params;
  for (double* x : {&slow.alpha, &slow.beta, &slow.alpha_coll, &slow.beta_coll, &slow.gamma})
    *x *= 2;
  absl::StatusOr<v1::FidelityResult> doubled = RecostFidelity(*r, slow);
  ASSERT_TRUE(doubled.ok()) << doubled.status();
  for (int i = 0; i < 4; ++i) {
    const double predicted = r->points(i).predicted_s();
    EXPECT_NEAR(same->points(i).predicted_s(), predicted, 1e-9 * predicted);
    EXPECT_EQ(same->points(i).measured_s(), r->points(i).measured_s());
    EXPECT_NEAR(doubled->points(i).predicted_s(), 2 * predicted, 1e-9 * predicted);
  }
  EXPECT_EQ(same->spearman_rho(), r->spearman_rho());
  v1::FidelityResult bad = *r;
  bad.mutable_points(0)->mutable_trace()->set_text(
      r->points(0).trace().text().substr(0, r->points(0).trace().text().find("---")));
  EXPECT_EQ(RecostFidelity(bad, s.params).status().message(),
            "cannot lower a point's trace again: the trace has 1 part but the program has 2 "
            "statements; separate the statements' traces with lines ---");
}

// FitToRuns of programs' runs: times the model makes with scales (1.3, 2.5, 0.7, 3) on the
// statements, the moves as costed (no scale multiplies them), are made again by the fitted
// scales; a point measured in no more than its moves take cannot be fitted, and says so.
TEST(FidelityTest, FitToRunsOfAProgramFitsItsStatementsBesideItsMoves) {
  Workload s = Matmul();
  ProgramRunner runner;
  FidelityOptions options;
  options.count = 8;
  options.max_evaluations = 100;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(TwoMatmuls(), s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  cost::CostParams truth = s.params;
  truth.scales = {1.3, 2.5, 0.7, 3};
  absl::StatusOr<v1::FidelityResult> made = RecostFidelity(*r, truth);
  ASSERT_TRUE(made.ok()) << made.status();
  for (int i = 0; i < r->points_size(); ++i)
    r->mutable_points(i)->set_measured_s(made->points(i).predicted_s());
  absl::StatusOr<RunFit> fit = FitToRuns({*r}, s.params);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->schedules, r->points_size());
  // One problem's programs (the same flops each) barely tell the classes apart, so the
  // scales are not those exactly; the times they make are.
  EXPECT_GT(fit->before[0].median_relative_error(), 0.05);
  EXPECT_LT(fit->after[0].median_relative_error(), 1e-4);
  // A point whose program moves T (its moves predicted above zero), measured in no time.
  int moving = -1;
  for (int i = 0; i < r->points_size() && moving < 0; ++i) {
    if (absl::StrContains(r->points(i).family(), "moved: T")) moving = i;
  }
  ASSERT_GE(moving, 0) << "no point moves T";
  v1::FidelityResult fast = *r;
  fast.mutable_points(moving)->set_measured_s(1e-12);
  const absl::Status refused = FitToRuns({fast}, s.params).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  const std::string message(refused.message());
  EXPECT_TRUE(
      absl::StartsWith(message, absl::StrCat("point ", moving + 1, " of the run of ", r->problem(),
                                             " measured 1e-12 s, no more than the ")))
      << message;
  EXPECT_TRUE(absl::EndsWith(message,
                             " s the model gives its moves between statements: its statements' "
                             "terms cannot be fitted to it"))
      << message;
}

TEST(FidelityTest, RefusesFewerThanTwo) {
  const Workload s = Matmul();
  FakeRunner runner([](int) { return 1.0; });
  FidelityOptions options;
  options.count = 1;
  absl::StatusOr<v1::FidelityResult> r =
      RunFidelity(ir::ProgramOf(s.problem), s.mesh, s.params, options, runner);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "a fidelity run needs at least 2 candidates to compare (got 1)");
  EXPECT_TRUE(runner.traces.empty());
}

TEST(ScatterSvgTest, OneCirclePerPlottablePointEscaped) {
  const std::string svg = ScatterSvg({{0.001, 0.002, "a<b & \"c\"", "x"},
                                      {0.01, 0.02, "two", "y"},
                                      {0, 1, "zero", "x"},
                                      {0.1, 0.05, "three", "x"}},
                                     {"pred & meas", "predicted s", "measured s"});
  EXPECT_TRUE(absl::StartsWith(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(absl::EndsWith(svg, "</svg>\n"));
  int circles = 0;
  for (size_t at = svg.find("class=\"point\""); at != std::string::npos;
       at = svg.find("class=\"point\"", at + 1))
    ++circles;
  EXPECT_EQ(circles, 3);
  EXPECT_NE(svg.find("<title>a&lt;b &amp; &quot;c&quot;</title>"), std::string::npos);
  EXPECT_NE(svg.find("pred &amp; meas"), std::string::npos);
  EXPECT_NE(svg.find("1 not shown (no positive value)"), std::string::npos);
  EXPECT_NE(svg.find("class=\"diagonal\""), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);  // nothing unescaped
}

}  // namespace
}  // namespace meshtune::engine
