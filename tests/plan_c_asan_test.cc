// Memory safety of the plan APIs' default contract (meshtune/meshtune.h, meshtune/plan.h):
// an application that sizes each shard's array by the extents meshtune_plan_shard returns,
// and nothing more, runs ragged shapes on 3, 5 and 7 ranks — the blocks do not divide, so
// the schedule's storage is larger than the extents on some rank — and every case verifies
// against the application's own serial reference, with no sanitizer report and no fault.
// Both applications are built with AddressSanitizer and their arrays end at a PROT_NONE page
// (tests/guarded_array.h: a write past them faults even from uninstrumented library code):
//   tests/plan_c_extents_app.c   C: Execute of GEMMs, a transposed GEMM, a matrix-vector
//                                product and a program of two statements, f32 and f64, the
//                                inputs' pages read-only; again with calloc'd arrays of the
//                                exact size, for ASan's redzones;
//   tests/plan_layouts_extents_app.cc   C++: Scatter, Gather and ExecuteInLayouts.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

// The output of `app` `mode` under mpirun on `ranks` ranks; its exit status into *status.
std::string RunApp(int ranks, const std::string& mode, int* status,
                   const std::string& app = "tests/plan_c_extents_app") {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  // Open MPI's allocations live to the end of the process: no leak report, only errors.
  setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  setenv("MESHTUNE_HOME", (dir + "/home").c_str(), 1);  // estimate: the built-in numbers
  const std::string out = dir + "/extents_app_out.txt";
  const std::string cmd = "timeout 120 mpirun -n " + std::to_string(ranks) + " --oversubscribe " +
                          app + " " + mode + " >" + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checks one run's output: every case verified, and at least one ragged shard in each
// (else the case would not test the contract).
void ExpectClean(const std::string& out, int status, int ranks, const std::string& how) {
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out.find("AddressSanitizer"), std::string::npos) << out;
  EXPECT_EQ(out.find("MISMATCH"), std::string::npos) << out;
  EXPECT_EQ(out.find("error"), std::string::npos) << out;
  EXPECT_NE(out.find("c extents app: 6 cases verified on " + std::to_string(ranks) + " ranks (" +
                     how + ")\n"),
            std::string::npos)
      << out;
  const std::regex ragged("verified, ragged shards ([0-9]+)\n");
  int cases = 0, ragged_cases = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), ragged); it != std::sregex_iterator();
       ++it) {
    ++cases;
    if (std::stoi((*it)[1]) > 0) ++ragged_cases;
  }
  EXPECT_EQ(cases, 6) << out;
  // Every case is ragged on 3 and 7 ranks; on 5, m=300, n=200, k=100 divides.
  EXPECT_GE(ragged_cases, 5) << out;
}

TEST(PlanCAsanTest, ExtentsSizedArraysRunCleanOnOddRankCountsWithGuardPages) {
  for (int ranks : {3, 5, 7}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    int status = 0;
    const std::string out = RunApp(ranks, "guard", &status);
    ExpectClean(out, status, ranks, "guard pages");
  }
}

TEST(PlanCAsanTest, ExtentsSizedArraysRunCleanOnOddRankCountsWithMalloc) {
  for (int ranks : {3, 5, 7}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    int status = 0;
    const std::string out = RunApp(ranks, "malloc", &status);
    ExpectClean(out, status, ranks, "malloc");
  }
}

TEST(PlanCAsanTest, ScatterGatherAndGivenLayoutsTouchOnlyWhatTheyWereGiven) {
  for (int ranks : {3, 5, 7}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    int status = 0;
    const std::string out = RunApp(ranks, "", &status, "tests/plan_layouts_extents_app");
    EXPECT_EQ(status, 0) << out;
    EXPECT_EQ(out.find("AddressSanitizer"), std::string::npos) << out;
    EXPECT_NE(out.find("layouts app: 6 checks verified on " + std::to_string(ranks) + " ranks\n"),
              std::string::npos)
        << out;
  }
}

}  // namespace
