// The emitted C++ of SUMMA, and of the prefetched SUMMA and GEMM-ReduceScatter, builds
// (Bazel builds it from `meshtune codegen` output) and computes the same output checksum as
// the executor, both verified, under mpirun on 4 ranks; both print one meshtune.v1.RunResult
// line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "proto/meshtune.pb.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::ParsesAs;

// The output of `program_and_args` under mpirun on `ranks` ranks, whose exit status must
// be `status`.
std::string RunMpi(const std::string& program_and_args, int ranks = 4, int status = 0) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string out = std::string(tmp ? tmp : "/tmp") + "/mpi_out.txt";
  const std::string cmd = "timeout 120 mpirun -n " + std::to_string(ranks) + " --oversubscribe " +
                          program_and_args + " >" + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, status) << cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `meshtune run ARGS --json`: the executor's run of a trace under mpirun (the CLI lowers and
// validates it, the worker runs the Program); its output.
std::string RunExecutor(const std::string& args) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string out = std::string(tmp ? tmp : "/tmp") + "/executor_out.txt";
  const std::string cmd = "cli/meshtune run " + args + " --json --timeout 120 >" + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The RunResult of the last line of `out` that starts with '{' (mpirun may print more).
meshtune::v1::RunResult Result(const std::string& out) {
  std::string json;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') json = line;
  }
  meshtune::v1::RunResult r;
  EXPECT_TRUE(ParsesAs(json, &r)) << out;
  return r;
}

TEST(EmittedCppTest, SummaMatchesTheExecutor) {
  const std::string emitted = RunMpi("tests/summa_emitted --reps 1 --seed 7");
  const std::string executed = RunExecutor(
      "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=24,k=16 "
      "--mesh x=2,y=2 --trace tests/testdata/summa_2x2.trace --reps 1 --seed 7");
  const meshtune::v1::RunResult from_emitted = Result(emitted), from_executor = Result(executed);
  EXPECT_TRUE(from_emitted.verified()) << emitted;
  EXPECT_TRUE(from_executor.verified()) << executed;
  EXPECT_EQ(from_emitted.error(), "");
  EXPECT_EQ(from_emitted.seconds_size(), 1);
  EXPECT_EQ(from_emitted.checksum(), from_executor.checksum()) << emitted << "\n" << executed;
  EXPECT_NE(from_emitted.checksum(), 0.0);
}

// From given layouts: the emitted program starts from A in cyclic(5,3), B on rank 0 and C
// in cyclic(4,4), and verifies C in its layout with the checksum of the worker's run from
// the same layouts.
TEST(EmittedCppTest, SummaFromGivenLayoutsMatchesTheExecutor) {
  const std::string emitted = RunMpi("tests/summa_layouts_emitted --reps 1 --seed 7");
  const std::string executed = RunExecutor(
      "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=24,k=16 "
      "--mesh x=2,y=2 --trace tests/testdata/summa_2x2.trace --layout 'A=cyclic(5,3)' "
      "--layout B=root --layout 'C=cyclic(4,4)' --reps 1 --seed 7");
  const std::string blocks = RunExecutor(
      "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=24,k=16 "
      "--mesh x=2,y=2 --trace tests/testdata/summa_2x2.trace --reps 1 --seed 7");
  const meshtune::v1::RunResult from_emitted = Result(emitted), from_executor = Result(executed);
  EXPECT_TRUE(from_emitted.verified()) << emitted;
  EXPECT_TRUE(from_executor.verified()) << executed;
  EXPECT_EQ(from_emitted.checksum(), from_executor.checksum()) << emitted << "\n" << executed;
  // The same C, whichever layout holds it: every element once (sums in another order).
  EXPECT_NEAR(from_emitted.checksum(), Result(blocks).checksum(),
              1e-4 * std::abs(from_emitted.checksum()));
  // The redistributions send more than SUMMA's broadcasts alone.
  EXPECT_GT(from_emitted.bytes_sent_max(), Result(blocks).bytes_sent_max());
}

// The emitted --main `binary` on `ranks` ranks and `meshtune run run_args` both verify,
// with the same checksum and the same bytes sent.
void ExpectEmittedMatchesExecutor(const std::string& binary, const std::string& run_args,
                                  int ranks) {
  SCOPED_TRACE(binary);
  const std::string emitted = RunMpi(binary + " --reps 2 --seed 5", ranks);
  const std::string executed = RunExecutor(run_args + " --reps 2 --seed 5");
  const meshtune::v1::RunResult from_emitted = Result(emitted), from_executor = Result(executed);
  EXPECT_TRUE(from_emitted.verified()) << emitted;
  EXPECT_TRUE(from_executor.verified()) << executed;
  EXPECT_EQ(from_emitted.checksum(), from_executor.checksum()) << emitted << "\n" << executed;
  EXPECT_EQ(from_emitted.bytes_sent_max(), from_executor.bytes_sent_max());
}

