// `meshtune calibrate` as a user runs it: a quick calibration on 2 ranks stores a profile
// that loads back; bad flags exit 2 and a failing calibration job exits 1, with messages.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

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
      {"copy", 4},         {"add", 4}};        // 256 KiB to 16 MiB, every fourth size
  // Each collective in both forms over the one group of 2 ranks, 8 B to 1 MiB every fourth.
  for (const char* kind : {"bcast", "reduce", "allgather", "reduce_scatter", "allreduce"}) {
    expected[std::string("coll_") + kind] = 10;
    expected[std::string("coll_i") + kind] = 10;
  }
  EXPECT_EQ(kinds, expected);
  // Fitted: a line per collective and form, a rate per tile, the memory passes; the cost
  // model gets them.
  EXPECT_EQ(p->collectives_size(), 10);
  for (const meshtune::v1::CollectiveFit& f : p->collectives()) EXPECT_EQ(f.group(), 2);
  EXPECT_EQ(p->gemm_rates_size(), 27);
  EXPECT_GT(p->copy_s_per_byte(), 0);
  EXPECT_GT(p->add_s_per_byte(), 0);
  const meshtune::search::CostParams params = meshtune::storage::ToCostParams(*p);
  EXPECT_GT(params.gemm.Rate(512, 512, 512), 0);
  EXPECT_TRUE(params.collectives.Has(meshtune::search::Collective::kAllReduce));
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
