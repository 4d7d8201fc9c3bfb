// The CLI's service commands end to end: `tune` stores its winner in a --db file, `lookup`
// finds it (also under renamed indices and tensors, in the new names) or says exactly that
// there is none, `records` lists it, `batch` runs a JSON-lines file line by line (a bad
// line is an error line, the batch goes on; each line a meshtune.v1.BatchLine whose result
// is the TuneResult `tune --json` prints), and `--server` against a started meshtuned
// prints the same as the in-process engine; an unreachable daemon is exit 1 with its message.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "proto/meshtune.pb.h"
#include "sqlite3.h"
#include "tests/meshtuned_process.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::ParsesAs;
using ::meshtune::v1::BatchLine;
using ::meshtune::v1::Record;
using ::meshtune::v1::TuneResult;

// Fixed machine numbers, so no hardware profile is needed.
const std::string kModel = " --alpha 1e-6 --beta 1e-9 --gamma 3e-11";
const std::string kMatmul =
    " --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=64 --mesh x=2";
const std::string kRenamed =
    " --expr 'Out[i,j] += X[i,l] * Y[l,j]' --extents l=64,j=64,i=64 --mesh x=2";

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

bool Has(const std::string& s, const std::string& part) { return absl::StrContains(s, part); }

// meshtuned on 127.0.0.1:0 over the database `db` (MESHTUNE_HOME from the test's
// environment), stopped with SIGTERM at the end.
class Daemon : public meshtune::testing::MeshtunedProcess {
 public:
  explicit Daemon(const std::string& db) : MeshtunedProcess(db, TmpDir() + "/meshtuned.err") {}
};

class ServiceCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("MESHTUNE_HOME", (TmpDir() + "/home").c_str(), 1);
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    db_ = TmpDir() + "/" + name + ".db";
    std::remove(db_.c_str());
  }
  // " --db PATH" of this test's database.
  std::string Db() const { return " --db " + db_; }
  // A model-only tune of C[m,n] += A[m,k] * B[k,n] (64 cubed) on x=2 into the database.
  void TuneMatmul() {
    const CliRun r = Meshtune("tune" + kMatmul + " --model-only --json" + kModel + Db());
    ASSERT_EQ(r.status, 0) << r.err;
    TuneResult result;
    ASSERT_TRUE(ParsesAs(r.out, &result));
    ASSERT_TRUE(result.stored()) << r.out;
    ASSERT_EQ(result.record().id(), 1) << r.out;
  }
  std::string WriteFile(const std::string& name, const std::string& text) const {
    const std::string path = TmpDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string db_;
};

// Wisdom files: `records export` writes the database's records, `records import` merges
// them into another database (a second import adds nothing), and the other database's export
// is the same bytes; `lookup --same-machine` takes only records of this machine's profile.
TEST_F(ServiceCliTest, WisdomExportImportRoundTripAndMachineMismatch) {
  TuneMatmul();
  CliRun r = Meshtune(
      "tune --expr 'y[i] += A[i,j] * x[j]' --extents i=64,j=64 --ranks 2 "
      "--model-only" +
      kModel + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  r = Meshtune("records export" + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string exported = r.out;
  EXPECT_EQ(std::count(exported.begin(), exported.end(), '\n'), 2) << exported;
  Record first;
  ASSERT_TRUE(ParsesAs(exported.substr(0, exported.find('\n')), &first)) << exported;
  EXPECT_EQ(first.machine().size(), 16u) << first.machine();
  // Filtered to one workload, in any names.
  r = Meshtune("records export" + kRenamed + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_TRUE(Has(exported, r.out)) << r.out;

  const std::string wisdom = WriteFile("wisdom.jsonl", exported);
  const std::string other = TmpDir() + "/other.db";
  std::remove(other.c_str());
  r = Meshtune("records import " + wisdom + " --db " + other);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.rfind("imported 2 records (0 already present) into " + other + "\n", 0) == 0)
      << r.out;
  EXPECT_TRUE(Has(r.out, " on x=2, profile default: 1 added, 0 present; best: record ")) << r.out;
  EXPECT_TRUE(Has(r.out, " from the file, not measured, predicted ")) << r.out;
  r = Meshtune("records import " + wisdom + " --db " + other);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.rfind("imported 0 records (2 already present)", 0) == 0) << r.out;
  r = Meshtune("records export --db " + other);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, exported);

  // This machine's fingerprint is the built-in numbers' while no profile exists; with a
  // profile it changes, and the records no longer count as this machine's.
  r = Meshtune("lookup --same-machine" + kMatmul + " --db " + other);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string dir = std::string(std::getenv("MESHTUNE_HOME")) + "/profiles";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/default.json")
      << R"({"name": "default", "ranks": 2, "alphaS": 2e-6, "betaSPerByte": 1e-9,
             "alphaCollS": 2e-6, "betaCollSPerByte": 1e-9, "gammaSPerFlop": 3e-11})";
  r = Meshtune("lookup --same-machine" + kMatmul + " --db " + other);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.err.rfind("meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] "
                          "(m=64,n=64,k=64, f32) on x=2 with profile default from machine ",
                          0) == 0)
      << r.err;
  r = Meshtune("lookup" + kMatmul + " --db " + other);  // any machine
  EXPECT_EQ(r.status, 0) << r.err;
  std::remove((dir + "/default.json").c_str());

  // Bad input: a line that is not a record, naming its number; a daemon's database.
  r = Meshtune("records import " + WriteFile("bad.jsonl", exported + "{\"mesh\": 3}\n") + " --db " +
               other);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.rfind("meshtune: wisdom line 3: ", 0) == 0) << r.err;
  r = Meshtune("records import " + wisdom + " --server 127.0.0.1:1");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: records import writes a local database (--db), not a daemon's (--server)\n");
}

