// `meshtune tune` as a user runs it: a measured tune on 4 ranks verifies its winner under
// MPI; the JSON result is a meshtune.v1.TuneResult; bad flags exit 2 naming the problem; a
// worker that fails turns into measurement errors and exit 1, not a crash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "proto/meshtune.pb.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::ParsesAs;

// Fixed machine numbers, so no hardware profile is needed.
const std::string kModel = "--alpha 1e-6 --beta 1e-9 --gamma 3e-11 ";
const std::string kMatmul = "tune --expr 'C[m,n] += A[m,k] * B[k,n]' ";

bool Has(const std::string& s, const std::string& part) { return absl::StrContains(s, part); }

class TuneCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    setenv("MESHTUNE_HOME", (std::string(tmp ? tmp : "/tmp") + "/home").c_str(), 1);
  }
};

TEST_F(TuneCliTest, MeasuredTuneOnFourRanksVerifiesItsWinner) {
  const CliRun r =
      Meshtune(kMatmul + "--extents m=1024,n=1024,k=1024 --ranks 4 --top-k 3 --reps 1 --warmup 0 " +
               "--max-evaluations 150 --json " + kModel);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  meshtune::v1::TuneResult result;
  ASSERT_TRUE(ParsesAs(r.out, &result));
  const meshtune::v1::Record& best = result.record();
  EXPECT_TRUE(best.verified()) << r.out;
  EXPECT_EQ(best.checked(), "measured");
  EXPECT_EQ(best.checked_extents(), "");
  EXPECT_TRUE(best.has_measured_s()) << r.out;
  EXPECT_GT(best.measured_s(), 0);
  EXPECT_TRUE(best.mesh() == "x=2,y=2" || best.mesh() == "x=4") << r.out;
  ASSERT_EQ(result.measurements_size(), 3) << r.out;
  for (const meshtune::v1::MeasuredCandidate& m :
       result.measurements()) {  // every measured candidate verified
    EXPECT_TRUE(m.verified()) << m.error();
    EXPECT_TRUE(m.has_measured_s());
    EXPECT_FALSE(m.trace().text().empty());
  }
  // ScaLAPACK's PSGEMM in the same tune, at the configurations runtime::LibraryGemmConfigs
  // picks for 1024 cubed on 4 ranks, each verified by the oracle; the ratio of the winner.
  std::vector<std::string> configs;
  double fastest = 0;
  for (const meshtune::v1::LibraryRun& l : result.library()) {
    configs.push_back(absl::StrCat(l.library(), " ", l.prow(), "x", l.pcol(), " NB ", l.nb()));
    EXPECT_TRUE(l.verified()) << l.error();
    ASSERT_TRUE(l.has_measured_s());
    if (fastest == 0 || l.measured_s() < fastest) fastest = l.measured_s();
  }
  EXPECT_EQ(configs, (std::vector<std::string>{"PSGEMM 2x2 NB 64", "PSGEMM 2x2 NB 256",
                                               "PSGEMM 1x4 NB 64", "PSGEMM 1x4 NB 256"}));
  // Measured side by side: every candidate has a sample of the same rounds.
  for (const meshtune::v1::MeasuredCandidate& m : result.measurements()) {
    EXPECT_EQ(m.sample().n(), result.library(0).sample().n()) << r.out;
    EXPECT_EQ(m.measured_s(), m.sample().median_s());
    EXPECT_LE(m.sample().ci_low_s(), m.measured_s());
    EXPECT_GE(m.sample().ci_high_s(), m.measured_s());
  }
  EXPECT_TRUE(result.decision() == "separated" || result.decision() == "tie within noise") << r.out;
  EXPECT_EQ(result.comparison().separated(), result.decision() == "separated");
  ASSERT_TRUE(result.has_vs_library()) << r.out;
  if (best.has_library()) {
    EXPECT_EQ(result.vs_library(), 1);  // the answer is the library
  } else {
    // The chosen schedule against the fastest configuration, faster beyond the noise.
    ASSERT_TRUE(result.has_vs_library_ci_high()) << r.out;
    EXPECT_LT(result.vs_library_ci_high(), 1) << r.out;
    EXPECT_LE(result.vs_library_ci_low(), result.vs_library());
  }
  EXPECT_EQ(best.timing(), "measured");
  EXPECT_EQ(best.measured_s(), best.sample().median_s());
}

