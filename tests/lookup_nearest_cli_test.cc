// `meshtune lookup --nearest` end to end: after a model-only tune at m=n=k=64 on 2x2, a
// lookup at m=n=k=128 (never tuned) prints a schedule transferred from that record, marked
// so, which `meshtune run --simulate` verifies at 128 and which is not stored; a renamed
// problem gets it in its own names; the tuned extents get their record, not a transfer;
// extents at which the trace does not replay legally, or another mesh, are NotFound with
// the reason; `--json` prints the LookupResponse; `--server` prints the same.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "proto/meshtune.pb.h"
#include "tests/meshtuned_process.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::ParsesAs;

const std::string kExpr = " --expr 'C[m,n] += A[m,k] * B[k,n]'";
const std::string kRenamedExpr = " --expr 'Out[i,j] += X[i,l] * Y[l,j]'";
const std::string kMesh = " --mesh x=2,y=2";

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

bool Has(const std::string& s, const std::string& part) { return absl::StrContains(s, part); }

std::vector<std::string> Lines(const std::string& s) { return absl::StrSplit(s, '\n'); }

class LookupNearestCliTest : public ::testing::Test {
 protected:
  // One model-only tune at m=n=k=64 into a fresh database, shared by the tests.
  static void SetUpTestSuite() {
    setenv("MESHTUNE_HOME", (TmpDir() + "/home").c_str(), 1);  // no profile: built-in numbers
    db_ = new std::string(TmpDir() + "/nearest.db");
    std::remove(db_->c_str());
    tune_ = new CliRun(Meshtune("tune" + kExpr + " --extents m=64,n=64,k=64" + kMesh +
                                " --model-only --max-evaluations 200" + Db()));
  }
  static void TearDownTestSuite() {
    delete db_;
    delete tune_;
  }
  void SetUp() override { ASSERT_EQ(tune_->status, 0) << tune_->err; }
  static std::string Db() { return " --db " + *db_; }
  static std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = TmpDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  static std::string* db_;
  static CliRun* tune_;
};

std::string* LookupNearestCliTest::db_ = nullptr;
CliRun* LookupNearestCliTest::tune_ = nullptr;

TEST_F(LookupNearestCliTest, UntunedExtentsGetATransferredScheduleThatVerifies) {
  CliRun r = Meshtune("lookup --nearest" + kExpr + " --extents m=128,n=128,k=128" + kMesh + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0],
            "transferred from record 1 (extents m=64,n=64,k=64), not tuned at these extents");
  EXPECT_EQ(lines[1],
            "C[m,n] += A[m,k] * B[k,n] (m=128,n=128,k=128, f32) on x=2,y=2, profile default");
  EXPECT_TRUE(Has(r.out, "\npredicted  ")) << r.out;
  EXPECT_TRUE(Has(r.out, " s (the cost model at these extents)\n")) << r.out;

  r = Meshtune("lookup --nearest --json" + kExpr + " --extents m=128,n=128,k=128" + kMesh + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  meshtune::v1::LookupResponse response;
  ASSERT_TRUE(ParsesAs(r.out, &response)) << r.out;
  EXPECT_TRUE(response.transferred());
  EXPECT_EQ(response.transferred_from(), 1);
  EXPECT_EQ(response.transferred_extents(), "m=64,n=64,k=64");
  EXPECT_EQ(response.record().id(), 0);
  EXPECT_GT(response.record().predicted_s(), 0);
  EXPECT_TRUE(Has(r.out, "\"transferred\":true")) << r.out;

  // The transferred trace computes the right answer at m=n=k=128.
  const std::string trace = WriteFile("transferred.trace", response.record().trace().text());
  r = Meshtune("run --simulate" + kExpr + " --extents m=128,n=128,k=128 --mesh " +
               response.record().mesh() + " --trace " + trace);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_TRUE(r.out.rfind("verified   yes", 0) == 0) << r.out;

  // Nothing was stored: still one record, and a plain lookup does not find one.
  r = Meshtune("records" + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 2u) << r.out;  // one line and the final newline
  r = Meshtune("lookup" + kExpr + " --extents m=128,n=128,k=128" + kMesh + Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=128,n=128,k=128, f32) "
            "on x=2,y=2 with profile default; tune it first\n");
}

