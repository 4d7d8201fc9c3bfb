// Schedules run under mpirun through `meshtune run` and verify; faults become results.
// Small shapes on 2 to 9 ranks (oversubscribed on a 2-core machine). `run --json` prints a
// meshtune.v1.RunResult, parsed here by protobuf; plain `run` prints it as text.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "engine/prepare.h"
#include "proto/meshtune.pb.h"
#include "runtime/launch/launcher.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::ParsesAs;
using ::meshtune::testing::ReadFile;

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

struct Result {
  int status = -1;
  std::string out, err;
  meshtune::v1::RunResult run;  // parsed from `out` (with --json)
};

// `meshtune run --json` (`json` false: without --json) with the trace text written to a
// temporary file.
// Where the runs' job files go: every run of this test has it as TMPDIR, so a worker whose
// command line names it is one of ours.
std::string RunTmp() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/runs";
  std::filesystem::create_directories(dir);
  return dir;
}

Result MeshtuneRun(const std::string& expr, const std::string& extents, const std::string& mesh,
                   const std::string& trace, const std::string& extra = "", bool json = true) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  std::ofstream(dir + "/t.trace") << trace;
  const std::string cmd = "TMPDIR=" + RunTmp() + " cli/meshtune run --expr '" + expr +
                          "' --extents " + extents + " --mesh " + mesh + " --trace " + dir +
                          "/t.trace --reps 2 " + (json ? "--json " : "") +
                          (extra.find("--timeout") == std::string::npos ? "--timeout 60 " : "") +
                          extra + " >" + dir + "/out.txt 2>" + dir + "/err.txt";
  const int rc = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = ReadFile(dir + "/out.txt");
  r.err = ReadFile(dir + "/err.txt");
  if (json && !r.out.empty()) {
    EXPECT_TRUE(ParsesAs(r.out, &r.run));
  }
  return r;
}

void ExpectVerified(const Result& r) {
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(r.run.verified()) << r.out << r.err;
  EXPECT_EQ(r.run.error(), "") << r.out;
  EXPECT_EQ(r.run.checked(), "measured");
  // --reps 2: two samples, each a batch of repetitions (runtime/launch/repetitions.h), as measured.
  EXPECT_EQ(r.run.sample().n(), 2) << r.out;
  EXPECT_GE(r.run.sample().batch(), 1) << r.out;
  EXPECT_EQ(r.run.seconds_size(), 2 * r.run.sample().batch()) << r.out;
  EXPECT_GT(r.run.median_s(), 0);
  EXPECT_EQ(r.run.median_s(), r.run.sample().median_s());
  // The kernels' share: some time, never more than the repetitions took.
  EXPECT_GT(r.run.kernel_median_s(), 0) << r.out;
  EXPECT_LE(r.run.kernel_median_s(), r.run.median_s()) << r.out;
}

const std::string kMatmul = "C[m,n] += A[m,k] * B[k,n]";

std::string OnSquare(const std::string& file, int p) {
  return Replace(Replace(ReadFile("examples/" + file), "divide(k, ko, ki, 8)",
                         "divide(k, ko, ki, " + std::to_string(p) + ")"),
                 "%8", "%" + std::to_string(p));
}

TEST(MpiRunTest, SummaPummaCannonOn2x2And3x3) {
  for (int p : {2, 3}) {
    const std::string mesh = "x=" + std::to_string(p) + ",y=" + std::to_string(p);
    const std::string extents = "m=" + std::to_string(8 * p) + ",n=" + std::to_string(4 * p) +
                                ",k=" + std::to_string(6 * p);
    for (const char* f : {"summa.trace", "pumma.trace", "cannon.trace"}) {
      SCOPED_TRACE(std::string(f) + " on " + mesh);
      ExpectVerified(MeshtuneRun(kMatmul, extents, mesh, OnSquare(f, p)));
    }
  }
}