// `codegen --record ID` and `codegen --lookup` write the program of a stored schedule
// without a trace file: the same source as `codegen --trace` with the record's trace.
TEST_F(ServiceCliTest, CodegenFromARecordOrALookup) {
  TuneMatmul();
  CliRun r = Meshtune("lookup --json" + kMatmul + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  Record record;
  ASSERT_TRUE(ParsesAs(r.out, &record)) << r.out;
  const std::string trace = WriteFile("best.trace", record.trace().text());
  r = Meshtune("codegen --trace " + trace + kMatmul);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string expected = r.out;
  EXPECT_TRUE(Has(
      expected,
      "\nint meshtune_kernel(float* p_C, const float* p_A, const float* p_B, MPI_Comm comm) {\n"))
      << expected;
  r = Meshtune("codegen --lookup" + kMatmul + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  r = Meshtune("codegen --record 1" + kMatmul + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  r = Meshtune("codegen --main --record 1" + Db());  // canonical names, the record's mesh
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "mpirun -n 2 ./program")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"T0\"")) << r.out;
  // -o FILE writes the kernel and its header beside it; --name names the kernel.
  const std::string cc = TmpDir() + "/kern.cc";
  r = Meshtune("codegen --lookup --name mm_kernel -o " + cc + kMatmul + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string header = meshtune::testing::ReadFile(TmpDir() + "/kern.h");
  EXPECT_TRUE(
      Has(header, "\nint mm_kernel(float* C, const float* A, const float* B, MPI_Comm comm);\n"))
      << header;
  EXPECT_TRUE(Has(header, "//   C[m,n]: global shape {64, 64}, shard ")) << header;
  EXPECT_TRUE(Has(meshtune::testing::ReadFile(cc), "#include \"kern.h\"\n"));
  r = Meshtune("codegen --lookup --name 9lives" + kMatmul + Db());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: kernel name '9lives' is not a C identifier\n");

  r = Meshtune("codegen" + kMatmul + Db());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: give exactly one of --trace FILE, --record ID and --lookup or --estimate "
            "(with --expr, --extents and --mesh or --ranks)\n");
  r = Meshtune("codegen --record 1 --lookup" + kMatmul + Db());
  EXPECT_EQ(r.status, 2);
  r = Meshtune("codegen --record 7" + Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "meshtune: no tuning record with id 7\n");
  r = Meshtune("codegen --lookup" + kRenamed + " --db " + TmpDir() + "/none.db");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.err.rfind("meshtune: no tuning database at ", 0) == 0) << r.err;
  r = Meshtune("codegen --trace " + trace + " --expr 'C[m,n] += A[m,k] * B[k,n]' --mesh x=2");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: --trace needs --expr, --extents and --mesh\n");
}

