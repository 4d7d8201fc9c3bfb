// `meshtune explain` as a user runs it: verdicts, JSON (a meshtune.v1.ExplainResponse), exit
// status, stdin traces.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "proto/meshtune.pb.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::ReadFile;

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::ParsesAs;

const std::string kMatmul =
    "--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=512,n=1024,k=2048 --mesh x=8,y=8 ";

TEST(ExplainCliTest, LegalTraceInText) {
  const CliRun r = Meshtune("explain " + kMatmul + "--trace examples/summa.trace");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind("verdict: legal\nschedule: { S[k, m, n] -> S[mo, no, ko, mi = m - 64mo, ", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("  C: { C[m, n] -> C[x, y, lm = m - 64x, ln = n - 128y] :"),
            std::string::npos)
      << r.out;
}

// Split-k on x=4, C copied on every rank: by default its partial sums are all-reduced into
// every copy; with --result-on-layer reduced onto x=0 alone.
TEST(ExplainCliTest, ACopiedOutputOnEveryCopyOrOnOneLayer) {
  const std::string split_k =
      "explain --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=64,k=1024 --mesh x=4 "
      "--trace tests/testdata/splitk_x4.trace";
  const CliRun every = Meshtune(split_k);
  EXPECT_EQ(every.status, 0) << every.err;
  EXPECT_NE(every.out.find("transfers:\n  C at ki: AllReduce axes [0], 16 KiB per rank\n"),
            std::string::npos)
      << every.out;
  const CliRun layer = Meshtune(split_k + " --result-on-layer");
  EXPECT_EQ(layer.status, 0) << layer.err;
  EXPECT_NE(layer.out.find("transfers:\n  C at ki: Reduce axes [0], 16 KiB per rank\n"),
            std::string::npos)
      << layer.out;
}

TEST(ExplainCliTest, IllegalTraceInJsonStillExitsZero) {
  const CliRun r = Meshtune("explain " + kMatmul + "--trace examples/summa_no_comm_a.trace --json");
  EXPECT_EQ(r.status, 0) << r.err;
  meshtune::v1::ExplainResponse response;
  ASSERT_TRUE(ParsesAs(r.out, &response));
  EXPECT_FALSE(response.legal());
  ASSERT_GE(response.reasons_size(), 1) << r.out;
  EXPECT_EQ(response.reasons(0).code(), "non_local_access");
  EXPECT_EQ(
      response.shardings().at("A").rfind("{ A[m, k] -> A[x, y, lm = m - 64x, lk = k - 256y]", 0),
      0u)
      << r.out;
  EXPECT_TRUE(response.transfers().empty());
  EXPECT_EQ(r.out.rfind("{\"legal\":false,\"reasons\":[{\"code\":\"non_local_access\",\"message\":"
                        "\"rank (x=0, y=0) reads A[0, 256], which rank (x=0, y=1) holds, not it",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\"schedule\":\"{ S[k, m, n] -\\u003e S[mo, no, ko, mi"), std::string::npos);
  EXPECT_NE(r.out.find("\"shardings\":{"), std::string::npos);
  EXPECT_NE(r.out.find("\"A\":\"{ A[m, k] -\\u003e A[x, y, lm = m - 64x, lk = k - 256y]"),
            std::string::npos)
      << r.out;
}

