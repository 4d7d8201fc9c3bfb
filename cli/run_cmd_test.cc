// `meshtune run` that did not verify: the RunResult on stdout says why in its `error`, and
// stderr says it too, on one line. Without MPI: the worker is missing, the launcher is a
// script, or every rank runs in this process (--simulate).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/test_util.h"

namespace meshtune::cli {
namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

// `meshtune run` of SUMMA on x=2,y=2 with `extra` flags.
CliRun RunSumma(const std::string& extra) {
  const std::string trace = TmpDir() + "/summa.trace";
  std::ofstream(trace) << "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
                          "divide(k, ko, ki, 2)\n"
                          "reorder(mo, no, ko, mi, ni, ki)\n"
                          "shard(A, m@x, k@y)\n"
                          "shard(B, k@x, n@y)\n"
                          "shard(C, m@x, n@y)\n"
                          "communicate(A, ko)\n"
                          "communicate(B, ko)\n"
                          "tensorize([mi, ni, ki], matmul)\n";
  return Meshtune(
      "run --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=16,n=8,k=8 --mesh x=2,y=2 "
      "--trace " +
      trace + " --reps 1 " + extra);
}

TEST(RunCmdTest, AMissingWorkerIsNamedOnStdoutAndStderr) {
  const CliRun r = RunSumma("--worker /nonexistent");
  EXPECT_EQ(r.status, 1);
  const std::string why =
      "cannot find the worker binary meshtune_worker (looked for '/nonexistent'); set "
      "MESHTUNE_WORKER";
  EXPECT_EQ(r.out, "verified   no (measured under MPI)\nerror      " + why + "\n");
  EXPECT_EQ(r.err, "meshtune: " + why + "\n");
}

TEST(RunCmdTest, ALauncherAccountOfManyLinesIsOneLineOnStderr) {
  const std::string launcher = TmpDir() + "/launcher.sh";
  std::ofstream(launcher) << "#!/bin/sh\necho 'first line' >&2\necho '  second line' >&2\nexit 3\n";
  ASSERT_EQ(std::system(("chmod +x " + launcher).c_str()), 0);
  const CliRun r = RunSumma("--json --launcher " + launcher);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(R"("error":"the job failed (exit status 3) without a result: first line\n)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err,
            "meshtune: the job failed (exit status 3) without a result: first line second line\n");
}

TEST(RunCmdTest, AWrongSimulatedAnswerIsNamedOnStderr) {
  const CliRun r = RunSumma("--simulate --inject-fault wrong");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out.rfind("verified   no (simulated", 0), 0u) << r.out;
  EXPECT_EQ(r.err.rfind("meshtune: rank (x=0, y=0): C[", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("but the reference is"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(RunCmdTest, AVerifiedRunSaysNothingOnStderr) {
  const CliRun r = RunSumma("--simulate");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace meshtune::cli