TEST_F(LookupNearestCliTest, ARenamedProblemGetsItInItsOwnNames) {
  CliRun r =
      Meshtune("lookup --nearest" + kRenamedExpr + " --extents i=128,j=96,l=32" + kMesh + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.rfind("transferred from record 1 (extents i=64,j=64,l=64), not tuned at "
                          "these extents\nOut[i,j] += X[i,l] * Y[l,j] (i=128,j=96,l=32, f32)",
                          0) == 0)
      << r.out;
  EXPECT_TRUE(Has(r.out, "shard(X, ")) << r.out;
  EXPECT_FALSE(Has(r.out, "shard(A, ")) << r.out;
  r = Meshtune("lookup --nearest --json" + kRenamedExpr + " --extents i=128,j=96,l=32" + kMesh +
               Db());
  meshtune::v1::LookupResponse response;
  ASSERT_TRUE(ParsesAs(r.out, &response)) << r.out;
  const std::string trace = WriteFile("renamed.trace", response.record().trace().text());
  r = Meshtune("run --simulate" + kRenamedExpr + " --extents i=128,j=96,l=32" + kMesh +
               " --trace " + trace);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_TRUE(r.out.rfind("verified   yes", 0) == 0) << r.out;
}

TEST_F(LookupNearestCliTest, TheTunedExtentsGetTheirRecordNotATransfer) {
  CliRun r = Meshtune("lookup --nearest" + kExpr + " --extents m=64,n=64,k=64" + kMesh + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(
      r.out.rfind("record 1: C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=64, f32) on x=2,y=2", 0) == 0)
      << r.out;
  EXPECT_FALSE(Has(r.out, "transferred")) << r.out;
  r = Meshtune("lookup --nearest --json" + kExpr + " --extents m=64,n=64,k=64" + kMesh + Db());
  meshtune::v1::LookupResponse response;
  ASSERT_TRUE(ParsesAs(r.out, &response)) << r.out;
  EXPECT_FALSE(response.transferred());
  EXPECT_EQ(response.record().id(), 1);
  EXPECT_EQ(response.transferred_from(), 0);
}

TEST_F(LookupNearestCliTest, NoLegalReplayIsNotFoundWithTheReason) {
  // m=n=1 on 2x2 (a row of ranks wholly past the end): the record's broadcasts take their
  // root from the one row that has data, which translation validation refuses.
  CliRun r = Meshtune("lookup --nearest" + kExpr + " --extents m=1,n=1,k=2" + kMesh + Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=1,n=1,k=2, f32) on "
            "x=2,y=2 with profile default, and the one record of this problem at other extents "
            "does not replay legally at m=1,n=1,k=2; tune it first\n");
  // At m=n=k=1 every transfer is local: the record replays, lowers and validates.
  r = Meshtune("lookup --nearest" + kExpr + " --extents m=1,n=1,k=1" + kMesh + Db());
  EXPECT_EQ(r.status, 0) << r.err;
  // Another mesh: no record of this structure at all.
  r = Meshtune("lookup --nearest" + kExpr + " --extents m=128,n=128,k=128 --mesh x=4" + Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=128,n=128,k=128, f32) "
            "on x=4 with profile default, and no record of this problem at other extents; tune "
            "it first\n");
}

TEST_F(LookupNearestCliTest, ThroughTheDaemonTheSameAnswers) {
  meshtune::testing::MeshtunedProcess daemon(*db_, TmpDir() + "/meshtuned.err", TmpDir() + "/home");
  ASSERT_FALSE(daemon.address().empty()) << daemon.log();
  for (const std::string& command :
       {"lookup --nearest" + kExpr + " --extents m=128,n=128,k=128" + kMesh,
        "lookup --nearest --json" + kRenamedExpr + " --extents i=128,j=96,l=32" + kMesh,
        "lookup --nearest" + kExpr + " --extents m=1,n=1,k=2" + kMesh}) {
    const CliRun local = Meshtune(command + Db());
    const CliRun remote = Meshtune(command + " --server " + daemon.address());
    EXPECT_EQ(remote.status, local.status) << command << "\n" << remote.err;
    EXPECT_EQ(remote.out, local.out) << command;
    EXPECT_EQ(remote.err, local.err) << command;
  }
  EXPECT_TRUE(Has(Meshtune("lookup --nearest" + kExpr + " --extents m=128,n=128,k=128" + kMesh +
                           " --server " + daemon.address())
                      .out,
                  "transferred from record 1"));
}

}  // namespace