// Physics as a guard: a profile that says the machine computes at 2 MF/s makes every real
// run of 64^3 (0.52 MFLOP) faster than the floor of 0.21 s: each is measured again, then
// refused as implausible_time, and nothing measured is returned or stored.
TEST_F(TuneCliTest, ARunFasterThanTheMachineCanComputeIsRefused) {
  const std::string dir = std::string(std::getenv("MESHTUNE_HOME")) + "/profiles";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  {
    std::ofstream f(dir + "/slow.json");
    f << R"({"name": "slow", "ranks": 2, "alphaS": 2e-6, "betaSPerByte": 1e-9, "alphaCollS": 2e-6,
             "betaCollSPerByte": 1e-9, "gammaSPerFlop": 1e-6, "dtype": "f32", "cores": 2,
             "ranksPerNode": 2})";
  }
  const CliRun r = Meshtune(kMatmul +
                            "--extents m=64,n=64,k=64 --mesh x=2 --top-k 2 --profile slow "
                            "--max-evaluations 50 --no-db --json");
  // Nothing measured stands: exit 1, the model's best (as when no candidate verifies).
  ASSERT_EQ(r.status, 1) << r.err << r.out;
  EXPECT_EQ(r.err,
            "meshtune: no measured candidate verified; the result is the model's best (see "
            "measurements)\n");
  meshtune::v1::TuneResult result;
  ASSERT_TRUE(ParsesAs(r.out, &result));
  ASSERT_GT(result.measurements_size(), 0);
  for (const meshtune::v1::MeasuredCandidate& m : result.measurements()) {
    EXPECT_TRUE(absl::StartsWith(m.implausible(), "implausible_time: measured ")) << r.out;
    EXPECT_TRUE(Has(m.implausible(),
                    " s, below the floor of 0.2097 s (5.24e+05 flop at the "
                    "peak of 0.002 GF/s of 2 ranks on 2 cores a node, with "
                    "25% headroom)"))
        << m.implausible();
    EXPECT_FALSE(m.verified());
    EXPECT_FALSE(m.has_measured_s());
  }
  for (const meshtune::v1::LibraryRun& l : result.library()) {
    EXPECT_TRUE(absl::StartsWith(l.implausible(), "implausible_time: ")) << r.out;
    EXPECT_FALSE(l.has_measured_s());
  }
  // The answer is the model's best, checked in the simulator: never a refused time.
  EXPECT_FALSE(result.record().has_measured_s()) << r.out;
  EXPECT_FALSE(result.record().has_library());
  EXPECT_EQ(result.record().checked(), "simulated");
}

// `tune --json` is one line of protobuf's JSON mapping of meshtune.v1.TuneResult (parsed
// here by protobuf, unknown fields refused): the winner, as stored, in `record`.
TEST_F(TuneCliTest, ModelOnlyJsonIsATuneResult) {
  const CliRun r =
      Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2,y=2 --model-only --json " +
               "--max-evaluations 40 " + kModel);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");  // fixed numbers: no warning about a missing profile
  meshtune::v1::TuneResult result;
  ASSERT_TRUE(ParsesAs(r.out, &result));
  const meshtune::v1::Record& best = result.record();
  EXPECT_EQ(best.trace().text().rfind("distribute(", 0), 0u) << r.out;
  EXPECT_EQ(best.mesh(), "x=2,y=2");
  EXPECT_GT(best.predicted_s(), 0);
  EXPECT_FALSE(best.has_measured_s());
  EXPECT_FALSE(best.verified());
  EXPECT_EQ(best.checked(), "simulated");
  EXPECT_FALSE(best.patterns().empty()) << r.out;
  EXPECT_EQ(best.problem().expr(), "C[m,n] += A[m,k] * B[k,n]");
  EXPECT_EQ(result.stored(), best.id() > 0) << r.out;
  EXPECT_GT(result.comm_words_per_rank(), 0);
  EXPECT_TRUE(result.has_lower_bound_ratio());
  EXPECT_GT(result.pruned().count("misaligned_reduction"), 0u) << r.out;
  EXPECT_GT(result.costed(), 0);
  EXPECT_GT(result.enumerated(), result.legal());
  EXPECT_EQ(result.measurements_size(), 0);
  EXPECT_EQ(result.strategy(), "evolutionary");
  EXPECT_GT(result.seconds(), 0);
  // Field names as in the .proto (what scripts read), every field printed.
  EXPECT_EQ(r.out.rfind("{\"record\":{\"id\":", 0), 0u) << r.out;
  EXPECT_TRUE(Has(r.out, "\"trace\":{\"text\":\"distribute(")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"predicted_s\":")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"measurements\":[]")) << r.out;
}

