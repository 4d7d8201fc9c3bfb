// meshtune's C++ API (meshtune/plan.h) in an MPI application (tests/plan_app.cc) on 1, 2
// and 4 ranks: plans from a wisdom file and from a model-only estimate compute a GEMM and a
// matrix-vector product on the application's data, verified against a serial reference;
// a wisdom file without the workload is NotFound with its message on every rank count.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
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
  for (int ranks : {1, 2, 4}) {
    for (const std::string mode :
         {"--mode wisdom --wisdom tests/plan_wisdom.jsonl", "--mode estimate"}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks, " + mode);
      const std::string out = RunMpi(ranks, mode, 0);
      EXPECT_NE(out.find("plan gemm: "), std::string::npos) << out;
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
  for (int ranks : {1, 2, 4}) {
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
    EXPECT_NE(reused.find(" (measured) verified\nplan matvec: "), std::string::npos) << reused;
    EXPECT_EQ(reused.find("error"), std::string::npos) << reused;
  }
}

// A mesh smaller than the job: its ranks compute, the others hold empty shards and return
// at once; Scatter and Gather skip them. Also in measure mode with smaller meshes allowed.
TEST(PlanApiTest, RanksBeyondASmallerMeshAreIdle) {
  const std::string out = RunMpi(4, "--mode estimate --mesh p=2", 0);
  EXPECT_NE(
      out.find(
          "plan gemm: p=2 (2 idle ranks) verified\nplan matvec: p=2 (2 idle ranks) verified\n"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("scatter/gather: verified\n"), std::string::npos) << out;
  const std::string measured = RunMpi(4, "--mode measure --allow-idle 1", 0);
  EXPECT_NE(measured.find("plan gemm: "), std::string::npos) << measured;
  EXPECT_NE(measured.find("scatter/gather: verified\n"), std::string::npos) << measured;
  EXPECT_EQ(measured.find("error"), std::string::npos) << measured;
  const std::string too_big = RunMpi(2, "--mode estimate --mesh x=2,y=2", 1);
  EXPECT_NE(too_big.find("plan gemm: rank 0: error: the schedule's mesh x=2,y=2 has 4 ranks but "
                         "the communicator has 2\n"),
            std::string::npos)
      << too_big;
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

}  // namespace
