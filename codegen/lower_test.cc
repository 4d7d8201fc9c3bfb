// Lowering of the reference schedules: communication patterns as docs/design.md expects, and
// the pseudo-code compared with golden files (codegen/testdata/*.pseudo).
#include "codegen/lower.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "codegen/emit/pseudocode.h"
#include "ir/verdict.h"
#include "tests/lower_text.h"
#include "tests/test_util.h"

namespace meshtune::codegen {
namespace {

using ::meshtune::testing::LowerText;
using ::meshtune::testing::ReadFile;

Program LowerFile(const std::string& expr, const std::string& extents, const std::string& mesh,
                  const std::string& trace_file) {
  return LowerText(expr, extents, mesh, ReadFile("examples/" + trace_file));
}

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kExtents[] = "m=512,n=1024,k=2048";
constexpr char kAgExpr[] = "C[m,n] = A[k,m] * B[k,n]";
constexpr char kAgExtents[] = "m=2048,k=1024,n=4096";
constexpr char kRsExpr[] = "C[m,n] = A[m,k] * B[k,n]";  // GEMM-ReduceScatter's form

// Patterns of the transfers, in program order.
std::vector<std::string> Patterns(const Program& p) {
  std::vector<std::string> out;
  std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) walk(c);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      walk(f->body);
    } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
      out.push_back(t->tensor + " " + t->pattern.ToString());
    } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
      out.push_back(r->tensor + " " + r->pattern.ToString());
    }
  };
  walk(p.body);
  return out;
}

TEST(LowerTest, ReferencePatterns) {
  EXPECT_EQ(Patterns(LowerFile(kMatmul, kExtents, "x=8,y=8", "summa.trace")),
            (std::vector<std::string>{"A Broadcast(axes=[1])", "B Broadcast(axes=[0])"}));
  EXPECT_EQ(Patterns(LowerFile(kMatmul, kExtents, "x=8,y=8", "pumma.trace")),
            (std::vector<std::string>{"A Shift(axis=1, +1)", "B Broadcast(axes=[0])"}));
  EXPECT_EQ(Patterns(LowerFile(kMatmul, kExtents, "x=8,y=8", "cannon.trace")),
            (std::vector<std::string>{"A Shift(axis=1, +1)", "B Shift(axis=0, +1)"}));
  EXPECT_EQ(Patterns(LowerFile(kAgExpr, kAgExtents, "x=4", "allgather_gemm.trace")),
            (std::vector<std::string>{"B Broadcast(axes=[0])"}));
  std::string rotated = ReadFile("examples/allgather_gemm.trace");
  rotated.replace(rotated.find("communicate(B, no)"), 18, "communicate(B, no, rotate=[mo])");
  EXPECT_EQ(Patterns(LowerText(kAgExpr, kAgExtents, "x=4", rotated)),
            (std::vector<std::string>{"B Shift(axis=0, +1)"}));
}

TEST(LowerTest, WholeRowsOfBlocksAreAllGathered) {
  const Program p =
      LowerText(kMatmul, "m=16,n=12,k=8", "x=2,y=2",
                "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
                "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
                "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n");
  EXPECT_EQ(Patterns(p),
            (std::vector<std::string>{"A AllGather(axes=[1])", "B AllGather(axes=[0])"}));
  EXPECT_NE(PseudoCode(p).find(
                "AllGather(axes=[1]) A[8 * x:8 * x + 8, 0:8] (global) -> TransA[0:8, 0:8]"),
            std::string::npos)
      << PseudoCode(p);
}

TEST(LowerTest, PummaBroadcastRootFollowsTheRotation) {
  const Program p = LowerFile(kMatmul, kExtents, "x=8,y=8", "pumma.trace");
  const std::string code = PseudoCode(p);
  EXPECT_NE(
      code.find(
          "Broadcast(axes=[0]) B[0:256, 0:128] from rank[(y + ko) % 8] -> TransB[0:256, 0:128]"),
      std::string::npos)
      << code;
}