TEST_F(ServiceCliTest, TuneStoresItsWinnerAndLookupFindsItUnderAnyNames) {
  TuneMatmul();
  CliRun r = Meshtune("lookup" + kMatmul + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(
      r.out.rfind(
          "record 1: C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=64, f32) on x=2, profile default\n"
          "created 20",
          0) == 0)
      << r.out;
  EXPECT_TRUE(Has(r.out, "\n\ndistribute(")) << r.out;
  EXPECT_TRUE(Has(r.out, "shard(A, ")) << r.out;
  EXPECT_TRUE(Has(r.out, "\nmesh       x=2\npredicted  ")) << r.out;
  EXPECT_TRUE(Has(r.out, "\nmeasured   -\nchecked    simulated\ntransfers  ")) << r.out;

  // Renamed indices and tensors, extents in another order: the same record, in the new names.
  r = Meshtune("lookup" + kRenamed + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(
      r.out.rfind("record 1: Out[i,j] += X[i,l] * Y[l,j] (l=64,j=64,i=64, f32) on x=2", 0) == 0)
      << r.out;
  EXPECT_TRUE(Has(r.out, "shard(X, ")) << r.out;
  EXPECT_FALSE(Has(r.out, "shard(A, ")) << r.out;
  EXPECT_TRUE(Has(r.out, "\ntransfers  X@") || Has(r.out, "\ntransfers  Y@"))
      << r.out;  // patterns too
  // lookup --json: the meshtune.v1.Record.
  r = Meshtune("lookup --json" + kRenamed + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  Record record;
  ASSERT_TRUE(ParsesAs(r.out, &record));
  EXPECT_EQ(record.id(), 1);
  EXPECT_FALSE(record.fingerprint().empty());
  EXPECT_EQ(record.problem().expr(), "Out[i,j] += X[i,l] * Y[l,j]");
  EXPECT_EQ(record.mesh(), "x=2");
  EXPECT_TRUE(Has(record.trace().text(), "shard(X, ")) << r.out;
  EXPECT_GT(record.predicted_s(), 0);
  EXPECT_FALSE(record.verified());
  EXPECT_GT(record.created_unix_ms(), 0);
  EXPECT_EQ(r.out.rfind("{\"id\":\"1\",\"fingerprint\":\"", 0), 0u)
      << r.out;  // .proto names, in order
}

TEST_F(ServiceCliTest, LookupOfAnUntunedWorkloadOrBadInput) {
  TuneMatmul();
  CliRun r = Meshtune(
      "lookup --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=32 --mesh x=2" + Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=32, f32) on x=2 "
            "with profile "
            "default; tune it first\n");
  r = Meshtune("lookup --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=64 --ranks 2" +
               Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=64, f32) on "
            "ranks=2 with profile "
            "default; tune it first\n");
  r = Meshtune("lookup --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=-4 --mesh x=2" +
               Db());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: extents column 13: extent of k must be positive, got -4\n");
  r = Meshtune("lookup --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=64" + Db());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)\n");
}

TEST_F(ServiceCliTest, RecordsListsAndShowsRecords) {
  TuneMatmul();
  ASSERT_EQ(Meshtune("tune" + kMatmul + " --model-only --seed 2 --json" + kModel + Db()).status, 0);
  CliRun r = Meshtune("records" + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_TRUE(lines[0].rfind("1  20", 0) == 0) << lines[0];
  EXPECT_TRUE(Has(lines[0],
                  "  T0[i0,i1] += T1[i0,i2] * T2[i2,i1] (i0=64,i1=64,i2=64, f32)  on x=2 -> x=2  "
                  "profile default  predicted "))
      << lines[0];
  EXPECT_TRUE(lines[1].rfind("2  20", 0) == 0) << lines[1];

  // A page at a time, and the next page.
  r = Meshtune("records --limit 1" + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.rfind("1  ", 0) == 0) << r.out;
  EXPECT_EQ(r.err, "meshtune: more records follow: add --after 1\n");
  r = Meshtune("records --limit 1 --after 1 --json" + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  Record record;
  ASSERT_TRUE(ParsesAs(r.out, &record));
  EXPECT_EQ(record.id(), 2);
  EXPECT_EQ(r.err, "");
  r = Meshtune("records --json" + Db());  // one Record a line
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> json_lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(json_lines.size(), 2u) << r.out;
  for (size_t i = 0; i < json_lines.size(); ++i) {
    ASSERT_TRUE(ParsesAs(json_lines[i], &record));
    EXPECT_EQ(record.id(), static_cast<int64_t>(i + 1));
  }

  // Filtered by workload (in its names), and one record by id.
  r = Meshtune("records" + kRenamed + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "Out[i,j] += X[i,l] * Y[l,j] (l=64,j=64,i=64, f32)  on x=2")) << r.out;
  r = Meshtune("records --id 2" + kRenamed + Db());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.rfind("record 2: Out[i,j] += X[i,l] * Y[l,j]", 0) == 0) << r.out;
  r = Meshtune("records --id 7" + Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "meshtune: no tuning record with id 7\n");
  r = Meshtune("records --limit 0" + Db());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: --limit 0 is out of range: 1 to 1000\n");
}