TEST(MpiRunTest, AllGatherGemmOn4And2) {
  for (int p : {4, 2}) {
    const std::string trace =
        Replace(ReadFile("examples/allgather_gemm.trace"), "divide(n, no, ni, 4)",
                "divide(n, no, ni, " + std::to_string(p) + ")");
    const std::string mesh = "x=" + std::to_string(p);
    ExpectVerified(MeshtuneRun("C[m,n] = A[k,m] * B[k,n]", "m=32,k=24,n=16", mesh, trace));
    ExpectVerified(
        MeshtuneRun("C[m,n] = A[k,m] * B[k,n]", "m=32,k=24,n=16", mesh,
                    Replace(trace, "communicate(B, no)", "communicate(B, no, rotate=[mo])")));
  }
}

// The prefetched examples (double-buffered transfers and reductions, runtime Async/Wait)
// under mpirun: SUMMA with both broadcasts prefetched on 2x2, the all-gather ring and
// GEMM-ReduceScatter with the output prefetched on 4 and 2 ranks.
TEST(MpiRunTest, PrefetchedSummaRingAndReduceScatter) {
  {
    SCOPED_TRACE("summa_prefetch on 2x2");
    ExpectVerified(
        MeshtuneRun(kMatmul, "m=16,n=8,k=12", "x=2,y=2", OnSquare("summa_prefetch.trace", 2)));
  }
  for (int p : {4, 2}) {
    const std::string divide = "divide(n, no, ni, " + std::to_string(p) + ")";
    const std::string mesh = "x=" + std::to_string(p);
    SCOPED_TRACE(mesh);
    ExpectVerified(MeshtuneRun("C[m,n] = A[k,m] * B[k,n]", "m=32,k=24,n=16", mesh,
                               Replace(ReadFile("examples/allgather_gemm_prefetch.trace"),
                                       "divide(n, no, ni, 4)", divide)));
    ExpectVerified(MeshtuneRun(
        "C[m,n] = A[m,k] * B[k,n]", "m=32,k=24,n=16", mesh,
        Replace(ReadFile("examples/gemm_reducescatter.trace"), "divide(n, no, ni, 4)", divide)));
  }
}

TEST(MpiRunTest, AllGatherOfRowAndColumnBlocks) {
  const std::string trace =
      "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\nshard(A, m@x, k@y)\n"
      "shard(B, k@x, n@y)\nshard(C, m@x, n@y)\ncommunicate(A, mi)\ncommunicate(B, mi)\n"
      "tensorize([mi, ni, k], matmul)\n";
  ExpectVerified(MeshtuneRun(kMatmul, "m=16,n=12,k=8", "x=2,y=2", trace));
  ExpectVerified(MeshtuneRun(kMatmul, "m=24,n=12,k=18", "x=3,y=3", trace));
}

TEST(MpiRunTest, SplitKReducesToTheOwners) {
  ExpectVerified(
      MeshtuneRun(kMatmul, "m=16,n=8,k=32", "x=4",
                  "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
                  "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n"));
}

TEST(MpiRunTest, ThreeDimensionalMatmulOn2x2x2) {
  ExpectVerified(
      MeshtuneRun(kMatmul, "m=16,n=8,k=12", "x=2,y=2,z=2",
                  "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\nshard(A, m@x, k@z)\n"
                  "shard(B, k@z, n@y)\nshard(C, m@x, n@y)\ncommunicate(C, ki)\n"
                  "tensorize([ki, mi, ni], contraction)\n"));
}

TEST(MpiRunTest, ThreeDimensionalMatmulWithoutCopies) {
  // Every tensor split over all three axes, one dim over two of them: A and B are gathered
  // along the axis that splits their rows further, C's partial sums reduce-scattered over z.
  ExpectVerified(
      MeshtuneRun(kMatmul, "m=16,n=8,k=12", "x=2,y=2,z=2",
                  "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\nshard(C, m@x, n@y, n@z)\n"
                  "shard(A, m@x, m@y, k@z)\nshard(B, k@z, k@x, n@y)\ncommunicate(C, ki)\n"
                  "communicate(A, ki)\ncommunicate(B, ki)\ntensorize([mi, ni, ki], matmul)\n"));
}