TEST(LowerTest, SplitKReducesTheOutput) {
  const Program p =
      LowerText(kMatmul, "m=8,n=8,k=16", "x=4",
                "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
                "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n");
  EXPECT_EQ(Patterns(p), std::vector<std::string>{"C ReduceScatter(axes=[0])"});
  const std::string copied =
      "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\n"
      "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n";
  // C copied on every rank: every copy holds the result (all-reduced)...
  const Program all = LowerText(kMatmul, "m=8,n=8,k=16", "x=4", copied);
  EXPECT_EQ(Patterns(all), std::vector<std::string>{"C AllReduce(axes=[0])"});
  EXPECT_TRUE(LayerAxes(all, *all.Tensor("C")).empty());
  // ...unless the result is left on one layer (the copies at x=0): reduced there, unless
  // the application keeps every copy (given replicated), which all-reduces.
  const Program layer = LowerText(kMatmul, "m=8,n=8,k=16", "x=4", copied, {}, true);
  EXPECT_EQ(Patterns(layer), std::vector<std::string>{"C Reduce(axes=[0])"});
  EXPECT_EQ(LayerAxes(layer, *layer.Tensor("C")), std::vector<int>{0});
  const Program kept = LowerText(kMatmul, "m=8,n=8,k=16", "x=4", copied, {"C=replicated"}, true);
  EXPECT_EQ(Patterns(kept), std::vector<std::string>{"C AllReduce(axes=[0])"});
  EXPECT_TRUE(LayerAxes(kept, *kept.Tensor("C")).empty());
}

// Golden pseudo-code; MESHTUNE_UPDATE_GOLDEN=1 rewrites the files in the source tree.
void ExpectGolden(const Program& p, const std::string& name) {
  const std::string code = PseudoCode(p);
  const std::string path = "codegen/testdata/" + name + ".pseudo";
  if (const char* dir = std::getenv("MESHTUNE_UPDATE_GOLDEN")) {
    std::ofstream(std::string(dir) + "/" + path) << code;
    return;
  }
  EXPECT_EQ(code, ReadFile(path)) << name;
}

TEST(LowerTest, GoldenPseudoCode) {
  ExpectGolden(LowerFile(kMatmul, kExtents, "x=8,y=8", "summa.trace"), "summa");
  ExpectGolden(LowerFile(kMatmul, kExtents, "x=8,y=8", "pumma.trace"), "pumma");
  ExpectGolden(LowerFile(kMatmul, kExtents, "x=8,y=8", "cannon.trace"), "cannon");
  ExpectGolden(LowerFile(kAgExpr, kAgExtents, "x=4", "allgather_gemm.trace"), "allgather_gemm");
  ExpectGolden(LowerFile(kMatmul, kExtents, "x=8,y=8", "summa_prefetch.trace"), "summa_prefetch");
  ExpectGolden(LowerFile(kAgExpr, kAgExtents, "x=4", "allgather_gemm_prefetch.trace"),
               "allgather_gemm_prefetch");
  ExpectGolden(LowerFile(kRsExpr, kAgExtents, "x=4", "gemm_reducescatter.trace"),
               "gemm_reducescatter");
  // The ring: its buffer zeroed once before the loop, its sums landing at the last step.
  ExpectGolden(LowerFile(kRsExpr, kAgExtents, "x=4", "gemm_ring_reducescatter.trace"),
               "gemm_ring_reducescatter");
}

// The prefetched statements of `p`, as "TENSOR@LOOP" of the For that drives each.
std::vector<std::string> Driven(const Program& p) {
  std::vector<std::string> out;
  std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) walk(c);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      for (const Stmt* d : PrefetchedIn(*f)) {
        const auto* t = std::get_if<Transfer>(&d->node);
        out.push_back((t ? t->tensor : std::get<Reduce>(d->node).tensor) + "@" + f->var);
      }
      walk(f->body);
    }
  };
  walk(p.body);
  return out;
}

TEST(LowerTest, PrefetchedTransfersSitInTheBodyOfTheirLoop) {
  EXPECT_EQ(Driven(LowerFile(kMatmul, kExtents, "x=8,y=8", "summa_prefetch.trace")),
            (std::vector<std::string>{"A@ko", "B@ko"}));
  EXPECT_TRUE(Driven(LowerFile(kMatmul, kExtents, "x=8,y=8", "summa.trace")).empty());
  const Program ring = LowerFile(kAgExpr, kAgExtents, "x=4", "allgather_gemm_prefetch.trace");
  EXPECT_EQ(Driven(ring), std::vector<std::string>{"B@no"});
  EXPECT_EQ(Patterns(ring), std::vector<std::string>{"B Shift(axis=0, +1)"});
  const Program rs = LowerFile(kRsExpr, kAgExtents, "x=4", "gemm_reducescatter.trace");
  EXPECT_EQ(Driven(rs), std::vector<std::string>{"C@no"});
  EXPECT_EQ(Patterns(rs), std::vector<std::string>{"C ReduceScatter(axes=[0])"});
  // The summary counts both halves of a prefetched buffer.
  const std::vector<TransferSummary> s = Summarize(rs);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].prefetch, 1);
  EXPECT_EQ(s[0].buffer_bytes, 2 * 4 * 2048 * 1024);
}

