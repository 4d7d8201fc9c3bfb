// meshtune's C++ API (meshtune/plan.h) in an MPI application (tests/plan_app.cc) on 1, 2,
// 3 and 4 ranks (on 3, blocks that do not divide: shards allocated at the full block, more
// than the extents the plan needs, filled, scattered and gathered at the layout's strides):
// plans from a wisdom file and from a model-only estimate compute a GEMM and a matrix-vector
// product on the application's data, verified against a serial reference; a wisdom file
// without the workload is NotFound with its message on every rank count. Plans from wisdom
// run the record's program (engine/wisdom.h); one whose digest does not match, or that was
// altered, is not trusted: the trace is lowered, with the same answer; a program field that
// is not base64 makes the line malformed, a clear error.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace {

// The output of `args` under mpirun on `ranks` ranks, whose exit status must be `status`.
std::string RunMpi(int ranks, const std::string& args, int status,
                   const std::string& app = "tests/plan_app") {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  setenv("MESHTUNE_HOME", (dir + "/home").c_str(), 1);  // estimate: the built-in numbers
  const std::string out = dir + "/plan_out.txt";
  const std::string cmd = "timeout 120 mpirun -n " + std::to_string(ranks) + " --oversubscribe " +
                          app + " " + args + " >" + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, status) << cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PlanApiTest, WisdomAndEstimatePlansComputeOnTheApplicationsData) {
  for (int ranks : {1, 2, 3, 4}) {
    for (const std::string mode :
         {"--mode wisdom --wisdom tests/plan_wisdom.jsonl", "--mode estimate"}) {
      if (ranks == 3 && mode != "--mode estimate") continue;  // the file holds 1, 2, 4 ranks
      SCOPED_TRACE(std::to_string(ranks) + " ranks, " + mode);
      const std::string out = RunMpi(ranks, mode, 0);
      EXPECT_NE(out.find("plan gemm: "), std::string::npos) << out;
      // From wisdom, every rank runs the record's program (no isl); an estimate lowers.
      const std::string source =
          mode == "--mode estimate" ? "trace lowered" : "the wisdom record's program";
      EXPECT_NE(out.find("plan gemm: " + source + "\n"), std::string::npos) << out;
      EXPECT_NE(out.find("plan matvec: " + source + "\n"), std::string::npos) << out;
      EXPECT_NE(out.find(" verified\nplan matvec: "), std::string::npos) << out;
      EXPECT_NE(out.find("scatter/gather: verified\n"), std::string::npos) << out;
      EXPECT_EQ(out.find("error"), std::string::npos) << out;
    }
  }
}

// Measure mode: the candidates run on the application's own ranks (no mpirun inside), the
// winner is verified and measured, and it lands in the wisdom file, from which a plan in
// wisdom mode then computes the same statements.
TEST(PlanApiTest, MeasurePlansTuneOnTheApplicationsRanksAndWriteWisdom) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  for (int ranks : {1, 2, 3, 4}) {
    SCOPED_TRACE(ranks);
    const std::string wisdom =
        std::string(tmp ? tmp : "/tmp") + "/measured" + std::to_string(ranks) + ".jsonl";
    std::remove(wisdom.c_str());
    const std::string measured = RunMpi(ranks, "--mode measure --wisdom " + wisdom, 0);
    EXPECT_NE(measured.find(" (measured) verified\nplan matvec: "), std::string::npos) << measured;
    EXPECT_NE(measured.find("scatter/gather: verified\n"), std::string::npos) << measured;
    std::ifstream in(wisdom);
    std::stringstream lines;
    lines << in.rdbuf();
    EXPECT_NE(lines.str().find("\"verified\":true"), std::string::npos) << lines.str();
    EXPECT_NE(lines.str().find("\"measured_s\":"), std::string::npos) << lines.str();
    const std::string reused = RunMpi(ranks, "--mode wisdom --wisdom " + wisdom, 0);
    EXPECT_NE(reused.find("plan gemm: the wisdom record's program\n"), std::string::npos) << reused;
    EXPECT_NE(reused.find(" (measured) verified\nplan matvec: "), std::string::npos) << reused;
    EXPECT_EQ(reused.find("error"), std::string::npos) << reused;
  }
}

