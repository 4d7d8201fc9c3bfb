// Trace text round-trips losslessly and replay is deterministic.
#include "ir/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/legality.h"
#include "tests/test_util.h"

namespace meshtune::ir {
namespace {

using ::meshtune::testing::ReadFile;

constexpr char kCanonical[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "split(k, ko, ki, 256)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(A, m@x, k@(x+y)%8)\n"
    "shard(B, k@(x+y)%8, n@y)\n"
    "shard(C, m@x, n@y)\n"
    "shard(D)\n"
    "communicate(A, ko, rotate=[mo,no])\n"
    "communicate(B, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

TEST(TraceTest, CanonicalTextRoundTrips) {
  absl::StatusOr<Trace> t = ParseTrace(kCanonical);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->instructions.size(), 10u);
  EXPECT_EQ(t->ToString(), kCanonical);
  absl::StatusOr<Trace> again = ParseTrace(t->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *t);
}

TEST(TraceTest, LooseTextPrintsCanonically) {
  absl::StatusOr<Trace> t = ParseTrace(
      "# a comment\n\n  distribute( [ m , n ],[mo,no] , [mi,ni],[x , y] )  # trailing\n"
      "shard(A, m@x, k@(y + x) % 8)\nshard(B, k@(1*x+y+0)%8)\nshard(C, m@(2*x - y + 1))\n"
      "divide(k,ko,ki,8)\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ToString(),
            "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
            "shard(A, m@x, k@(y+x)%8)\n"
            "shard(B, k@(x+y)%8)\n"
            "shard(C, m@(2*x-y+1))\n"
            "divide(k, ko, ki, 8)\n");
}

TEST(TraceTest, PrefetchParsesInEitherOrderAndPrintsOnlyWhenSet) {
  absl::StatusOr<Trace> t = ParseTrace(
      "communicate(A, ko, prefetch=1, rotate=[mo,no])\ncommunicate(B, ko, prefetch=0)\n"
      "communicate(C, no, prefetch = 1)\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ToString(),
            "communicate(A, ko, rotate=[mo,no], prefetch=1)\ncommunicate(B, ko)\n"
            "communicate(C, no, prefetch=1)\n");
  const auto& a = std::get<CommunicateCall>(t->instructions[0]);
  EXPECT_EQ(a.prefetch, 1);
  EXPECT_EQ(a.rotate, (std::vector<std::string>{"mo", "no"}));
  EXPECT_EQ(std::get<CommunicateCall>(t->instructions[1]).prefetch, 0);
  CommunicateCall plain = a;
  plain.prefetch = 0;
  EXPECT_FALSE(plain == a);
  absl::StatusOr<Trace> again = ParseTrace(t->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *t);
}

TEST(TraceTest, PrefetchOtherThanZeroOrOneIsRefused) {
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"communicate(A, ko, prefetch=2)",
            "trace line 1, column 29: prefetch=2 is not supported; prefetch is 0 (off) or 1 (the "
            "next step's transfer overlaps this step)"},
           {"communicate(A, ko, prefetch=-1)",
            "trace line 1, column 29: prefetch=-1 is not supported; prefetch is 0 (off) or 1 (the "
            "next step's transfer overlaps this step)"},
           {"communicate(A, ko, prefetch=yes)",
            "trace line 1, column 29: expected the prefetch depth (0 or 1) (an integer) but found "
            "'yes'"},
           {"communicate(A, ko, prefetch=1, prefetch=1)",
            "trace line 1, column 32: prefetch= is given twice"},
           {"communicate(A, ko, depth=1)",
            "trace line 1, column 20: expected rotate=[...], step=N or prefetch=0|1 but found "
            "'depth'"},
           {"communicate(A, ko, rotate=[mo], step=0)",
            "trace line 1, column 38: step=0 is not a rotation step; a step is at least 1"},
           {"communicate(A, ko, rotate=[mo], step=-2)",
            "trace line 1, column 38: step=-2 is not a rotation step; a step is at least 1"},
           {"communicate(A, ko, step=2, rotate=[mo], step=2)",
            "trace line 1, column 41: step= is given twice"},
           {"communicate(A, ko, rotate=[mo], step=two)",
            "trace line 1, column 38: expected the rotation's step (an integer) but found 'two'"},
       }) {
    absl::StatusOr<Trace> t = ParseTrace(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(t.status().message(), message) << text;
  }
}

// step=N parses before or after rotate and prints after it, only when it is not 1.
TEST(TraceTest, RotationStepParsesInAnyOrderAndPrintsOnlyWhenNotOne) {
  absl::StatusOr<Trace> t = ParseTrace(
      "communicate(A, ko, step=2, prefetch=1, rotate=[no])\n"
      "communicate(B, ko, rotate=[no], step=1)\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ToString(),
            "communicate(A, ko, rotate=[no], step=2, prefetch=1)\n"
            "communicate(B, ko, rotate=[no])\n");
  const auto& a = std::get<CommunicateCall>(t->instructions[0]);
  EXPECT_EQ(a.step, 2);
  CommunicateCall one = a;
  one.step = 1;
  EXPECT_FALSE(one == a);
  absl::StatusOr<Trace> again = ParseTrace(t->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *t);
}

TEST(TraceTest, ReferenceTracesRoundTrip) {
  for (const char* f : {"summa", "pumma", "cannon", "allgather_gemm", "summa_prefetch",
                        "allgather_gemm_prefetch", "gemm_reducescatter", "gemm_ring_reducescatter",
                        "tesseract", "summa_25d", "cannon_25d", "pumma_steps"}) {
    absl::StatusOr<Trace> t = ParseTrace(ReadFile(std::string("examples/") + f + ".trace"));
    ASSERT_TRUE(t.ok()) << f << ": " << t.status();
    absl::StatusOr<Trace> again = ParseTrace(t->ToString());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *t) << f;
  }
}

TEST(TraceTest, ReplayIsDeterministic) {
  absl::StatusOr<Problem> p = ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048");
  absl::StatusOr<Mesh> m = ParseMesh("x=8,y=8");
  absl::StatusOr<Trace> t = ParseTrace(ReadFile("examples/cannon.trace"));
  ASSERT_TRUE(p.ok() && m.ok() && t.ok());
  std::string first;
  for (int run = 0; run < 3; ++run) {
    absl::StatusOr<Computation> base = Computation::Create(*p, *m);
    ASSERT_TRUE(base.ok());
    Replay r = ReplayTrace(*base, *t);
    ASSERT_TRUE(r.status.ok()) << r.status;
    std::string dump = r.computation.ScheduleString();
    for (const std::string& tensor : p->Tensors())
      dump += "\n" + r.computation.LayoutString(tensor);
    for (const Loop& l : r.computation.loops())
      dump += "\n" + l.name + ":" + std::to_string(l.extent);
    if (run == 0) {
      first = dump;
    } else {
      EXPECT_EQ(dump, first);
    }
  }
}

}  // namespace
}  // namespace meshtune::ir
