// `meshtune calibrate` as a user runs it: a quick calibration on 2 ranks stores a profile
// that loads back; --from-runs fits a profile's term scales to runs; --inter-node gives and
// --hostfile measures the link between nodes; bad flags exit 2 and a failing calibration
// job exits 1, with messages.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "base/json.h"
#include "engine/fidelity.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "search/runner.h"
#include "storage/hardware_profile.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::ReadFile;

struct CliRun {
  int status = -1;
  std::string out, err;
};

class CalibrateCliTest : public ::testing::Test {
 protected:
  // A fresh MESHTUNE_HOME per test, for meshtune and for storage::LoadProfile here.
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = std::string(tmp ? tmp : "/tmp") + "/calibrate_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    home_ = dir_ + "/home";
    ASSERT_EQ(std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + home_ + "'").c_str()), 0);
    setenv("MESHTUNE_HOME", home_.c_str(), 1);
  }

  // Runs `cli/meshtune calibrate <args>` through the shell.
  CliRun Calibrate(const std::string& args) const {
    const std::string out = dir_ + "/out.txt", err = dir_ + "/err.txt";
    const int rc = std::system(
        ("cli/meshtune calibrate " + args + " </dev/null >" + out + " 2>" + err).c_str());
    CliRun r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    return r;
  }

  // Stores a profile "two" of 2 ranks, alpha 2 us and beta 3e-10 s/byte, to edit.
  static absl::Status SaveTwo() {
    meshtune::v1::HardwareProfile profile;
    profile.set_name("two");
    profile.set_ranks(2);
    profile.set_alpha_s(2e-6);
    profile.set_beta_s_per_byte(3e-10);
    return meshtune::storage::SaveProfile(profile);
  }

  std::string dir_, home_;
};

TEST_F(CalibrateCliTest, QuickCalibrationStoresAProfileThatLoads) {
  const CliRun r = Calibrate("--ranks 2 --quick --name t1 --timeout 120");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("hardware profile \"t1\" saved to " + home_ + "/profiles/t1.json\n", 0), 0u)
      << r.out;
  EXPECT_FALSE(ReadFile(home_ + "/profiles/t1.json").empty());
  // --quick writes 4 MiB a node before each timed transfer and memory pass.
  EXPECT_NE(r.out.find("\n  cold caches     4 MiB written on each node before every timed "
                       "transfer and memory pass\n"),
            std::string::npos)
      << r.out;

  const absl::StatusOr<meshtune::v1::HardwareProfile> p = meshtune::storage::LoadProfile("t1");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name(), "t1");
  EXPECT_EQ(p->ranks(), 2);
  EXPECT_EQ(p->dtype(), "f32");
  EXPECT_EQ(p->gemm_n(), 512);
  EXPECT_EQ(p->cache_flush_bytes(), 4 << 20);
  const std::pair<const char*, double> numbers[] = {
      {"alpha_s", p->alpha_s()},
      {"beta_s_per_byte", p->beta_s_per_byte()},
      {"alpha_coll_s", p->alpha_coll_s()},
      {"beta_coll_s_per_byte", p->beta_coll_s_per_byte()},
      {"gamma_s_per_flop", p->gamma_s_per_flop()},
  };
  for (const auto& [field, value] : numbers) {
    EXPECT_TRUE(std::isfinite(value) && value > 0) << field << " = " << value;
  }
  EXPECT_TRUE(p->overlap() >= 0 && p->overlap() <= 1) << p->overlap();
  EXPECT_EQ(p->ranks_per_node(), 2);  // one machine
  EXPECT_EQ(p->cores(), static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  std::map<std::string, int> kinds;
  for (const meshtune::v1::CalibrationSample& s : p->samples()) {
    ++kinds[s.kind()];
    EXPECT_GT(s.seconds(), 0) << s.kind() << " " << s.bytes();
    if (s.kind() == "overlap_shift" || s.kind() == "overlap_both") {
      EXPECT_EQ(s.bytes(), 1 << 20);
    }
  }
  std::map<std::string, int> expected = {
      {"pingpong", 18},    {"shift", 18},       {"bcast", 18},  // 8 B to 1 MiB, doubling
      {"gemm", 1},         {"overlap_gemm", 1}, {"overlap_shift", 1},
      {"overlap_both", 1}, {"gemm_tile", 27},  // --quick's grid 1, 64, 512 in each of m, n, k
      {"copy", 4},         {"add", 4},          {"gather", 4}};  // 256 KiB to 16 MiB, every fourth
  // Each collective in both forms over the one group of 2 ranks, 8 B to 1 MiB every fourth;
  // the all-to-all (of given layouts' redistributions) blocking only.
  for (const char* kind : {"bcast", "reduce", "allgather", "reduce_scatter", "allreduce"}) {
    expected[std::string("coll_") + kind] = 10;
    expected[std::string("coll_i") + kind] = 10;
  }
  expected["coll_alltoall"] = 10;
  EXPECT_EQ(kinds, expected);
  // Fitted: a line per collective and form, a rate per tile, the memory passes; the cost
  // model gets them.
  EXPECT_EQ(p->collectives_size(), 11);
  for (const meshtune::v1::CollectiveFit& f : p->collectives()) EXPECT_EQ(f.group(), 2);
  EXPECT_EQ(p->gemm_rates_size(), 27);
  EXPECT_GT(p->copy_s_per_byte(), 0);
  EXPECT_GT(p->gather_s_per_byte(), 0);
  EXPECT_GT(p->add_s_per_byte(), 0);
  const meshtune::cost::CostParams params = meshtune::storage::ToCostParams(*p);
  EXPECT_GT(params.gemm.Rate(512, 512, 512), 0);
  EXPECT_TRUE(params.collectives.Has(meshtune::cost::Collective::kAllReduce));
}

