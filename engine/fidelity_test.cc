// RunFidelity with a fake runner whose "measurements" are a known function of the
// prediction: the spread sample, the statistics and the per-pattern errors follow from it;
// failed runs are kept but left out of the statistics; rounds alternate the order and keep
// the median; bad counts are refused. And the
// scatter SVG: one circle per verified point, escaped text, a legend per family.
#include "engine/fidelity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/scatter_svg.h"

namespace meshtune::engine {
namespace {

// Measures `time(predicted)` for each candidate, by the trace's predicted time looked up in
// the order Run is called; fails every `fail_every`-th run when set.
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
    r.seconds = time_(calls_);
    r.verified = true;
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
  search::CostParams params;
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
  absl::StatusOr<v1::FidelityResult> r = RunFidelity(s.problem, s.mesh, s.params, options, runner);
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
  absl::StatusOr<v1::FidelityResult> r = RunFidelity(s.problem, s.mesh, s.params, options, runner);
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
  search::CostParams slow = s.params;
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
  absl::StatusOr<v1::FidelityResult> r = RunFidelity(s.problem, s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->points_size(), 4);
  EXPECT_EQ(r->verified(), 2);
  EXPECT_EQ(r->points(1).error(), "fake failure");
  EXPECT_FALSE(r->points(1).has_measured_s());
  EXPECT_EQ(FidelityScatter(*r).size(), 2u);
}

// Rounds: every candidate once a round, the order reversed every other round, the median of
// its rounds kept. A slow spell over the whole first round is outvoted; a failure in any
// round fails the point.
TEST(FidelityTest, RoundsAlternateTheOrderAndKeepTheMedian) {
  const Workload s = Matmul();
  // Round 1 (calls 1-4) runs 100 s each; later calls take 0.001 s times the call number.
  FakeRunner runner([](int call) { return call <= 4 ? 100.0 : 0.001 * call; },
                    /*fail_every=*/7);
  FidelityOptions options;
  options.count = 4;
  options.rounds = 3;
  options.round_statistic = RoundStatistic::kMedian;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r = RunFidelity(s.problem, s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(runner.order.size(), 12u);
  ASSERT_EQ(r->points_size(), 4);
  for (int i = 0; i < 4; ++i) {
    const std::string& trace = r->points(i).trace().text();
    EXPECT_EQ(runner.order[i], trace);      // round 1: best first
    EXPECT_EQ(runner.order[7 - i], trace);  // round 2: worst first
    EXPECT_EQ(runner.order[8 + i], trace);  // round 3: best first
  }
  // Candidate i ran at calls i + 1, 8 - i and 9 + i; call 7 (candidate 1, round 2) failed.
  for (int i : {0, 2, 3}) {
    const v1::MeasuredCandidate& p = r->points(i);
    EXPECT_TRUE(p.verified());
    ASSERT_EQ(p.round_s_size(), 3);
    EXPECT_EQ(p.round_s(0), 100.0);
    EXPECT_DOUBLE_EQ(p.round_s(1), 0.001 * (8 - i));
    EXPECT_DOUBLE_EQ(p.measured_s(), 0.001 * (9 + i));
  }
  EXPECT_FALSE(r->points(1).verified());
  EXPECT_EQ(r->points(1).error(), "fake failure");
  EXPECT_EQ(r->verified(), 3);
  EXPECT_DOUBLE_EQ(r->spearman_rho(), 1.0);
  // Round 1 is constant (no rho with it); rounds 2 and 3 order the points oppositely.
  ASSERT_TRUE(r->has_round_spearman_rho());
  EXPECT_DOUBLE_EQ(r->round_spearman_rho(), -1.0);
  EXPECT_EQ(r->round_statistic(), "median");
  // The fastest round instead (the default): round 2's, 0.001 (8 - i), reversing the order.
  v1::FidelityResult fastest = *r;
  ApplyRoundStatistic(RoundStatistic::kMin, &fastest);
  EXPECT_EQ(fastest.round_statistic(), "min");
  for (int i : {0, 2, 3}) EXPECT_DOUBLE_EQ(fastest.points(i).measured_s(), 0.001 * (8 - i));
  EXPECT_DOUBLE_EQ(fastest.spearman_rho(), -1.0);

  options.rounds = 0;
  EXPECT_EQ(RunFidelity(s.problem, s.mesh, s.params, options, runner).status().message(),
            "a fidelity run needs at least 1 round (got 0)");
}

// FitToRuns: runs whose measured times the model makes with scales (1.3, 2.5, 0.7, 3) are
// reproduced by the fitted scales (a class the runs lack keeps 1, which costs nothing
// there); before the fit the model is off.
TEST(FidelityTest, FitToRunsFindsTheScalesThatMadeTheRuns) {
  const Workload s = Matmul();
  std::vector<v1::FidelityResult> runs;
  search::CostParams truth = s.params;
  truth.scales = {1.3, 2.5, 0.7, 3};
  for (const char* mesh : {"x=2,y=2", "x=4"}) {
    FakeRunner runner([](int) { return 1.0; });
    FidelityOptions options;
    options.count = 12;
    options.max_evaluations = 400;
    absl::StatusOr<v1::FidelityResult> r =
        RunFidelity(s.problem, *ir::ParseMesh(mesh), s.params, options, runner);
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
      RunFidelity(s.problem, s.mesh, s.params, options, plain_runner);
  ASSERT_TRUE(plain.ok()) << plain.status();
  options.space.all_to_all = true;
  FakeRunner wide_runner([](int call) { return 1.0 + call; });
  absl::StatusOr<v1::FidelityResult> wide =
      RunFidelity(s.problem, s.mesh, s.params, options, wide_runner);
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

// A runner on a machine that is three times slower every other call: its runs and its pace
// both; candidate i (in the order first run) takes 0.001 (i + 1) s at full speed.
class SlowSpellRunner : public search::Runner {
 public:
  bool measures() const override { return true; }
  search::CandidateRun Run(const search::MeasureInput& in) override {
    const std::string trace = in.trace->ToString();
    if (std::find(first_.begin(), first_.end(), trace) == first_.end()) first_.push_back(trace);
    const double index =
        static_cast<double>(std::find(first_.begin(), first_.end(), trace) - first_.begin());
    const double slow = ++calls_ % 2 == 0 ? 3 : 1;
    search::CandidateRun r;
    r.seconds = 0.001 * (index + 1) * slow;
    r.pace_s = 0.002 * slow;
    r.verified = true;
    return r;
  }

 private:
  std::vector<std::string> first_;
  int calls_ = 0;
};

// Each round is read at the run's common pace (the median of every round's pace): the slow
// spells cancel and the model's order comes back; as measured, the order is lost.
TEST(FidelityTest, RoundsAreReadAtTheRunsCommonPace) {
  const Workload s = Matmul();
  SlowSpellRunner runner;
  FidelityOptions options;
  options.count = 6;
  options.max_evaluations = 200;
  absl::StatusOr<v1::FidelityResult> r = RunFidelity(s.problem, s.mesh, s.params, options, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->points_size(), 6);
  // Paces 0.002 and 0.006, three each: their median is 0.004, twice the full-speed pace.
  EXPECT_DOUBLE_EQ(r->pace_s(), 0.004);
  for (int i = 0; i < 6; ++i) {
    const v1::MeasuredCandidate& p = r->points(i);
    ASSERT_EQ(p.round_s_size(), 1);
    ASSERT_EQ(p.round_pace_s_size(), 1);
    EXPECT_DOUBLE_EQ(p.round_s(0), 0.001 * (i + 1) * (i % 2 == 1 ? 3 : 1));
    EXPECT_DOUBLE_EQ(p.measured_s(), 0.002 * (i + 1));
  }
  EXPECT_EQ(r->spearman_rho(), 1.0);
  ASSERT_TRUE(r->has_raw_spearman_rho());
  EXPECT_LT(r->raw_spearman_rho(), 0.9);
  // Points without paces count as measured.
  for (v1::MeasuredCandidate& p : *r->mutable_points()) p.clear_round_pace_s();
  ApplyRoundStatistic(RoundStatistic::kMin, &*r);
  EXPECT_EQ(r->pace_s(), 0);
  EXPECT_DOUBLE_EQ(r->points(1).measured_s(), 0.006);
  EXPECT_DOUBLE_EQ(r->spearman_rho(), r->raw_spearman_rho());
}

TEST(FidelityTest, RefusesFewerThanTwo) {
  const Workload s = Matmul();
  FakeRunner runner([](int) { return 1.0; });
  FidelityOptions options;
  options.count = 1;
  absl::StatusOr<v1::FidelityResult> r = RunFidelity(s.problem, s.mesh, s.params, options, runner);
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
