// `meshtune codegen --lookup --wisdom FILE` and `--estimate`, as a hermetic build runs them:
// the kernel of a wisdom file's record without a database or a home directory (HOME,
// MESHTUNE_HOME and XDG_CACHE_HOME point at directories that must stay absent), the exact
// commands to run on a miss, and a deterministic model-only estimate on a miss or instead.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::ReadFile;

const std::string kTuned =
    " --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=16,k=16 --mesh x=2,y=2";
const std::string kUntuned =
    " --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=16,k=8 --mesh x=2,y=2";

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

class CodegenWisdomTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = TmpDir() + "/absent";
    // Nothing below may be created: codegen from a wisdom file touches no home directory.
    setenv("HOME", (home_ + "/home").c_str(), 1);
    setenv("MESHTUNE_HOME", (home_ + "/meshtune").c_str(), 1);
    setenv("XDG_CACHE_HOME", (home_ + "/cache").c_str(), 1);
    wisdom_ = TmpDir() + "/wisdom.jsonl";
    if (!Exists(wisdom_)) {
      const std::string db = TmpDir() + "/w.db";
      CliRun r = Meshtune("tune" + kTuned + " --model-only --db " + db);
      ASSERT_EQ(r.status, 0) << r.err;
      r = Meshtune("records export --db " + db);
      ASSERT_EQ(r.status, 0) << r.err;
      std::ofstream(wisdom_) << r.out;
    }
  }
  void TearDown() override { EXPECT_FALSE(Exists(home_)) << "codegen wrote under " << home_; }

  std::string home_, wisdom_;
};

TEST_F(CodegenWisdomTest, AWisdomRecordGivesTheSameKernelAsItsTrace) {
  CliRun r = Meshtune("lookup --json" + kTuned + " --db " + TmpDir() + "/w.db");
  ASSERT_EQ(r.status, 0) << r.err;
  r = Meshtune("codegen --lookup --wisdom " + wisdom_ + kTuned + " --name gemm");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(absl::StrContains(
      r.out, "\nint gemm(float* p_C, const float* p_A, const float* p_B, MPI_Comm comm) {\n"))
      << r.out;
  // Renamed, the same workload: found in the file, written in the new names.
  r = Meshtune("codegen --lookup --wisdom " + wisdom_ +
               " --expr 'Z[i,j] += X[i,l] * Y[l,j]' --extents i=32,j=16,l=16 --mesh x=2,y=2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "float* p_Z")) << r.out;
}

TEST_F(CodegenWisdomTest, AMissSaysTheExactCommandsToRun) {
  CliRun r = Meshtune("codegen --lookup --wisdom " + wisdom_ + kUntuned);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=32,n=16,k=8, f32) "
            "on x=2,y=2 with profile default in wisdom file " +
                wisdom_ + "; run: meshtune records import " + wisdom_ +
                " && meshtune tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents "
                "m=32,n=16,k=8 --mesh x=2,y=2 && meshtune records export > " +
                wisdom_ + "\n");
  // A rank count, f64, a profile, and a path that needs quoting.
  const std::string odd = TmpDir() + "/my wisdom.jsonl";
  std::ofstream(odd) << ReadFile(wisdom_);
  r = Meshtune("codegen --lookup --wisdom '" + odd +
               "' --expr 'y[i] += A[i,j] * x[j]' --extents i=8,j=8 --dtype f64 --ranks 2 "
               "--profile big");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(absl::EndsWith(
      r.err, "; run: meshtune records import '" + odd +
                 "' && meshtune tune --expr 'y[i] += A[i,j] * x[j]' --extents i=8,j=8 --dtype f64 "
                 "--ranks 2 --profile big && meshtune records export > '" +
                 odd + "'\n"))
      << r.err;
}

TEST_F(CodegenWisdomTest, EstimateOnAMissOrInsteadIsDeterministic) {
  CliRun miss = Meshtune("codegen --lookup --estimate --wisdom " + wisdom_ + kUntuned);
  ASSERT_EQ(miss.status, 0) << miss.err;
  EXPECT_EQ(miss.err,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=32,n=16,k=8, "
            "f32) on x=2,y=2 with profile default in wisdom file " +
                wisdom_ + "; --estimate: the cost model's best with built-in machine numbers\n");
  CliRun instead = Meshtune("codegen --estimate" + kUntuned);
  ASSERT_EQ(instead.status, 0) << instead.err;
  EXPECT_EQ(instead.err, "");
  EXPECT_EQ(instead.out, miss.out);
  // A hit with --estimate is the file's record, as without it.
  CliRun hit = Meshtune("codegen --lookup --estimate --wisdom " + wisdom_ + kTuned);
  CliRun plain = Meshtune("codegen --lookup --wisdom " + wisdom_ + kTuned);
  ASSERT_EQ(hit.status, 0) << hit.err;
  EXPECT_EQ(hit.out, plain.out);
}

TEST_F(CodegenWisdomTest, BadUse) {
  CliRun r = Meshtune("codegen --wisdom " + wisdom_ + kTuned);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: give exactly one of --trace FILE, --record ID and --lookup or --estimate "
            "(with --expr, --extents and --mesh or --ranks)\n");
  r = Meshtune("codegen --lookup --estimate --wisdom " + wisdom_);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.err,
      "meshtune: give the problem: --expr (e.g. 'C[m,n] += A[m,k] * B[k,n]') and --extents\n");
  r = Meshtune("codegen --record 1 --wisdom " + wisdom_ + kTuned);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: --wisdom FILE needs --lookup\n");
  r = Meshtune("codegen --lookup --wisdom " + TmpDir() + "/none.jsonl" + kTuned);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "meshtune: cannot read wisdom file " + TmpDir() + "/none.jsonl\n");
  const std::string bad = TmpDir() + "/bad.jsonl";
  std::ofstream(bad) << "{\"problem\": 3}\n";
  r = Meshtune("codegen --lookup --wisdom " + bad + kTuned);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(absl::StartsWith(r.err, "meshtune: " + bad + ": wisdom line 1: ")) << r.err;
}

}  // namespace
