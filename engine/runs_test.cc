// Measured runs kept and the cost model refitted from them (engine/runs.h): a run's features
// add up to the model's prediction with scales 1; runs round-trip through the database and
// wisdom files; a refit is stored only when held-out runs do not get worse, and waits for
// enough new runs of the profile's own machine.
#include "engine/runs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "engine/prepare.h"
#include "engine/tune/machine_profile.h"
#include "engine/wisdom.h"
#include "storage/hardware_profile.h"
#include "storage/machine_fingerprint.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {
namespace {

constexpr char kSumma[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(A, m@x, k@y)\n"
    "shard(B, k@x, n@y)\n"
    "shard(C, m@x, n@y)\n"
    "communicate(A, ko)\n"
    "communicate(B, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

class RunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    home_ = std::string(tmp ? tmp : "/tmp") + "/runs_home_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(std::system(("rm -rf '" + home_ + "'").c_str()), 0);
    setenv("MESHTUNE_HOME", home_.c_str(), 1);
    profile_.set_name("p4");
    profile_.set_ranks(4);
    profile_.set_alpha_s(2e-6);
    profile_.set_beta_s_per_byte(3e-10);
    profile_.set_alpha_coll_s(2e-6);
    profile_.set_beta_coll_s_per_byte(4e-10);
    profile_.set_gamma_s_per_flop(1e-10);
    ASSERT_TRUE(storage::SaveProfile(profile_).ok());
    machine_ = storage::MachineFingerprint(&profile_);
  }

  // A run of group `group` whose features are `compute` seconds of compute and `p2p` of
  // point-to-point, measured at `measured` seconds, on machine `machine` (the profile's when
  // empty).
  v1::MeasuredRun Synthetic(const std::string& group, double compute, double p2p, double measured,
                            const std::string& machine = "") const {
    v1::MeasuredRun r;
    r.set_source("tune");
    r.set_group(group);
    r.set_problem("C[m,n] += A[m,k] * B[k,n] with m=64,n=64,k=64");
    r.set_mesh("x=2,y=2");
    r.set_trace(kSumma);
    r.set_profile("p4");
    r.set_machine(machine.empty() ? machine_ : machine);
    r.set_predicted_s(compute + p2p);
    r.set_measured_s(measured);
    r.set_timing("measured");
    r.set_verified(true);
    r.mutable_features()->set_compute_s(compute);
    r.mutable_features()->set_point_to_point_s(p2p);
    return r;
  }

  std::string home_, machine_;
  v1::HardwareProfile profile_;
};

TEST_F(RunsTest, FeaturesAddUpToThePredictionWithScalesOne) {
  v1::Problem problem;
  problem.set_expr("C[m,n] += A[m,k] * B[k,n]");
  problem.set_extents("m=64,n=64,k=64");
  v1::Mesh mesh;
  mesh.set_axes("x=2,y=2");
  v1::Trace trace;
  trace.set_text(kSumma);
  absl::StatusOr<codegen::Program> program = LowerTrace(problem, mesh, trace);
  ASSERT_TRUE(program.ok()) << program.status();
  const cost::CostParams params = storage::ToCostParams(profile_);
  const double predicted =
      cost::EstimateCost(*program, cost::ForRanks(params, program->Ranks())).seconds;
  google::protobuf::RepeatedPtrField<v1::MeasuredCandidate> candidates;
  v1::MeasuredCandidate* c = candidates.Add();
  c->mutable_trace()->set_text(kSumma);
  c->set_mesh("x=2,y=2");
  c->set_predicted_s(predicted);
  c->set_measured_s(2 * predicted);
  c->set_verified(true);
  v1::MeasuredCandidate* failed = candidates.Add();
  *failed = *c;
  failed->clear_measured_s();
  failed->set_verified(false);
  const std::vector<v1::MeasuredRun> runs =
      RunsOf("tune", problem, /*in_place=*/false, candidates, {"p4", machine_, params});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].group(), runs[1].group());
  EXPECT_EQ(runs[0].problem(), "C[m,n] += A[m,k] * B[k,n] with m=64,n=64,k=64");
  EXPECT_EQ(runs[0].dtype(), "f32");
  EXPECT_EQ(runs[0].profile(), "p4");
  EXPECT_EQ(runs[0].machine(), machine_);
  ASSERT_TRUE(runs[0].has_features());
  const v1::RunFeatures& f = runs[0].features();
  EXPECT_GT(f.compute_s(), 0);
  EXPECT_GT(f.collective_s() + f.point_to_point_s(), 0);
  EXPECT_NEAR(
      f.compute_s() + f.point_to_point_s() + f.collective_s() + f.reduction_s() - f.overlap_s(),
      predicted, 1e-9 * predicted);
  EXPECT_FALSE(runs[1].verified());
  EXPECT_FALSE(runs[1].has_measured_s());
  // In place: the trace is of another problem; no features.
  EXPECT_FALSE(
      RunsOf("tune", problem, true, candidates, {"p4", machine_, params})[0].has_features());
}