// --json: the stored profile, a meshtune.v1.HardwareProfile, as one line.
TEST_F(CalibrateCliTest, JsonIsTheStoredHardwareProfile) {
  const CliRun r = Calibrate("--ranks 2 --quick --name j1 --timeout 120 --json --flush-mib 0");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  meshtune::v1::HardwareProfile printed;
  ASSERT_TRUE(meshtune::testing::ParsesAs(r.out, &printed));
  EXPECT_EQ(printed.name(), "j1");
  EXPECT_EQ(printed.ranks(), 2);
  EXPECT_GT(printed.alpha_s(), 0);
  EXPECT_GT(printed.gamma_s_per_flop(), 0);
  EXPECT_FALSE(printed.samples().empty());
  EXPECT_EQ(printed.cache_flush_bytes(), 0);  // warm caches, as asked
  const absl::StatusOr<meshtune::v1::HardwareProfile> stored = meshtune::storage::LoadProfile("j1");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->SerializeAsString(), printed.SerializeAsString());
}

TEST_F(CalibrateCliTest, BadFlagsExitTwoAndNameTheProblem) {
  CliRun r = Calibrate("--ranks 2 --quick --name 'a/b'");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(
      r.err.find("meshtune: invalid hardware profile name \"a/b\": character '/' is not allowed"),
      std::string::npos)
      << r.err;

  r = Calibrate("--ranks 1 --quick");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("meshtune: --ranks 1 is out of range: calibrate needs 2 to 65536 ranks"),
            std::string::npos)
      << r.err;

  r = Calibrate("--ranks 2 --quick --dtype bf16");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("meshtune: --dtype must be f32 or f64, not \"bf16\""), std::string::npos)
      << r.err;

  for (const char* mib : {"65537", "-2"}) {
    r = Calibrate(std::string("--ranks 2 --quick --flush-mib ") + mib);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(std::string("meshtune: --flush-mib ") + mib +
                         " is out of range: it must be 0 to 65536 MiB"),
              std::string::npos)
        << r.err;
  }

  r = Calibrate("--quick");  // --ranks is required
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--ranks"), std::string::npos) << r.err;

  EXPECT_EQ(ReadFile(home_ + "/profiles/default.json"), "");  // nothing was stored
}

// A class of schedules whose runs measure what the model makes of them with term scales
// (1.3, 2.5, 0.7, 3) under profile "fit": 2 fidelity runs of 12 schedules each.
std::vector<meshtune::v1::FidelityResult> RunsMadeWithScales(const meshtune::cost::CostParams& p) {
  class Untimed : public meshtune::search::Runner {
   public:
    bool measures() const override { return true; }
    meshtune::search::CandidateRun Run(const meshtune::search::MeasureInput&) override {
      meshtune::search::CandidateRun r;
      r.seconds = 1;
      r.verified = true;
      return r;
    }
  } runner;
  meshtune::cost::CostParams truth = p;
  truth.scales = {1.3, 2.5, 0.7, 3};
  const meshtune::ir::Problem problem =
      *meshtune::ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=64,n=64,k=64");
  std::vector<meshtune::v1::FidelityResult> runs;
  for (const char* mesh : {"x=2,y=2", "x=4"}) {
    meshtune::engine::FidelityOptions options;
    options.max_evaluations = 400;
    absl::StatusOr<meshtune::v1::FidelityResult> r = meshtune::engine::RunFidelity(
        meshtune::ir::ProgramOf(problem), *meshtune::ir::ParseMesh(mesh), p, options, runner);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    const absl::StatusOr<meshtune::v1::FidelityResult> made =
        meshtune::engine::RecostFidelity(*r, truth);
    for (int i = 0; i < r->points_size(); ++i)
      r->mutable_points(i)->set_measured_s(made->points(i).predicted_s());
    runs.push_back(*r);
  }
  return runs;
}