// The families the space holds with split_distributed (search/space.h), under mpirun on
// 2x2x2: Tesseract (rows over x and again over the depth z, B copied over z), 2.5D with
// steps (k over the layers, SUMMA steps inside each) and 2.5D Cannon (skewed and rotated
// inside each layer); extents that divide evenly and unevenly.
TEST(MpiRunTest, TesseractAndTwoAndAHalfDOn2x2x2) {
  for (const char* f : {"tesseract.trace", "summa_25d.trace", "cannon_25d.trace"}) {
    for (const char* extents : {"m=16,n=8,k=12", "m=20,n=6,k=16"}) {
      SCOPED_TRACE(std::string(f) + " at " + extents);
      ExpectVerified(
          MeshtuneRun(kMatmul, extents, "x=2,y=2,z=2", ReadFile(std::string("examples/") + f)));
    }
  }
}

// 2.5D with copies (examples/summa_25d_copies.trace) on 2x2x2: A and B broadcast from the
// layer z=0, SUMMA over each layer's half of k, C's partial sums all-reduced along z (every
// layer's copy holds the result, checked on every rank); also prefetched (the reduction of
// one step overlapping the next), uneven, with C given replicated, and with the result left
// on the layer z=0 (--result-on-layer: reduced onto it, which alone holds the result).
TEST(MpiRunTest, TwoAndAHalfDWithCopiesOnEveryCopyOrOneLayer) {
  const std::string trace = ReadFile("examples/summa_25d_copies.trace");
  const std::string prefetched =
      Replace(Replace(Replace(trace, "communicate(A, ko2)", "communicate(A, ko2, prefetch=1)"),
                      "communicate(B, ko2)", "communicate(B, ko2, prefetch=1)"),
              "communicate(C, mi)", "communicate(C, ko2, prefetch=1)");
  for (const char* extents : {"m=16,n=8,k=12", "m=10,n=6,k=20"}) {
    SCOPED_TRACE(extents);
    ExpectVerified(MeshtuneRun(kMatmul, extents, "x=2,y=2,z=2", trace));
    ExpectVerified(MeshtuneRun(kMatmul, extents, "x=2,y=2,z=2", prefetched));
    ExpectVerified(MeshtuneRun(kMatmul, extents, "x=2,y=2,z=2", trace, "--layout C=replicated"));
    ExpectVerified(MeshtuneRun(kMatmul, extents, "x=2,y=2,z=2", trace, "--result-on-layer"));
    ExpectVerified(MeshtuneRun(kMatmul, extents, "x=2,y=2,z=2", prefetched, "--result-on-layer"));
  }
}

// GEMM-ReduceScatter as a ring (examples/gemm_ring_reducescatter.trace) on x=4: each step's
// partial sums of one column block pass to the neighbour at x - 1. In C's block layout they
// end one step before their holder and take one more (4 messages of a block per rank); in
// the layout skewed by one they end on it (3). Even and uneven extents.
TEST(MpiRunTest, RingReduceScatterOn4) {
  const std::string ring = ReadFile("examples/gemm_ring_reducescatter.trace");
  const std::string skewed = Replace(ring, "shard(C, n@x)", "shard(C, n@(x+3)%4)");
  for (const auto& [extents, block_bytes] : std::vector<std::pair<std::string, int>>{
           {"m=8,n=16,k=8", 8 * 4 * 4}, {"m=6,n=20,k=12", 6 * 5 * 4}}) {
    SCOPED_TRACE(extents);
    const Result hop = MeshtuneRun(kMatmul, extents, "x=4", ring);
    ExpectVerified(hop);
    EXPECT_EQ(hop.run.bytes_sent_max(), 4 * block_bytes);
    const Result home = MeshtuneRun(kMatmul, extents, "x=4", skewed);
    ExpectVerified(home);
    EXPECT_EQ(home.run.bytes_sent_max(), 3 * block_bytes);
  }
}

// A rotation in steps of 2 (rank y runs (ko + 2y) mod 4) on 2x2, even and uneven extents.
TEST(MpiRunTest, PummaInStepsOfTwo) {
  for (const char* extents : {"m=8,n=8,k=16", "m=10,n=6,k=12"}) {
    SCOPED_TRACE(extents);
    ExpectVerified(
        MeshtuneRun(kMatmul, extents, "x=2,y=2", ReadFile("examples/pumma_steps.trace")));
  }
}