TEST_F(ServiceCliTest, TuneWithoutDatabaseStoresNothing) {
  const CliRun r = Meshtune("tune" + kMatmul + " --model-only --json --no-db" + kModel);
  ASSERT_EQ(r.status, 0) << r.err;
  TuneResult result;
  ASSERT_TRUE(ParsesAs(r.out, &result));
  EXPECT_FALSE(result.stored());
  EXPECT_EQ(result.record().id(), 0);
}

TEST_F(ServiceCliTest, BatchRunsEveryLineAndReportsABadOne) {
  const std::string batch = WriteFile(
      "three.jsonl",
      R"({"problem": {"expr": "C[m,n] += A[m,k] * B[k,n]", "extents": "m=64,n=64,k=64"}, "mesh": {"axes": "x=2"}, "model_only": true})"
      "\n"
      R"({"problem": {"expr": "y[i] += A[i,j] * x[j]", "extents": "i=64,j=64"}, "rank": 2, "model_only": true})"
      "\n"
      R"({"problem": {"expr": "y[i] += A[i,j] * x[j]", "extents": "i=64,j=64"}, "ranks": 2, "model_only": true})"
      "\n");
  CliRun r = Meshtune("batch " + batch + Db());
  EXPECT_EQ(r.status, 1);
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r.out;
  // Each line a meshtune.v1.BatchLine: its result the TuneResult that `tune --json` prints.
  BatchLine line;
  ASSERT_TRUE(ParsesAs(lines[0], &line));
  EXPECT_EQ(line.line(), 1);
  ASSERT_TRUE(line.has_result()) << lines[0];
  EXPECT_EQ(line.result().record().id(), 1);
  EXPECT_TRUE(line.result().stored());
  EXPECT_EQ(line.result().record().mesh(), "x=2");
  EXPECT_TRUE(Has(line.result().record().trace().text(), "distribute(")) << lines[0];
  EXPECT_EQ(lines[0].rfind("{\"line\":1,\"result\":{\"record\":{\"id\":\"1\",", 0), 0u) << lines[0];
  ASSERT_TRUE(ParsesAs(lines[1], &line));
  EXPECT_EQ(line.line(), 2);
  EXPECT_EQ(line.error(), "not a meshtune.v1.TuneRequest in JSON: rank: Cannot find field.");
  EXPECT_EQ(
      lines[1],
      "{\"line\":2,\"error\":\"not a meshtune.v1.TuneRequest in JSON: rank: Cannot find field.\"}");
  ASSERT_TRUE(ParsesAs(lines[2], &line));
  EXPECT_EQ(line.line(), 3);
  ASSERT_TRUE(line.has_result()) << lines[2];
  EXPECT_EQ(line.result().record().id(), 2);
  // The same request as `tune --json` (no database): the same winner, the same message.
  const CliRun tuned = Meshtune(
      "tune --expr 'y[i] += A[i,j] * x[j]' --extents i=64,j=64 --ranks 2 --model-only "
      "--json --no-db");
  ASSERT_EQ(tuned.status, 0) << tuned.err;
  TuneResult alone;
  ASSERT_TRUE(ParsesAs(tuned.out, &alone));
  EXPECT_EQ(alone.record().trace().text(), line.result().record().trace().text());
  EXPECT_EQ(alone.record().mesh(), line.result().record().mesh());
  EXPECT_EQ(alone.record().predicted_s(), line.result().record().predicted_s());
  EXPECT_EQ(alone.costed(), line.result().costed());
  EXPECT_TRUE(Has(r.err, "meshtune: 1 of 3 requests failed\n")) << r.err;
  // The batch's winners are records like any tune's.
  EXPECT_EQ(Meshtune("lookup" + kRenamed + Db()).status, 0);

  // Comments and blank lines are skipped (line numbers count them); a failing tune is an
  // error line too; a batch without failures exits 0.
  const std::string more = WriteFile(
      "more.jsonl",
      "# a comment\n\n"
      R"({"problem": {"expr": "y[i] += A[i,j] * x[j]", "extents": "i=64,j=-4"}, "ranks": 2})"
      "\n");
  r = Meshtune("batch " + more + Db());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "{\"line\":3,\"error\":\"extents column 8: extent of j must be positive, got -4\"}\n");
  const std::string good = WriteFile(
      "good.jsonl",
      "# one\n"
      R"({"problem": {"expr": "y[i] += A[i,j] * x[j]", "extents": "i=64,j=64"}, "ranks": 2, "model_only": true})"
      "\n");
  r = Meshtune("batch " + good + Db());
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(ParsesAs(r.out, &line));
  EXPECT_EQ(line.line(), 2);
  EXPECT_TRUE(line.has_result()) << r.out;
  r = Meshtune("batch " + TmpDir() + "/nosuch.jsonl" + Db());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "meshtune: cannot read batch file '" + TmpDir() +
                       "/nosuch.jsonl': No such file or directory\n");
}