// --from-runs: the term scales of an existing profile fitted to runs, stored in it.
TEST_F(CalibrateCliTest, FromRunsFitsTheTermScalesOfAProfile) {
  meshtune::v1::HardwareProfile profile;
  profile.set_name("fit");
  profile.set_ranks(4);
  profile.set_alpha_s(2e-6);
  profile.set_beta_s_per_byte(3e-10);
  profile.set_alpha_coll_s(1e-6);
  profile.set_beta_coll_s_per_byte(4e-10);
  profile.set_gamma_s_per_flop(1e-10);
  profile.set_add_s_per_byte(1e-10);
  ASSERT_TRUE(meshtune::storage::SaveProfile(profile).ok());
  const std::string runs = dir_ + "/runs.json";
  {
    std::ofstream f(runs);
    for (const auto& r : RunsMadeWithScales(meshtune::storage::ToCostParams(profile)))
      f << meshtune::base::ToJsonLine(r) << "\n";
  }
  CliRun r = Calibrate("--name fit --from-runs " + runs);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("term scales of hardware profile \"fit\" fitted to 24 measured schedules "
                        "(2 runs), saved to " +
                            home_ + "/profiles/fit.json\n  compute         x1.3\n",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\n  run 2, C[m,n] += A[m,k] * B[k,n] with k=64,m=64,n=64 on x=4: rho "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("after\n"), std::string::npos) << r.out;
  const absl::StatusOr<meshtune::v1::HardwareProfile> stored =
      meshtune::storage::LoadProfile("fit");
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_TRUE(stored->has_term_scales());
  EXPECT_NEAR(stored->term_scales().compute(), 1.3, 1e-6);
  EXPECT_NE(r.out.find("\n  message wait    "), std::string::npos) << r.out;
  EXPECT_EQ(stored->term_scales().schedules(), 24);
  EXPECT_EQ(stored->term_scales().runs(),
            "C[m,n] += A[m,k] * B[k,n] with k=64,m=64,n=64 on x=2,y=2; "
            "C[m,n] += A[m,k] * B[k,n] with k=64,m=64,n=64 on x=4");
  EXPECT_EQ(stored->alpha_s(), 2e-6);  // the rest of the profile as it was
  EXPECT_NEAR(meshtune::storage::ToCostParams(*stored).scales.compute, 1.3, 1e-6);

  const std::pair<std::string, std::string> refused[] = {
      {"--name nosuch --from-runs " + runs,
       "meshtune: no hardware profile \"nosuch\" to fit: calibrate it first (meshtune "
       "calibrate --ranks P --name nosuch)"},
      {"--name fit --ranks 2 --from-runs " + runs,
       "meshtune: --from-runs fits the term scales of an existing profile and runs nothing: "
       "give it without --ranks"}};
  for (const auto& [args, message] : refused) {
    r = Calibrate(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  {
    std::ofstream f(dir_ + "/bad.json");
    f << "\n{\"problem\": 3}\n";
  }
  r = Calibrate("--name fit --from-runs " + dir_ + "/bad.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("meshtune: " + dir_ +
                       "/bad.json line 2 is not a meshtune.v1.FidelityResult "
                       "(meshtune fidelity --json): "),
            std::string::npos)
      << r.err;
  {
    std::ofstream f(dir_ + "/paced.json");
    f << "{\"problem\": \"C[m,n] += A[m,k] * B[k,n]\", \"pace_s\": 0.002}\n";
  }
  r = Calibrate("--name fit --from-runs " + dir_ + "/paced.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: " + dir_ +
                       "/paced.json line 1 holds times read at the machine's pace (a fidelity "
                       "run of an earlier meshtune), not measurements; run meshtune fidelity "
                       "again\n");
  r = Calibrate("--name fit --from-runs " + dir_ + "/missing.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("meshtune: cannot read --from-runs file '"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing.json': No such file or directory"), std::string::npos) << r.err;
}

// --inter-node: the link between nodes of an existing profile, given, stored in it, and in
// the cost model's numbers; bad values exit 2 with exact messages.
TEST_F(CalibrateCliTest, InterNodeGivesTheLinkBetweenNodes) {
  ASSERT_TRUE(SaveTwo().ok());
  CliRun r = Calibrate("--name two --node-ranks 8 --inter-node 5e-6,1e-9");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "profile two: nodes of 8 ranks; between nodes alpha 5e-06 s, beta 1e-09 s/byte (1 "
            "GB/s); within a node alpha 2e-06 s, beta 3e-10 s/byte\n");
  const absl::StatusOr<meshtune::v1::HardwareProfile> stored =
      meshtune::storage::LoadProfile("two");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->inter_node().source(), "given");
  const meshtune::cost::CostParams params = meshtune::storage::ToCostParams(*stored);
  EXPECT_EQ(params.node_ranks, 8);
  EXPECT_EQ(params.alpha_node, 5e-6);
  EXPECT_EQ(params.beta_node, 1e-9);
  EXPECT_EQ(params.alpha, 2e-6);
  const std::pair<std::string, std::string> refused[] = {
      {"--name two --node-ranks 8 --inter-node 5e-6",
       "meshtune: --inter-node '5e-6' is not ALPHA,BETA: seconds per message and seconds per "
       "byte between nodes, e.g. 2e-6,1e-10\n"},
      {"--name two --node-ranks 8 --inter-node 5e-6,-1",
       "meshtune: --inter-node '5e-6,-1' is not ALPHA,BETA: seconds per message and seconds per "
       "byte between nodes, e.g. 2e-6,1e-10\n"},
      {"--name two --inter-node 5e-6,1e-9",
       "meshtune: --node-ranks 0 is not a rank count from 1 to 65536 (the ranks of one node)\n"},
      {"--name two --ranks 2 --node-ranks 8 --inter-node 5e-6,1e-9",
       "meshtune: --inter-node gives the link between nodes of an existing profile and runs "
       "nothing: give it without --ranks and --from-runs\n"},
      {"--name nosuch --node-ranks 8 --inter-node 5e-6,1e-9",
       "meshtune: no hardware profile \"nosuch\" to give a link between nodes: calibrate it "
       "first (meshtune calibrate --ranks P --name nosuch)\n"}};
  for (const auto& [args, message] : refused) {
    r = Calibrate(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err, message) << args;
  }
}

// --hostfile: the link between nodes of an existing profile, measured by a ping-pong
// between rank 0 and the first rank of the hostfile's second node (rank --node-ranks), and
// stored in it. Here the hostfile's one node is this machine, so the job runs and the
// numbers are this machine's; across real nodes they would be the network's. Bad flags
// exit 2 with exact messages.
TEST_F(CalibrateCliTest, HostfileMeasuresTheLinkBetweenNodes) {
  ASSERT_TRUE(SaveTwo().ok());
  const std::string hosts = dir_ + "/hosts";
  std::ofstream(hosts) << "localhost slots=3\n";
  CliRun r = Calibrate("--name two --hostfile " + hosts + " --node-ranks 2 --quick --timeout 120");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string source = "measured between rank 0 and rank 2 with hostfile " + hosts;
  EXPECT_EQ(r.out.rfind("profile two: nodes of 2 ranks; between nodes alpha ", 0), 0u) << r.out;
  EXPECT_TRUE(absl::EndsWith(r.out, ", " + source + "\n")) << r.out;
  const absl::StatusOr<meshtune::v1::HardwareProfile> stored =
      meshtune::storage::LoadProfile("two");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->inter_node().source(), source);
  EXPECT_EQ(stored->inter_node().node_ranks(), 2);
  EXPECT_GT(stored->inter_node().alpha_s() + stored->inter_node().beta_s_per_byte(), 0);
  const meshtune::cost::CostParams params = meshtune::storage::ToCostParams(*stored);
  EXPECT_EQ(params.node_ranks, 2);
  EXPECT_EQ(params.alpha_node, stored->inter_node().alpha_s());
  EXPECT_EQ(params.beta_node, stored->inter_node().beta_s_per_byte());
  EXPECT_EQ(params.alpha, 2e-6);  // within a node: as calibrated
  const std::pair<std::string, std::string> refused[] = {
      {"--name two --hostfile /nonexistent/hosts --node-ranks 2",
       "meshtune: --hostfile '/nonexistent/hosts' is not a readable file\n"},
      {"--name two --hostfile " + hosts,
       "meshtune: --node-ranks 0 is not a rank count from 1 to 65535 (the ranks of one node of "
       "the hostfile)\n"},
      {"--name two --hostfile " + hosts + " --node-ranks 4 --ranks 4",
       "meshtune: --node-ranks 4 is not below --ranks 4: the link between nodes is timed from "
       "rank 0 to rank --node-ranks, on the second node\n"},
      {"--name two --hostfile " + hosts + " --node-ranks 2 --inter-node 5e-6,1e-9",
       "meshtune: --hostfile without --ranks measures the link between nodes of an existing "
       "profile: give it with --node-ranks and without --inter-node and --from-runs\n"},
      {"--name two --ranks 2 --launcher-arg=--oversubscribe --inter-node 5e-6,1e-9",
       "meshtune: --inter-node gives the link between nodes instead of measuring it: give it "
       "without --ranks, --hostfile, --launcher and --launcher-arg\n"},
      {"--name nosuch --hostfile " + hosts + " --node-ranks 2",
       "meshtune: no hardware profile \"nosuch\" to measure a link between nodes for: calibrate "
       "it first (meshtune calibrate --ranks P --name nosuch)\n"}};
  for (const auto& [args, message] : refused) {
    r = Calibrate(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err, message) << args;
  }
}