// All-to-all transfers: k's steps cut the blocks of A and B on x=4 (and, prefetched, the
// next step's pieces are fetched before the kernel); B's block at step ko lives on the row
// x = ko of 2x2, not in the reader's own group.
TEST(MpiRunTest, AllToAllTransfersOn4And2x2) {
  const std::string steps = ReadFile("examples/all_to_all_steps.trace");
  for (const char* extents : {"m=8,n=6,k=20", "m=4,n=10,k=12"}) {
    SCOPED_TRACE(extents);
    ExpectVerified(MeshtuneRun(kMatmul, extents, "x=4", steps));
    ExpectVerified(
        MeshtuneRun(kMatmul, extents, "x=4",
                    Replace(Replace(steps, "communicate(A, ko)", "communicate(A, ko, prefetch=1)"),
                            "communicate(B, ko)", "communicate(B, ko, prefetch=1)")));
  }
  ExpectVerified(
      MeshtuneRun(kMatmul, "m=8,n=6,k=12", "x=2,y=2",
                  "distribute([m], [mo], [mi], [y])\ndivide(k, ko, ki, 2)\n"
                  "reorder(mo, ko, mi, n, ki)\nshard(A, m@y)\nshard(B, k@x, n@y)\n"
                  "shard(C, m@y)\ncommunicate(B, ko)\ntensorize([mi, n, ki], matmul)\n"));
}

TEST(MpiRunTest, BatchedGemmMatrixVectorAndElementwiseSum) {
  ExpectVerified(
      MeshtuneRun("C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=4,m=8,n=6,k=10", "x=2",
                  "distribute([b], [bo], [bi], [x])\nreorder(bo, bi, m, n, k)\nshard(A, b@x)\n"
                  "shard(B, b@x)\nshard(C, b@x)\ntensorize([m, n, k], matmul)\n"));
  ExpectVerified(MeshtuneRun("y[i] += A[i,j] * x[j]", "i=32,j=16", "p=4",
                             "distribute([i], [io], [ii], [p])\nshard(A, i@p)\nshard(y, i@p)\n"
                             "tensorize([ii, j], contraction)\n"));
  ExpectVerified(MeshtuneRun(
      "C[i,j] = A[i,j] + B[i,j]", "i=8,j=12", "x=2,y=2",
      "distribute([i,j], [io,jo], [ii,ji], [x,y])\nshard(A, i@x, j@y)\nshard(B, i@x, j@y)\n"
      "shard(C, i@x, j@y)\ntensorize([ii, ji], add)\n"));
}

TEST(MpiRunTest, UntensorizedScalarLoopsVerify) {
  const std::string summa = OnSquare("summa.trace", 2);
  ExpectVerified(
      MeshtuneRun(kMatmul, "m=6,n=4,k=4", "x=2,y=2", summa.substr(0, summa.find("tensorize"))));
}

// Live (not zombie) worker processes of this test's runs (their job file is in RunTmp()).
int LiveWorkers() {
  int n = 0;
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    if (std::atoi(e->d_name) <= 0) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    std::string cmd = ReadFile(base + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    const std::string stat = ReadFile(base + "/stat");
    const size_t paren = stat.rfind(')');
    const bool zombie =
        paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
    if (!zombie && cmd.find("meshtune_worker") != std::string::npos &&
        cmd.find(RunTmp() + "/meshtune-run-") != std::string::npos) {
      ++n;
    }
  }
  closedir(proc);
  return n;
}