TEST_F(ServiceCliTest, ServerAnswersAsTheInProcessEngine) {
  TuneMatmul();
  Daemon daemon(db_);
  ASSERT_FALSE(daemon.address().empty()) << daemon.log();
  const std::string server = " --server " + daemon.address();
  for (const std::string& command : std::vector<std::string>{
           "lookup" + kMatmul, "lookup --json" + kRenamed, "lookup" + kRenamed, "records",
           "records --json", "records --id 1" + kRenamed,
           "lookup --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=32 --mesh x=2",
           "lookup --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=-4 --mesh x=2"}) {
    const CliRun local = Meshtune(command + Db());
    const CliRun remote = Meshtune(command + server);
    EXPECT_EQ(remote.status, local.status) << command << "\n" << remote.err;
    EXPECT_EQ(remote.out, local.out) << command;
    EXPECT_EQ(remote.err, local.err) << command;
  }
  // A tune through the daemon is stored in its database.
  CliRun r = Meshtune(
      "tune --expr 'y[i] += A[i,j] * x[j]' --extents i=64,j=64 --ranks 2 --model-only --json" +
      server);
  ASSERT_EQ(r.status, 0) << r.err;
  TuneResult result;
  ASSERT_TRUE(ParsesAs(r.out, &result));
  EXPECT_TRUE(result.stored());
  EXPECT_EQ(result.record().id(), 2) << r.out;
  // The daemon has no profile either: its warning reaches the caller as the engine's would.
  EXPECT_TRUE(
      r.err.rfind("meshtune: no hardware profile \"default\": using built-in machine numbers", 0) ==
      0)
      << r.err;
  r = Meshtune("lookup --expr 'v[a] += M[a,b] * u[b]' --extents a=64,b=64 --ranks 2" + Db());
  EXPECT_EQ(r.status, 0) << r.err;
  // Flags only an in-process tune can apply.
  r = Meshtune("tune" + kMatmul + " --model-only" + kModel + server);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "--alpha excludes --server\nRun with --help for more information.\n");
}

// A program of several statements through the daemon: its Tune and Explain answer as the
// engine in this process does (the same schedules, the same moves), and a bad program is
// refused with the same message.
TEST_F(ServiceCliTest, ProgramsThroughTheServerAsInProcess) {
  Daemon daemon(db_);
  ASSERT_FALSE(daemon.address().empty()) << daemon.log();
  const std::string server = " --server " + daemon.address();
  const std::string program =
      " --expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]' --extents "
      "b=32,d=16,f=64,e=16 --mesh x=2";
  const CliRun local = Meshtune("tune" + program + " --model-only --json --no-db");
  const CliRun remote = Meshtune("tune" + program + " --model-only --json" + server);
  ASSERT_EQ(local.status, 0) << local.err;
  ASSERT_EQ(remote.status, 0) << remote.err;
  TuneResult a, b;
  ASSERT_TRUE(ParsesAs(local.out, &a));
  ASSERT_TRUE(ParsesAs(remote.out, &b));
  ASSERT_EQ(a.program().best().statements_size(), 2);
  ASSERT_EQ(b.program().best().statements_size(), 2);
  std::string traces;
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(b.program().best().statements(s).trace(), a.program().best().statements(s).trace());
    traces += (s > 0 ? "---\n" : "") + a.program().best().statements(s).trace();
  }
  EXPECT_EQ(b.program().best().moves_size(), a.program().best().moves_size());
  EXPECT_EQ(b.program().checked(), "simulated");
  std::ofstream(TmpDir() + "/program.trace") << traces;
  const std::string explain = "explain" + program + " --trace " + TmpDir() + "/program.trace";
  const CliRun here = Meshtune(explain);
  const CliRun there = Meshtune(explain + server);
  EXPECT_EQ(here.status, 0) << here.err;
  EXPECT_EQ(there.out, here.out);
  EXPECT_TRUE(Has(here.out, "== statement 2: Y[b,e] = H[b,f] * W2[f,e]")) << here.out;
  const std::string bad =
      "tune --expr 'H[b,f] = X[b,d] * W1[d,f]; H[b,f] = X[b,d] * W1[d,f]' --extents "
      "b=4,d=4,f=4 --mesh x=2 --model-only";
  const CliRun bad_here = Meshtune(bad + " --no-db");
  const CliRun bad_there = Meshtune(bad + server);
  EXPECT_EQ(bad_here.status, 2);
  EXPECT_EQ(bad_there.status, 2);
  EXPECT_EQ(bad_here.err, "meshtune: tensor H is written by statements 1 and 2\n");
  EXPECT_EQ(bad_there.err, bad_here.err);
}