// A mesh smaller than the job: its ranks compute, the others hold empty shards and return
// at once; Scatter and Gather skip them. Also in measure mode with smaller meshes allowed.
TEST(PlanApiTest, RanksBeyondASmallerMeshAreIdle) {
  for (const int active : {2, 3}) {  // p=3: blocks of 11, 11 and 10 rows, short last blocks
    const std::string mesh = "p=" + std::to_string(active);
    const std::string idle = " (" + std::to_string(4 - active) + " idle ranks) verified\n";
    const std::string out = RunMpi(4, "--mode estimate --mesh " + mesh, 0);
    EXPECT_NE(out.find("plan gemm: " + mesh + idle), std::string::npos) << out;
    EXPECT_NE(out.find("plan matvec: " + mesh + idle), std::string::npos) << out;
    EXPECT_NE(out.find("scatter/gather: verified\n"), std::string::npos) << out;
  }
  const std::string measured = RunMpi(4, "--mode measure --allow-idle 1", 0);
  EXPECT_NE(measured.find("plan gemm: "), std::string::npos) << measured;
  EXPECT_NE(measured.find("scatter/gather: verified\n"), std::string::npos) << measured;
  EXPECT_EQ(measured.find("error"), std::string::npos) << measured;
  for (const std::string mode :
       {"estimate", "measure", "wisdom --wisdom tests/plan_wisdom.jsonl"}) {
    const std::string too_big = RunMpi(2, "--mode " + mode + " --mesh x=2,y=2", 1);
    EXPECT_NE(too_big.find("plan gemm: rank 0: error: the mesh x=2,y=2 has 4 ranks but the "
                           "communicator has 2\n"),
              std::string::npos)
        << too_big;
  }
}

// A schedule whose transfer buffers a rank cannot allocate is a clear error on every rank
// (a model-only estimate, and measure mode, whose candidates are all too big to run), not a
// crash. It needs the kernel to refuse an allocation beyond the machine's memory
// (vm.overcommit_memory 0 or 2, Debian's default).
TEST(PlanApiTest, TransferBuffersThatDoNotFitAreAnError) {
  std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  overcommit >> mode;
  if (mode == 1) GTEST_SKIP() << "vm.overcommit_memory is 1: every allocation succeeds";
  for (const std::string mode_flag : {"estimate", "measure"}) {
    const std::string out =
        RunMpi(2, "--mode " + mode_flag + " --only-plan-gemm m=200000,n=200000,k=200000", 1);
    EXPECT_NE(out.find("plan: error: rank 0: cannot allocate the schedule's transfer buffers on "
                       "this rank ("),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("bad_alloc"), std::string::npos) << out;
  }
}