// A ring reduction (examples/gemm_ring_reducescatter.trace), explained and costed: its
// pattern with its direction, and the model's time with the numbers it used. Skewing C's
// layout by one saves the ring its last step, which the prediction shows. A profile that
// does not exist is an error that names it.
TEST(ExplainCliTest, ARingIsNamedAndCosted) {
  const std::string home = std::string(std::getenv("TEST_TMPDIR")) + "/ring_home";
  setenv("MESHTUNE_HOME", home.c_str(), 1);
  const std::string ring = ReadFile("examples/gemm_ring_reducescatter.trace");
  const std::string dir = std::getenv("TEST_TMPDIR");
  std::ofstream(dir + "/skewed.trace")
      << ring.substr(0, ring.find("shard(C, n@x)")) << "shard(C, n@(x+3)%4)"
      << ring.substr(ring.find("shard(C, n@x)") + 13);
  const std::string problem =
      "explain --expr 'C[m,n] = A[m,k] * B[k,n]' --extents m=64,n=128,k=64 --mesh x=4 ";
  const CliRun text = Meshtune(problem + "--trace examples/gemm_ring_reducescatter.trace");
  EXPECT_EQ(text.status, 0) << text.err;
  // Four steps of an 8 KiB block: sent at each, the last to the holder.
  EXPECT_NE(text.out.find("  C at no: RingReduce axes [0] shift -1, 32 KiB per rank\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(" s (built-in machine numbers)\n"), std::string::npos) << text.out;
  meshtune::v1::ExplainResponse hop, home_end;
  ASSERT_TRUE(ParsesAs(
      Meshtune(problem + "--trace examples/gemm_ring_reducescatter.trace --json").out, &hop));
  ASSERT_TRUE(
      ParsesAs(Meshtune(problem + "--trace " + dir + "/skewed.trace --json").out, &home_end));
  EXPECT_EQ(hop.costed_with(), "built-in machine numbers");
  EXPECT_GT(hop.predicted_s(), home_end.predicted_s());
  ASSERT_EQ(home_end.transfers_size(), 1);
  EXPECT_EQ(home_end.transfers(0).bytes_per_rank(), 3 * 8192);
  EXPECT_GT(home_end.predicted_s(), 0);
  const CliRun missing =
      Meshtune(problem + "--trace examples/gemm_ring_reducescatter.trace --profile nope");
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "meshtune: no hardware profile \"nope\" in " + home +
                             "/profiles; run meshtune calibrate --name nope\n");
  unsetenv("MESHTUNE_HOME");
}

TEST(ExplainCliTest, PrefetchedTransfersSayItInTextAndJson) {
  const CliRun text = Meshtune("explain " + kMatmul + "--trace examples/summa_prefetch.trace");
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("  A at ko: Broadcast axes [1], 512 KiB per rank, prefetched (two "
                          "buffers)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("    wait TransA\n    start Broadcast(axes=[1]) A[0:64, 0:256] from "
                          "rank[ko + 1] -> TransA.next[0:64, 0:256]   (if ko + 1 < 8)\n"),
            std::string::npos)
      << text.out;
  const CliRun json =
      Meshtune("explain " + kMatmul + "--trace examples/summa_prefetch.trace --json");
  meshtune::v1::ExplainResponse response;
  ASSERT_TRUE(ParsesAs(json.out, &response));
  ASSERT_EQ(response.transfers_size(), 2) << json.out;
  EXPECT_EQ(response.transfers(0).prefetch(), 1);
  EXPECT_EQ(response.transfers(1).prefetch(), 1);
}

TEST(ExplainCliTest, LegalTraceReportsTransfersAndPseudoCode) {
  const CliRun r = Meshtune("explain " + kMatmul + "--trace examples/pumma.trace --json");
  EXPECT_EQ(r.status, 0) << r.err;
  meshtune::v1::ExplainResponse response;
  ASSERT_TRUE(ParsesAs(r.out, &response));
  EXPECT_TRUE(response.legal());
  ASSERT_EQ(response.transfers_size(), 2) << r.out;
  EXPECT_EQ(response.transfers(0).pattern(), "Shift");
  EXPECT_EQ(response.transfers(1).pattern(), "Broadcast");
  EXPECT_EQ(response.pseudocode().rfind("for ko in range(0, 8):\n", 0), 0u) << r.out;
  EXPECT_NE(
      r.out.find(
          "\"transfers\":[{\"tensor\":\"A\",\"loop\":\"ko\",\"pattern\":\"Shift\",\"axes\":[1],"
          "\"shift\":1,\"bytes_per_rank\":524288,\"prefetch\":0},{\"tensor\":\"B\",\"loop\":"
          "\"ko\",\"pattern\":\"Broadcast\",\"axes\":[0],\"shift\":0,\"bytes_per_rank\":1048576,"
          "\"prefetch\":0}]"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"pseudocode\":\"for ko in range(0, 8):\\n    TransA = alloc(64, 256)\\n"),
            std::string::npos)
      << r.out;
}