TEST_F(RunsTest, RunsRoundTripThroughTheDatabaseAndWisdomFiles) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  const std::vector<v1::MeasuredRun> runs = {Synthetic("g1", 1e-3, 1e-3, 2e-3),
                                             Synthetic("g1", 2e-3, 1e-3, 3e-3)};
  ASSERT_TRUE(KeepRuns(*db, runs).ok());
  absl::StatusOr<std::vector<v1::MeasuredRun>> back = ListMeasuredRuns(*db, std::string("p4"));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].id(), 1);
  EXPECT_GT((*back)[0].created_unix_ms(), 0);
  EXPECT_EQ((*back)[1].features().compute_s(), 2e-3);
  EXPECT_TRUE(ListMeasuredRuns(*db, std::string("other"))->empty());

  const std::string text = WisdomRunsText(*back);
  EXPECT_EQ(text.rfind("{\"run\":{", 0), 0u) << text;
  std::unique_ptr<storage::TuningDb> other = storage::NewInMemoryTuningDb();
  absl::StatusOr<ImportReport> first = ImportWisdom(*other, text);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->runs_added, 2);
  EXPECT_EQ(first->added, 0);
  absl::StatusOr<ImportReport> again = ImportWisdom(*other, text);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->runs_added, 0);
  EXPECT_EQ(again->runs_present, 2);
  EXPECT_EQ(ListMeasuredRuns(*other, std::nullopt)->size(), 2u);
  // A lookup in a file of runs finds no record, and says so rather than failing to parse.
  v1::LookupRequest lookup;
  lookup.mutable_problem()->set_expr("C[m,n] += A[m,k] * B[k,n]");
  lookup.mutable_problem()->set_extents("m=64,n=64,k=64");
  lookup.mutable_mesh()->set_axes("x=2,y=2");
  EXPECT_EQ(LookupWisdom(text, lookup).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<ImportReport> bad = ImportWisdom(*other, "{\"run\":{\"nonsense\":1}}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind(
                "wisdom line 1: not a measured run (meshtune.v1.WisdomRunLine): ", 0),
            0u)
      << bad.status();
}