// --rotation-steps and --split-distributed reach the space: each enumerates more points
// than the default space of the same problem and mesh, and the winner still checks.
TEST_F(TuneCliTest, SplitStepAndAllToAllFlagsWidenTheSpace) {
  auto tune = [](const std::string& flags) {
    const CliRun r = Meshtune(kMatmul + "--extents m=16,n=16,k=16 --mesh x=2,y=2 --model-only " +
                              "--json --no-db --max-evaluations 40 " + kModel + flags);
    EXPECT_EQ(r.status, 0) << flags << r.err;
    meshtune::v1::TuneResult result;
    EXPECT_TRUE(ParsesAs(r.out, &result)) << flags;
    EXPECT_EQ(result.record().checked(), "simulated") << flags << r.out;
    return result;
  };
  const meshtune::v1::TuneResult plain = tune("");
  EXPECT_GT(tune("--rotation-steps").enumerated(), plain.enumerated());
  EXPECT_GT(tune("--split-distributed").enumerated(), plain.enumerated());
  // The same points, and those with all-to-all transfers legal instead of pruned.
  const meshtune::v1::TuneResult all = tune("--all-to-all");
  EXPECT_EQ(all.enumerated(), plain.enumerated());
  EXPECT_GT(plain.pruned().at("multi_source_transfer"), 0);
  EXPECT_GT(all.legal(), plain.legal());
  EXPECT_EQ(all.pruned().count("multi_source_transfer"), 0u);
}

TEST_F(TuneCliTest, WithoutAProfileTheBuiltInNumbersAreUsedWithAWarning) {
  const CliRun r =
      Meshtune("tune --expr 'y[i] += A[i,j] * x[j]' --extents i=64,j=64 --ranks 2 --model-only");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "no hardware profile \"default\": using built-in machine numbers"))
      << r.err;
  EXPECT_TRUE(Has(r.out, "best schedule on p=2 (exhaustive search; ")) << r.out;  // x is a tensor
}

TEST_F(TuneCliTest, AProfileFromAnotherRankCountIsUsedWithAWarning) {
  const std::string dir = std::string(std::getenv("MESHTUNE_HOME")) + "/profiles";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  {
    std::ofstream f(dir + "/four.json");
    f << R"({"name": "four", "ranks": 4, "alphaS": 2e-6, "betaSPerByte": 1e-9, "alphaCollS": 2e-6,
             "betaCollSPerByte": 1e-9, "gammaSPerFlop": 3e-11, "dtype": "f32"})";
  }
  const std::string tune =
      kMatmul + "--extents m=64,n=64,k=64 --model-only --max-evaluations 20 --profile four ";
  CliRun r = Meshtune(tune + "--mesh x=2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err,
            "meshtune: hardware profile \"four\" was calibrated on 4 ranks, this tune runs on 2: "
            "for this rank "
            "count run `meshtune calibrate --ranks 2 --name NAME` and tune with --profile NAME\n");
  r = Meshtune(tune + "--ranks 4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = Meshtune(tune + "--mesh x=2 " + kModel);  // every number given: the profile does not matter
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(TuneCliTest, BadFlagsNameTheProblem) {
  CliRun r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --ranks 2 --model-only");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)\n");
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --ranks -3 --model-only");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: --ranks -3 is out of range: give 1 to 65536 ranks\n");
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --top-k -1");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: --top-k -1 is out of range: 0 to 1000\n");
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --budget-s 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Has(r.err, "--budget-s: '0' is out of range; give a number in (0, 604800]")) << r.err;
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=-4 --mesh x=2 --model-only");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Has(r.err, "-4")) << r.err;
  r = Meshtune(
      "tune --expr 'C[m,n] += A[m,k] * B[k,n' --extents m=4,n=4,k=4 --mesh x=2 --model-only");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.rfind("meshtune: ", 0) == 0) << r.err;
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --model-only --profile nosuch");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Has(r.err, "no hardware profile \"nosuch\"")) << r.err;
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --model-only --alpha -1");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "--alpha: '-1' is out of range; give a number in [0, 1]\nRun with --help for more "
            "information.\n");
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --model-only --gamma nan");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "--gamma: 'nan' is not a finite number; give a number in [0, 1]\nRun with --help for "
            "more information.\n");
}