// --ranks with a cluster (here a hostfile whose one node is this machine): the whole
// calibration runs there, then the link between nodes, and the profile keeps the cluster,
// so that runs with it launch there.
TEST_F(CalibrateCliTest, RanksWithAHostfileCalibratesOnTheClusterAndKeepsIt) {
  const std::string hosts = dir_ + "/hosts";
  std::ofstream(hosts) << "localhost slots=3\n";
  const CliRun r = Calibrate("--name cl --ranks 3 --hostfile " + hosts +
                             " --launcher-arg=--bind-to --launcher-arg=none --node-ranks 2 "
                             "--quick --timeout 120");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string source =
      "measured between rank 0 and rank 2 with hostfile " + hosts + ", mpirun --bind-to none";
  EXPECT_TRUE(absl::EndsWith(r.out, ", " + source + "\n")) << r.out;
  const absl::StatusOr<meshtune::v1::HardwareProfile> stored = meshtune::storage::LoadProfile("cl");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->inter_node().source(), source);
  EXPECT_EQ(stored->inter_node().node_ranks(), 2);
  EXPECT_EQ(stored->ranks(), 3);
  EXPECT_EQ(stored->cluster().hostfile(), hosts);
  EXPECT_EQ(stored->cluster().launcher(), "");
  ASSERT_EQ(stored->cluster().launcher_args_size(), 2);
  EXPECT_EQ(stored->cluster().launcher_args(1), "none");
}