// The 3D algorithm on 2x2x2 leaves y out of A's layout and x out of B's: their copies
// come first in the summary, broadcasts of the whole shard into itself (no buffer); C,
// the output, is all-reduced along z (every copy holds the result) or, with the result
// left on one layer, reduced onto the layer z=0.
TEST(LowerTest, ReplicatedInputsAreSummarizedAsCopies) {
  const std::string three_d =
      "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\n"
      "shard(A, m@x, k@z)\nshard(B, k@z, n@y)\nshard(C, m@x, n@y)\n"
      "communicate(C, ki)\ntensorize([ki, mi, ni], contraction)\n";
  const Program every = LowerText(kMatmul, "m=16,n=8,k=12", "x=2,y=2,z=2", three_d);
  EXPECT_EQ(PatternLabel("C", "ki", Summarize(every)[2].pattern), "C@ki AllReduce(axes=[2])");
  EXPECT_TRUE(LayerAxes(every, *every.Tensor("C")).empty());
  const Program p = LowerText(kMatmul, "m=16,n=8,k=12", "x=2,y=2,z=2", three_d, {}, true);
  EXPECT_EQ(ReplicatedAxes(p, *p.Tensor("A")), std::vector<int>{1});
  const std::vector<TransferSummary> s = Summarize(p);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(PatternLabel(s[0].tensor, s[0].loop, s[0].pattern), "A@copies Broadcast(axes=[1])");
  EXPECT_EQ(s[0].bytes_per_rank, 8 * 6 * 4);
  EXPECT_EQ(s[0].buffer_bytes, 0);
  EXPECT_EQ(PatternLabel(s[1].tensor, s[1].loop, s[1].pattern), "B@copies Broadcast(axes=[0])");
  EXPECT_EQ(s[1].bytes_per_rank, 6 * 4 * 4);
  EXPECT_EQ(PatternLabel(s[2].tensor, s[2].loop, s[2].pattern), "C@ki Reduce(axes=[2])");
  EXPECT_EQ(LayerAxes(p, *p.Tensor("C")), std::vector<int>{2});
  EXPECT_TRUE(LayerAxes(p, *p.Tensor("A")).empty());  // inputs: copies, not layers
  // A layout that uses every axis has no copies.
  const Program summa = LowerFile(kMatmul, kExtents, "x=8,y=8", "summa.trace");
  EXPECT_TRUE(ReplicatedAxes(summa, *summa.Tensor("A")).empty());
}

TEST(LowerTest, APrefetchWithNoLoopToDriveItIsAnInternalError) {
  // Legality refuses prefetch at the kernel's outermost loop (nothing_to_overlap); lowering
  // such a computation anyway does not quietly drop the prefetch.
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(kMatmul, "m=16,n=12,k=8");
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh("x=2,y=2");
  ASSERT_TRUE(p.ok() && m.ok());
  absl::StatusOr<ir::Computation> c = ir::Computation::Create(*p, *m);
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(
      "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
      "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
      "communicate(A, mi, prefetch=1)\ncommunicate(B, mi)\n"
      "tensorize([mi, ni, k], matmul)\n");
  ASSERT_TRUE(c.ok() && t.ok()) << t.status();
  const ir::Replay r = ir::ReplayTrace(*c, *t);
  ASSERT_TRUE(r.status.ok()) << r.status;
  absl::StatusOr<Program> prog = Lower(r.computation);
  ASSERT_FALSE(prog.ok());
  EXPECT_EQ(prog.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(prog.status().message(),
            "communicate(A, mi, prefetch=1) did not land in the body of loop mi's For");
}

}  // namespace
}  // namespace meshtune::codegen