// --allow-idle-ranks: meshes of fewer ranks too. With a profile taken by 4 ranks on a node
// of 2 cores, a 2-rank mesh's ranks each have a core (gamma halves, cost::ForRanks), so
// it computes as fast as the 4 ranks and moves less: the model's best leaves 2 ranks idle.
TEST_F(TuneCliTest, IdleRanksLetAnOversubscribedNodeUseFewerRanks) {
  const std::string dir = std::string(std::getenv("MESHTUNE_HOME")) + "/profiles";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/shared.json")
      << R"({"name": "shared", "ranks": 4, "alphaS": 2e-6, "betaSPerByte": 1e-9, "alphaCollS": 2e-6,
             "betaCollSPerByte": 1e-9, "gammaSPerFlop": 6e-11, "dtype": "f32", "cores": 2,
             "ranksPerNode": 4})";
  const std::string tune = kMatmul +
                           "--extents m=2048,n=256,k=256 --model-only --max-evaluations 300 "
                           "--profile shared --json --ranks 4 ";
  meshtune::v1::TuneResult idle, all;
  CliRun r = Meshtune(tune + "--allow-idle-ranks");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(meshtune::testing::ParsesAs(r.out, &idle)) << r.out;
  EXPECT_EQ(idle.record().mesh(), "x=2");
  EXPECT_EQ(idle.record().workload_mesh(), "ranks=4");
  EXPECT_EQ(idle.record().workload_ranks(), 4);
  ASSERT_EQ(idle.record().mesh_dims_size(), 1);
  EXPECT_EQ(idle.record().mesh_dims(0).name(), "x");
  EXPECT_EQ(idle.record().mesh_dims(0).size(), 2);
  r = Meshtune(tune);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(meshtune::testing::ParsesAs(r.out, &all)) << r.out;
  EXPECT_NE(all.record().mesh(), "x=2");
  EXPECT_LT(idle.record().predicted_s(), all.record().predicted_s());
  // The text names the idle ranks.
  r = Meshtune(absl::StrReplaceAll(tune, {{"--json ", ""}}) + "--allow-idle-ranks --no-db");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("best schedule on x=2 (2 of 4 ranks, 2 idle) (", 0), 0u) << r.out;
  r = Meshtune(kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --model-only --allow-idle-ranks");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: --allow-idle-ranks needs --ranks: a mesh given with --mesh uses all its "
            "ranks\n");
}

// A problem too small for every mesh of 2 or more ranks: without --allow-idle-ranks the
// refusal advises it; with it, it names the rank counts tried (idle ranks allowed) and
// advises fewer ranks instead; on 2 ranks, where idle ranks add no mesh, it advises one rank.
TEST_F(TuneCliTest, TooSmallForTheRanksAdvisesIdleRanksOnlyWhenTheyWereNotAllowed) {
  const std::string tune = kMatmul + "--extents m=1,n=1,k=1 --model-only --no-db " + kModel;
  const std::string what =
      "meshtune: no schedule spreads C[m,n] += A[m,k] * B[k,n] (k=1,m=1,n=1) over ";
  const std::string why =
      " without leaving a rank empty (every split of an index over an axis leaves a block past its "
      "end); ";
  CliRun r = Meshtune(tune + "--ranks 4");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, what + "the 4 ranks of x=4 or x=2,y=2" + why +
                       "a smaller mesh, or --ranks 4 --allow-idle-ranks, leaves ranks idle "
                       "instead\n");
  r = Meshtune(tune + "--ranks 4 --allow-idle-ranks");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, what + "2 to 4 ranks (x=4 or x=2,y=2 or x=3 or x=2), idle ranks allowed," + why +
                       "fewer than 2 ranks (a smaller --ranks or mesh) leave more ranks idle\n");
  r = Meshtune(tune + "--ranks 2 --allow-idle-ranks");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, what + "the 2 ranks of x=2" + why +
                       "one rank (--ranks 1, or a mesh of one rank) leaves the other idle "
                       "instead\n");
}

TEST_F(TuneCliTest, NoLegalScheduleExitsOne) {
  // Any shape has a schedule now (blocks need not divide): a memory budget below one shard
  // leaves none.
  const CliRun r = Meshtune(kMatmul + "--extents m=3,n=3,k=3 --mesh x=2 --mem-per-rank 64 " +
                            "--model-only " + kModel);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.err.rfind("meshtune: no legal schedule among ", 0) == 0) << r.err;
  EXPECT_NE(r.err.find("over_memory_budget"), std::string::npos) << r.err;
}

TEST_F(TuneCliTest, FailingWorkerBecomesMeasurementErrors) {
  const CliRun r = Meshtune(
      kMatmul + "--extents m=64,n=64,k=64 --mesh x=2 --top-k 2 --worker /bin/false --json " +
      "--max-evaluations 20 " + kModel);
  EXPECT_EQ(r.status, 1) << r.err;
  meshtune::v1::TuneResult result;
  ASSERT_TRUE(ParsesAs(r.out, &result));
  EXPECT_FALSE(result.record().verified());
  EXPECT_FALSE(result.record().has_measured_s());
  ASSERT_EQ(result.measurements_size(), 2) << r.out;
  for (const meshtune::v1::MeasuredCandidate& m : result.measurements()) {
    EXPECT_FALSE(m.verified());
    EXPECT_FALSE(m.has_measured_s());
    EXPECT_TRUE(m.error().rfind("cannot find the worker binary", 0) == 0 ||
                m.error().rfind("the job failed", 0) == 0)
        << m.error();
  }
  EXPECT_TRUE(Has(r.err, "no measured candidate verified")) << r.err;
}

}  // namespace