TEST_F(CalibrateCliTest, FailingCalibrationJobExitsOneWithAMessage) {
  CliRun r = Calibrate("--ranks 2 --quick --name broken --calibrator /bin/false --timeout 60");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("meshtune: calibration failed: the job failed (exit status ", 0), 0u)
      << r.err;

  // A job that hangs is killed at the timeout, the ranks included (their command lines
  // carry the job id).
  const std::string hang = dir_ + "/hang.sh";
  std::ofstream(hang) << "#!/bin/sh\nwhile :; do sleep 1; done\n";
  ASSERT_EQ(chmod(hang.c_str(), 0755), 0);
  r = Calibrate("--ranks 2 --quick --name broken --calibrator " + hang + " --timeout 2");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "meshtune: calibration failed: timed out after 2 s; the job was killed\n");

  const std::string garbage = dir_ + "/garbage.sh";
  std::ofstream(garbage) << "#!/bin/sh\necho '{\"ranks\": \"two\"}'\n";
  ASSERT_EQ(chmod(garbage.c_str(), 0755), 0);
  r = Calibrate("--ranks 2 --quick --name broken --calibrator " + garbage + " --timeout 60");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("meshtune: calibration failed: cannot parse the job's samples: ", 0), 0u)
      << r.err;

  EXPECT_EQ(ReadFile(home_ + "/profiles/broken.json"), "");
}

}  // namespace