int LiveWorkersAfterAWhile() {
  for (int i = 0; i < 50 && LiveWorkers() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return LiveWorkers();
}

TEST(MpiRunTest, FaultsBecomeResultsAndLeaveNoProcess) {
  const std::string trace = OnSquare("summa.trace", 2);
  Result crash =
      MeshtuneRun(kMatmul, "m=16,n=8,k=8", "x=2,y=2", trace, "--inject-fault crash --seed 424201");
  EXPECT_EQ(crash.status, 1);
  EXPECT_FALSE(crash.run.verified()) << crash.out;
  EXPECT_NE(crash.run.error().find("exited on signal 6 (Aborted)"), std::string::npos) << crash.out;
  EXPECT_EQ(LiveWorkersAfterAWhile(), 0);

  Result hang = MeshtuneRun(kMatmul, "m=16,n=8,k=8", "x=2,y=2", trace,
                            "--inject-fault hang --seed 424202 --timeout 3");
  EXPECT_EQ(hang.status, 1);
  EXPECT_FALSE(hang.run.verified()) << hang.out;
  EXPECT_EQ(hang.run.error(), "timed out after 3 s; the job was killed") << hang.out;
  EXPECT_EQ(LiveWorkersAfterAWhile(), 0);

  Result wrong =
      MeshtuneRun(kMatmul, "m=16,n=8,k=8", "x=2,y=2", trace, "--inject-fault wrong --seed 424203");
  EXPECT_EQ(wrong.status, 1);
  EXPECT_FALSE(wrong.run.verified()) << wrong.out;
  EXPECT_EQ(wrong.run.error().rfind("rank (x=0, y=0): C[", 0), 0u) << wrong.out;
  EXPECT_NE(wrong.run.error().find("but the reference is"), std::string::npos) << wrong.out;
  EXPECT_EQ(LiveWorkersAfterAWhile(), 0);
}

// Without --json, `run` prints its RunResult as text; --simulate says so.
TEST(MpiRunTest, PlainRunPrintsText) {
  const std::string trace = OnSquare("summa.trace", 2);
  Result r = MeshtuneRun(kMatmul, "m=16,n=8,k=8", "x=2,y=2", trace, "", /*json=*/false);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("verified   yes (measured under MPI)\nmedian     ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" s of 2 samples of "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nsent       "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncopied     "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nkernels    "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nchecksum   "), std::string::npos) << r.out;

  r = MeshtuneRun(kMatmul, "m=16,n=8,k=8", "x=2,y=2", trace, "--simulate --inject-fault wrong",
                  /*json=*/false);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(
      r.out.rfind(
          "verified   no (simulated: every rank in this process, the times are the simulation's)\n"
          "error      rank (x=0, y=0): C[",
          0),
      0u)
      << r.out;

  // The same simulated run with --json: its RunResult says "simulated".
  r = MeshtuneRun(kMatmul, "m=16,n=8,k=8", "x=2,y=2", trace, "--simulate");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.run.verified()) << r.out;
  EXPECT_EQ(r.run.checked(), "simulated");
}

TEST(MpiRunTest, ACancelledRunIsKilledAndLeavesNoProcess) {
  meshtune::v1::ExplainRequest request;
  request.mutable_problem()->set_expr(kMatmul);
  request.mutable_problem()->set_extents("m=16,n=8,k=8");
  request.mutable_mesh()->set_axes("x=2,y=2");
  request.mutable_trace()->set_text(OnSquare("summa.trace", 2));
  absl::StatusOr<meshtune::engine::PreparedRun> prepared = meshtune::engine::PrepareRun(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  meshtune::runtime::RunSpec spec = prepared->spec;
  spec.inject_fault = "hang";
  setenv("TMPDIR", RunTmp().c_str(), 1);  // the job file where LiveWorkers looks
  meshtune::runtime::LaunchOptions options;
  options.worker = "runtime/meshtune_worker";
  options.timeout_s = 600;  // far off: only the cancellation can end this run
  const auto start = std::chrono::steady_clock::now();
  options.cancelled = [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::seconds(1);
  };
  const meshtune::runtime::LaunchResult r = meshtune::runtime::Launch(spec, options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.error.value_or("<none>"), "cancelled; the job was killed");
  EXPECT_EQ(LiveWorkersAfterAWhile(), 0);
}

TEST(MpiRunTest, IllegalTraceIsBadInput) {
  const Result r = MeshtuneRun(kMatmul, "m=16,n=8,k=8", "x=2,y=2",
                               Replace(OnSquare("summa.trace", 2), "communicate(A, ko)\n", ""));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(
      r.err.find("meshtune: the schedule is illegal: [non_local_access] rank (x=0, y=0) reads A["),
      std::string::npos)
      << r.err;
}

}  // namespace