TEST_F(ServiceCliTest, ServeRunsMeshtunedWithItsFlags) {
  CliRun r = Meshtune("serve --help");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "meshtuned: the meshtune gRPC daemon")) << r.out;
  r = Meshtune("serve --log-level loud");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "--log-level: 'loud' is not one of trace, debug, info, warn, error, critical, off\n"
            "Run with --help for more information.\n");
}

TEST_F(ServiceCliTest, UnreachableServer) {
  const std::string prefix =
      "meshtune: cannot reach meshtuned at 127.0.0.1:1: failed to connect to all addresses";
  for (const std::string& command :
       std::vector<std::string>{"lookup" + kMatmul, "records", "tune" + kMatmul + " --model-only",
                                "explain" + kMatmul + " --trace /dev/null"}) {
    const CliRun r = Meshtune(command + " --server 127.0.0.1:1");
    EXPECT_EQ(r.status, 1) << command << "\n" << r.err;
    EXPECT_EQ(r.out, "") << command;
    EXPECT_TRUE(r.err.rfind(prefix, 0) == 0) << command << "\n" << r.err;
  }
}

// SELECT's single text or integer cell of `sql` on the database file `path`, as text.
std::string QueryOne(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out = "<open failed>";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    out = "<no row>";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

TEST_F(ServiceCliTest, KillNineMidBatchLosesNoCommittedRecord) {
  Daemon daemon(db_);
  ASSERT_FALSE(daemon.address().empty()) << daemon.log();
  std::string lines;
  for (int i = 0; i < 12; ++i) {
    const int m = 32 * (1 + i % 4), n = 32 * (1 + i / 4);
    lines += "{\"problem\": {\"expr\": \"C[m,n] += A[m,k] * B[k,n]\", \"extents\": \"m=" +
             std::to_string(m) + ",n=" + std::to_string(n) +
             ",k=64\"}, \"ranks\": 4, \"model_only\": true, \"max_evaluations\": 60}\n";
  }
  const std::string file = WriteFile("batch.jsonl", lines);
  FILE* batch = popen(
      ("cli/meshtune batch --server " + daemon.address() + " " + file + " 2>/dev/null").c_str(),
      "r");
  ASSERT_NE(batch, nullptr);
  std::vector<std::string> ids;  // records the batch was told are stored
  int seen = 0, not_sent = 0;
  char buf[1 << 16];
  while (fgets(buf, sizeof buf, batch) != nullptr) {
    BatchLine line;
    ++seen;
    EXPECT_TRUE(ParsesAs(buf, &line));
    not_sent += line.error().rfind("not sent: ", 0) == 0;
    if (line.has_result() && line.result().stored())
      ids.push_back(std::to_string(line.result().record().id()));
    if (ids.size() == 3) daemon.Kill9();  // in the middle: 9 lines to go
  }
  const int status = pclose(batch);
  EXPECT_EQ(WEXITSTATUS(status), 1);  // the daemon went away mid-batch
  EXPECT_EQ(seen, 12);                // a line for every request: the unsent ones say so
  EXPECT_GE(not_sent, 1);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(QueryOne(db_, "PRAGMA integrity_check"), "ok");
  for (const std::string& id : ids) {
    EXPECT_EQ(QueryOne(db_, "SELECT COUNT(*) FROM records WHERE id = " + id), "1")
        << "record " << id;
  }
  // A new daemon on the same file serves them.
  Daemon again(db_);
  ASSERT_FALSE(again.address().empty()) << again.log();
  const CliRun r = Meshtune("records --server " + again.address());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
}

}  // namespace