TEST_F(RunsTest, ARefitThatPredictsHeldOutRunsBetterIsStored) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  // Compute runs at twice the model's time, transfers as modelled; four groups of three.
  std::vector<v1::MeasuredRun> runs;
  for (int g = 0; g < 4; ++g) {
    for (int i = 1; i <= 3; ++i) {
      const double compute = 1e-3 * i * (g + 1), p2p = 1e-3 * (4 - i);
      runs.push_back(Synthetic("g" + std::to_string(g), compute, p2p, 2 * compute + p2p));
    }
  }
  // Runs of another machine (the profile recalibrated since) take no part, nor runs whose
  // times were read at the machine's pace (not measurements).
  runs.push_back(Synthetic("old", 1, 1, 100, "0000000000000000"));
  for (int i = 0; i < 3; ++i) {
    runs.push_back(Synthetic("paced", 1e-3, 1e-3, 1e-2));
    runs.back().set_timing("paced");
  }
  ASSERT_TRUE(KeepRuns(*db, runs).ok());
  absl::StatusOr<std::optional<Refit>> refit = RefitFromRuns(*db, "p4");
  ASSERT_TRUE(refit.ok()) << refit.status();
  ASSERT_TRUE(refit->has_value());
  const Refit& r = **refit;
  EXPECT_TRUE(r.accepted) << RefitNote(r);
  EXPECT_EQ(r.runs, 12);
  EXPECT_EQ(r.groups, 4);
  EXPECT_NEAR(r.scales.compute, 2, 0.05);
  EXPECT_NEAR(r.scales.point_to_point, 1, 0.05);
  EXPECT_LT(r.error_after, 0.02);
  EXPECT_GT(r.error_before, 0.2);
  EXPECT_GE(r.rho_after, r.rho_before);
  absl::StatusOr<v1::HardwareProfile> stored = storage::LoadProfile("p4");
  ASSERT_TRUE(stored.ok());
  EXPECT_NEAR(stored->term_scales().compute(), 2, 0.05);
  EXPECT_TRUE(stored->term_scales().automatic());
  EXPECT_EQ(stored->term_scales().schedules(), 12);
  EXPECT_EQ(stored->term_scales().last_run_id(), 12);  // the paced ones (14 to 16) not fitted
  EXPECT_EQ(RefitNote(r).rfind("refitted the cost model of profile \"p4\" to 12 measured runs of "
                               "4 tunes: held-out rho ",
                               0),
            0u)
      << RefitNote(r);
  // Nothing new since: no refit.
  absl::StatusOr<std::optional<Refit>> none = RefitFromRuns(*db, "p4");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  // Seven new runs are not enough; the eighth starts the next refit.
  std::vector<v1::MeasuredRun> more;
  for (int i = 0; i < 7; ++i)
    more.push_back(Synthetic("g9", 1e-3 * (i + 1), 1e-3, 2e-3 * (i + 1) + 1e-3));
  ASSERT_TRUE(KeepRuns(*db, more).ok());
  EXPECT_FALSE(RefitFromRuns(*db, "p4")->has_value());
  ASSERT_TRUE(KeepRuns(*db, {Synthetic("g9", 9e-3, 1e-3, 19e-3)}).ok());
  EXPECT_TRUE(RefitFromRuns(*db, "p4")->has_value());
}

TEST_F(RunsTest, ARefitThatPredictsHeldOutRunsWorseIsNotStored) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  // Each group's compute runs at its own speed: the model's scale of 1 fits one group
  // exactly and the others as well as any one scale can; a scale fitted to two groups
  // predicts the third worse.
  std::vector<v1::MeasuredRun> runs;
  const double speed[3] = {2, 0.5, 1};
  for (int g = 0; g < 3; ++g) {
    for (int i = 1; i <= 3; ++i) {
      const double compute = 1e-3 * i;
      runs.push_back(Synthetic("g" + std::to_string(g), compute, 0, speed[g] * compute));
    }
  }
  ASSERT_TRUE(KeepRuns(*db, runs).ok());
  absl::StatusOr<std::optional<Refit>> refit = RefitFromRuns(*db, "p4");
  ASSERT_TRUE(refit.ok() && refit->has_value()) << refit.status();
  EXPECT_FALSE((*refit)->accepted) << RefitNote(**refit);
  EXPECT_GT((*refit)->error_after, (*refit)->error_before);
  EXPECT_EQ(RefitNote(**refit).rfind("kept the cost model of profile \"p4\": a refit to 9 measured "
                                     "runs of 3 tunes would not improve held-out runs (",
                                     0),
            0u)
      << RefitNote(**refit);
  absl::StatusOr<v1::HardwareProfile> stored = storage::LoadProfile("p4");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->term_scales().compute(), 1);  // as it was (absent: 1)
  EXPECT_FALSE(stored->term_scales().automatic());
  EXPECT_EQ(stored->term_scales().last_run_id(), 9);  // the next refit waits for new runs
  EXPECT_EQ(storage::ToCostParams(*stored).scales.compute, 1);
}

}  // namespace
}  // namespace meshtune::engine