// The prefetched examples: the emitted loops call rt->Async and rt->Wait around the
// transfers and the reduction, and compute what the executor computes.
TEST(EmittedCppTest, PrefetchedSummaAndReduceScatterMatchTheExecutor) {
  struct Case {
    std::string binary, run_args;
  };
  for (const Case& c : std::vector<Case>{
           {"tests/summa_prefetch_emitted",
            "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=24,k=16 --mesh x=2,y=2 "
            "--trace examples/summa_prefetch.trace"},
           {"tests/gemm_reducescatter_emitted",
            "--expr 'C[m,n] = A[m,k] * B[k,n]' --extents m=32,k=32,n=16 --mesh x=4 "
            "--trace examples/gemm_reducescatter.trace"},
       }) {
    ExpectEmittedMatchesExecutor(c.binary, c.run_args, 4);
  }
}

// The wider space's families, emitted: 2.5D Cannon on 2x2x2 (8 ranks), 2.5D with copies
// (C reduced onto one layer; the checksum counts that layer's shards alone), PUMMA in
// steps of 2 on 2x2, an all-to-all on x=4 and a ring reduce-scatter on x=4 compute what the
// executor computes.
TEST(EmittedCppTest, TwoAndAHalfDCannonPummaInStepsAndAllToAllMatchTheExecutor) {
  struct Case {
    std::string binary, run_args;
    int ranks;
  };
  for (const Case& c : std::vector<Case>{
           {"tests/cannon_25d_emitted",
            "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=16,n=8,k=12 --mesh x=2,y=2,z=2 "
            "--trace examples/cannon_25d.trace",
            8},
           {"tests/summa_25d_copies_emitted",
            "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=10,n=6,k=20 --mesh x=2,y=2,z=2 "
            "--trace examples/summa_25d_copies.trace",
            8},
           {"tests/gemm_ring_emitted",
            "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=6,n=20,k=12 --mesh x=4 "
            "--trace examples/gemm_ring_reducescatter.trace",
            4},
           {"tests/pumma_steps_emitted",
            "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=10,n=6,k=12 --mesh x=2,y=2 "
            "--trace examples/pumma_steps.trace",
            4},
           {"tests/all_to_all_steps_emitted",
            "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=8,n=6,k=20 --mesh x=4 "
            "--trace examples/all_to_all_steps.trace",
            4},
       }) {
    ExpectEmittedMatchesExecutor(c.binary, c.run_args, c.ranks);
  }
}

// Callable kernels (codegen's default): an MPI application calls the kernel twice on its
// own shards, placed where the kernel's _shard function says, and checks them against a
// serial reference (tests/callable_kernel_app.cc): SUMMA (+=, the second call adds again)
// and the prefetched GEMM-ReduceScatter (=). On a communicator of the wrong size the kernel
// returns 1 with a message naming both sizes.
TEST(EmittedCppTest, CallableKernelsComputeOnTheApplicationsData) {
  // summa_root_kernel_app: the kernel generated with A and C on rank 0 and B on every rank
  // (--layout) takes the application's arrays in those layouts.
  for (const std::string app : {"tests/summa_kernel_app", "tests/reducescatter_kernel_app",
                                "tests/summa_root_kernel_app"}) {
    SCOPED_TRACE(app);
    const std::string out = RunMpi(app);
    EXPECT_NE(out.find("callable kernel: verified\n"), std::string::npos) << out;
    EXPECT_NE(out.find("C checked on 4 ranks\n"), std::string::npos) << out;
  }
  const std::string wrong = RunMpi("tests/summa_kernel_app", 2, 1);
  EXPECT_NE(wrong.find("summa_kernel: the communicator has 2 ranks; the schedule needs 4\n"),
            std::string::npos)
      << wrong;
  EXPECT_NE(wrong.find("kernel returned 1"), std::string::npos) << wrong;
}

// Split-k on x=4 (m=n=64, k=1024), C copied on every rank: the application reads C on every
// rank the header names, and every element is right there — on all four by default, on x=0
// alone with --result-on-layer, which the header and splitk_layer_kernel_holds say.
TEST(EmittedCppTest, ACopiedOutputIsRightOnEveryRankTheHeaderNames) {
  const std::string every = RunMpi("tests/splitk_kernel_app");
  EXPECT_NE(every.find("C checked on 4 ranks\ncallable kernel: verified\n"), std::string::npos)
      << every;
  EXPECT_NE(meshtune::testing::ReadFile("tests/splitk_kernel.h")
                .find("every copy of an input must hold the same values, and\n// every copy of C "
                      "holds the result after the call"),
            std::string::npos);
  const std::string layer = RunMpi("tests/splitk_layer_kernel_app");
  EXPECT_NE(layer.find("C checked on 1 ranks\ncallable kernel: verified\n"), std::string::npos)
      << layer;
  EXPECT_NE(meshtune::testing::ReadFile("tests/splitk_layer_kernel.h")
                .find("after the call only the ranks at x=0 hold C's\n// result (generated with "
                      "--result-on-layer; splitk_layer_kernel_holds says which)"),
            std::string::npos)
      << meshtune::testing::ReadFile("tests/splitk_layer_kernel.h");
}

}  // namespace