// Given layouts: the redistributions are listed and in the pseudocode, first and last; a
// layout that is the schedule's sharding moves nothing; bad flags exit 2 with exact messages.
TEST(ExplainCliTest, GivenLayoutsAreRedistributionsOfTheProgram) {
  const std::string summa = "explain " + kMatmul + "--trace examples/summa.trace ";
  CliRun r = Meshtune(summa + "--layout 'A=cyclic(64,64)' --layout C=root");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("transfers:\n  C at layout: all-to-all from its given layout into the "
                       "shards, up to 32 KiB per rank\n  A at layout: all-to-all from its given "
                       "layout into the shards, up to 64 KiB per rank\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  C at layout-out: all-to-all from the shards into its given layout, up "
                       "to 2 MiB per rank\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("program:\nC = redistribute(C in root)  # all-to-all into the shards\n"
                       "A = redistribute(A in cyclic(64,64))  # all-to-all into the shards\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("C in root = redistribute(C)  # all-to-all out of the shards\n"),
            std::string::npos)
      << r.out;
  // SUMMA shards C as grid(x,y): given so, C is the shard itself.
  r = Meshtune(summa + "--layout 'C=grid(x,y)'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("layout"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("redistribute"), std::string::npos) << r.out;
  for (const auto& [flag, message] : std::vector<std::pair<std::string, std::string>>{
           {"--layout A", "meshtune: --layout 'A' is not TENSOR=SPEC (e.g. A=cyclic(64,64))\n"},
           {"--layout Q=root",
            "meshtune: --layout names tensor 'Q', which C[m,n] += A[m,k] * B[k,n] does not have "
            "(it has C, A, B)\n"},
           {"--layout A=root --layout A=block", "meshtune: --layout gives tensor A twice\n"},
           {"--layout 'A=grid(x,q)'",
            "meshtune: --layout A=grid(x,q): the mesh x=8,y=8 has no axis q\n"},
           {"--layout 'A=grid(x)'",
            "meshtune: --layout A=grid(x): names 1 axes for the 2 dims of A\n"},
       }) {
    r = Meshtune(summa + flag);
    EXPECT_EQ(r.status, 2) << flag;
    EXPECT_EQ(r.err, message) << flag;
  }
}

// `tune --in-place` (model only): it says the form it tunes, and the winner's shards are
// that form's grid(y,x) layouts (nothing moves: no layout transfer); refusals exit 2.
TEST(ExplainCliTest, TuneInPlaceTunesTheFormWhoseShardsAreTheLocalArrays) {
  const std::string tune =
      "tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=512,n=512,k=512 --mesh x=2,y=2 "
      "--model-only --no-db --max-evaluations 300 --layout 'A=cyclic(64,64)' "
      "--layout 'B=cyclic(64,64)' --layout 'C=cyclic(64,64)' --in-place";
  CliRun r = Meshtune(tune + " --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("meshtune: in place: C[n,m] += B[n,k] * A[k,m] with --layout A=grid(y,x) "
                       "--layout B=grid(y,x) --layout C=grid(y,x) (indices permuted to process "
                       "order, each local array a block)\n"),
            std::string::npos)
      << r.err;
  for (const char* shard : {"shard(C, n@y, m@x)", "shard(A, k@y, m@x)", "shard(B, n@y, k@x)"})
    EXPECT_NE(r.out.find(shard), std::string::npos) << shard << r.out;
  EXPECT_EQ(r.out.find("@layout"), std::string::npos) << r.out;
  // Without --in-place the same layouts are redistributed, and the tune says the form exists.
  r = Meshtune(tune.substr(0, tune.size() - std::string(" --in-place").size()));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("meshtune: these layouts have an in-place form, which redistributes "
                       "nothing: try --in-place\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("A@layout AllToAll"), std::string::npos) << r.out;
  r = Meshtune(
      "tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=500,n=512,k=512 --mesh x=2,y=2 "
      "--model-only --no-db --layout 'A=cyclic(64,64)' --layout 'B=cyclic(64,64)' "
      "--layout 'C=cyclic(64,64)' --in-place");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: no in-place form: m=500 is not a multiple of 128 in C=cyclic(64,64) (m in "
            "blocks of 64 over 2)\n");
}

TEST(ExplainCliTest, TraceFromStdin) {
  const CliRun r = Meshtune("explain " + kMatmul + "--trace - --json", "examples/pumma.trace");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"legal\":true,\"reasons\":[],", 0), 0u) << r.out;
}

TEST(ExplainCliTest, BadInputExitsTwoNamingTheToken) {
  CliRun r = Meshtune(
      "explain --expr 'C[m,n] += A[m,k] * B[k,q]' --extents m=4,n=4,k=4,q=4 --mesh x=2 "
      "--trace examples/summa.trace");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: expression column 5: index n of the output C[m,n] is read by no operand\n");
  EXPECT_TRUE(r.out.empty());
  r = Meshtune("explain " + kMatmul + "--trace /nonexistent.trace");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: cannot read trace file '/nonexistent.trace': No such file or directory\n");
  r = Meshtune("explain " + kMatmul);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--trace is required"), std::string::npos) << r.err;
  r = Meshtune("frobnicate");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