// The C API (meshtune/meshtune.h) from a C program, from the same wisdom file.
TEST(PlanApiTest, TheCApiPlansAndExecutesFromWisdom) {
  for (int ranks : {1, 2, 4}) {
    SCOPED_TRACE(ranks);
    const std::string out = RunMpi(ranks, "tests/plan_wisdom.jsonl", 0, "tests/plan_c_app");
    EXPECT_NE(out.find("bad mode: mode must be MESHTUNE_WISDOM, MESHTUNE_ESTIMATE or "
                       "MESHTUNE_MEASURE\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find(" verified\n"), std::string::npos) << out;
  }
}

// Blocks that do not divide: the C API's estimate for m=300, n=200, k=100 on 3 ranks runs
// on shards the application allocates at their storage, having opted in to provide it
// (meshtune_plan_provide_storage), filled where their (clipped) extents say, and C is
// checked against a serial reference on every rank that holds it. (The default contract,
// arrays of the extents alone, is //tests:plan_c_asan_test's.)
TEST(PlanApiTest, TheCApiPlansShapesWhoseBlocksDoNotDivide) {
  const std::string out = RunMpi(3, "", 0, "tests/plan_c_ragged_app");
  EXPECT_NE(out.find("c ragged plan "), std::string::npos) << out;
  EXPECT_NE(out.find(" verified (held: "), std::string::npos) << out;
}

TEST(PlanApiTest, AWorkloadMissingFromTheWisdomFileIsNotFound) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string empty = std::string(tmp ? tmp : "/tmp") + "/empty.jsonl";
  std::ofstream(empty) << "# no records\n";
  const std::string out = RunMpi(2, "--mode wisdom --wisdom " + empty, 1);
  EXPECT_NE(out.find("plan gemm: rank 0: error: no tuning record for C[m,n] += A[m,k] * B[k,n] "
                     "(m=32,n=24,k=16, f32) on ranks=2 with profile default in wisdom file " +
                     empty + "\n"),
            std::string::npos)
      << out;
}

// tests/plan_wisdom.jsonl with `edit` applied to each line, written to NAME in the test's
// temporary directory; its path.
std::string EditedWisdom(const std::string& name,
                         const std::function<void(std::string* line)>& edit) {
  std::ifstream in("tests/plan_wisdom.jsonl");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::ofstream out(path);
  for (std::string line; std::getline(in, line);) {
    edit(&line);
    out << line << "\n";
  }
  return path;
}

// Changes the character `at` characters into the value of `field` ("program_digest") to
// another character of the same alphabet.
void Alter(std::string* line, const std::string& field, size_t at) {
  const size_t start = line->find("\"" + field + "\":\"");
  ASSERT_NE(start, std::string::npos) << *line;
  char& c = (*line)[start + field.size() + 4 + at];
  c = c == 'a' ? 'b' : 'a';
}

TEST(PlanApiTest, AProgramWhoseDigestDoesNotMatchIsNotTrustedAndTheTraceIsLowered) {
  const std::string digest =
      EditedWisdom("digest.jsonl", [](std::string* l) { Alter(l, "program_digest", 10); });
  const std::string program =
      EditedWisdom("program.jsonl", [](std::string* l) { Alter(l, "program", 40); });
  const std::string none = EditedWisdom(
      "none.jsonl", [](std::string* l) { *l = l->substr(0, l->find(",\"program\":\"")) + "}"; });
  for (const std::string& wisdom : {digest, program, none}) {
    for (int ranks : {1, 4}) {
      SCOPED_TRACE(wisdom + " on " + std::to_string(ranks) + " ranks");
      const std::string out = RunMpi(ranks, "--mode wisdom --wisdom " + wisdom, 0);
      EXPECT_NE(out.find("plan gemm: trace lowered\n"), std::string::npos) << out;
      EXPECT_NE(out.find("plan matvec: trace lowered\n"), std::string::npos) << out;
      EXPECT_NE(out.find(" verified\nplan matvec: "), std::string::npos) << out;
      EXPECT_EQ(out.find("error"), std::string::npos) << out;
    }
  }
}

TEST(PlanApiTest, AProgramFieldThatIsNotBase64IsAClearError) {
  const std::string wisdom = EditedWisdom("bad.jsonl", [](std::string* l) {
    const size_t at = l->find("\"program\":\"");
    if (at != std::string::npos) l->replace(at + 11, 4, "!!!!");
  });
  const std::string out = RunMpi(2, "--mode wisdom --wisdom " + wisdom, 1);
  const size_t at = out.find("plan gemm: rank 0: error: " + wisdom + ": wisdom line ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  EXPECT_NE(line.find(": (program): invalid value \"!!!!"), std::string::npos) << line;
  // The value is quoted short, not kilobytes of it (the file's path, whose length depends on
  // where the test runs, not counted).
  EXPECT_LT(line.size() - wisdom.size(), 400u) << line;
}

}  // namespace
