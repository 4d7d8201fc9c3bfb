// The mesh simulator: the reference schedules verify on every rank, a wrong answer and
// disagreeing ranks are reported, and the two schedules once called legal but wrong are
// now verify.
#include "runtime/simulator.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "codegen/lower.h"
#include "codegen/validate/validate.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "tests/test_util.h"

namespace meshtune::runtime {
namespace {

struct Lowered {
  bool legal = false;
  std::string reason;   // first rejection when illegal
  ProblemSpec problem;  // as stated: what a run is checked against
  codegen::Program program;
};

Lowered LowerTrace(const std::string& expr, const std::string& extents, const std::string& mesh,
                   const std::string& trace) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*p, *m);
  EXPECT_TRUE(base.ok()) << base.status();
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(trace);
  EXPECT_TRUE(t.ok()) << t.status();
  absl::StatusOr<ir::Verdict> v = ir::Judge(*base, *t);
  EXPECT_TRUE(v.ok()) << v.status();
  Lowered out;
  out.problem = ProblemSpecOf(*p);
  out.legal = v->legal;
  if (!v->legal) {
    out.reason = v->reasons[0].code + ": " + v->reasons[0].message;
    return out;
  }
  absl::StatusOr<codegen::Program> program = codegen::LowerValidated(v->computation);
  EXPECT_TRUE(program.ok()) << program.status();
  out.program = *program;
  return out;
}

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kSumma2x2[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
    "communicate(A, ko)\ncommunicate(B, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

std::string Example(const std::string& name) {
  return meshtune::testing::ReadFile("examples/" + name + ".trace");
}

TEST(SimulatorTest, ReferenceSchedulesVerifyOnEveryRank) {
  for (const std::string name : {"summa", "pumma", "cannon"}) {
    std::string trace = Example(name);
    // The examples are written for 8x8; the same schedules on 2x2 with k divided by 2.
    for (const std::string from : {"%8", "ko, ki, 8"}) {
      const std::string to = from == "%8" ? "%2" : "ko, ki, 2";
      for (size_t at = trace.find(from); at != std::string::npos; at = trace.find(from)) {
        trace.replace(at, from.size(), to);
      }
    }
    const Lowered l = LowerTrace(kMatmul, "m=8,n=12,k=16", "x=2,y=2", trace);
    ASSERT_TRUE(l.legal) << name << ": " << l.reason;
    const RunStats m = Simulate(l.problem, l.program);
    EXPECT_TRUE(m.verified) << name << ": " << m.error;
    EXPECT_EQ(m.error, "");
    EXPECT_GT(m.bytes_sent_max, 0) << name;
  }
}

// The families whose layouts allow it move data only between shards, buffers and the
// network: no packing, no staging, no copy of a rank's own block.
TEST(SimulatorTest, SummaCannonAllGatherGemmAndSplitKCopyNothing) {
  struct Case {
    std::string name, expr, extents, mesh, trace;
  };
  std::string summa = Example("summa"), cannon = Example("cannon");
  for (std::string* t : {&summa, &cannon}) {
    for (const std::string from : {"%8", "ko, ki, 8"}) {
      const std::string to = from == "%8" ? "%2" : "ko, ki, 2";
      for (size_t at = t->find(from); at != std::string::npos; at = t->find(from))
        t->replace(at, from.size(), to);
    }
  }
  const std::string ag = Example("allgather_gemm");
  std::string ag_ring = ag;
  ag_ring.replace(ag_ring.find("communicate(B, no)"), 18, "communicate(B, no, rotate=[mo])");
  const std::string ag_expr = "C[m,n] = A[k,m] * B[k,n]";
  const Case cases[] = {
      {"SUMMA", kMatmul, "m=8,n=12,k=16", "x=2,y=2", summa},
      {"Cannon", kMatmul, "m=8,n=12,k=16", "x=2,y=2", cannon},
      {"AG-GEMM (broadcast)", ag_expr, "m=16,n=32,k=8", "x=4", ag},
      {"AG-GEMM (ring)", ag_expr, "m=16,n=32,k=8", "x=4", ag_ring},
      {"split-k", kMatmul, "m=16,n=8,k=32", "x=4",
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n"},
  };
  for (const Case& c : cases) {
    const Lowered l = LowerTrace(c.expr, c.extents, c.mesh, c.trace);
    ASSERT_TRUE(l.legal) << c.name << ": " << l.reason;
    SimOptions options;
    options.warmup = 1;  // a second repetition reuses the buffers
    const RunStats m = Simulate(l.problem, l.program, options);
    EXPECT_TRUE(m.verified) << c.name << ": " << m.error;
    EXPECT_GT(m.bytes_sent_max, 0) << c.name;
    EXPECT_EQ(m.bytes_copied_max, 0) << c.name;
  }
}

TEST(SimulatorTest, AWrongElementIsReportedWithItsRank) {
  const Lowered l = LowerTrace(kMatmul, "m=8,n=8,k=8", "x=2,y=2", kSumma2x2);
  ASSERT_TRUE(l.legal) << l.reason;
  SimOptions options;
  options.inject_fault = "wrong";
  const RunStats m = Simulate(l.problem, l.program, options);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error.rfind("rank (x=0, y=0): C[", 0), 0u) << m.error;
}

TEST(SimulatorTest, ACollectiveWithDisagreeingRootsIsReported) {
  Lowered l = LowerTrace(kMatmul, "m=8,n=8,k=8", "x=2,y=2", kSumma2x2);
  ASSERT_TRUE(l.legal) << l.reason;
  // Make A's broadcast root depend on the receiver's own coordinate along the group.
  bool changed = false;
  std::function<codegen::StmtPtr(const codegen::StmtPtr&)> corrupt =
      [&](const codegen::StmtPtr& s) {
        if (const auto* b = std::get_if<codegen::Block>(&s->node)) {
          codegen::Block out;
          for (const codegen::StmtPtr& c : b->body) out.body.push_back(corrupt(c));
          return codegen::MakeStmt(std::move(out));
        }
        if (const auto* f = std::get_if<codegen::For>(&s->node)) {
          codegen::For out = *f;
          out.body = corrupt(f->body);
          return codegen::MakeStmt(std::move(out));
        }
        if (const auto* t = std::get_if<codegen::Transfer>(&s->node)) {
          if (t->tensor == "A" && t->pattern.kind == codegen::CommPattern::Kind::kBroadcast) {
            codegen::Transfer out = *t;
            const int a = out.pattern.axes[0];
            out.source[a] = codegen::Expr::Var(l.program.axis_names[a]);
            changed = true;
            return codegen::MakeStmt(std::move(out));
          }
        }
        return s;
      };
  l.program.body = corrupt(l.program.body);
  ASSERT_TRUE(changed);
  const RunStats m = Simulate(l.problem, l.program);
  EXPECT_FALSE(m.verified);
  EXPECT_NE(m.error.find("simulated Bcast along [1]"), std::string::npos) << m.error;
}

// Issue repro: B's block at step ko lives on the ranks with x = ko, not along the reader's
// own y group; an all-gather among the reader's group would gather the wrong block. It is
// an all-to-all exchange, and computes the right answer.
TEST(SimulatorTest, AGatherFromAnotherRowIsAnAllToAll) {
  const Lowered l = LowerTrace(kMatmul, "m=64,n=64,k=64", "x=2,y=2",
                               "distribute([m], [mo], [mi], [y])\n"
                               "divide(k, ko, ki, 2)\n"
                               "reorder(mo, ko, mi, n, ki)\n"
                               "shard(A, m@y)\nshard(B, k@x, n@y)\nshard(C, m@y)\n"
                               "communicate(B, ko)\n"
                               "tensorize([mi, n, ki], matmul)\n");
  ASSERT_TRUE(l.legal) << l.reason;
  bool all_to_all = false;
  for (const codegen::TransferSummary& t : codegen::Summarize(l.program)) {
    all_to_all =
        all_to_all || (t.tensor == "B" && t.pattern.kind == codegen::CommPattern::Kind::kAllToAll);
  }
  EXPECT_TRUE(all_to_all);
  const RunStats s = Simulate(l.problem, l.program);
  EXPECT_TRUE(s.verified) << s.error;
}

// Issue repro: a divide by 1 made a loop of one iteration whose value was taken as the
// row block (mio = mo), so the reduced block landed at C[0:32] on every rank.
TEST(SimulatorTest, ALoopOfOneIterationKeepsTheBlockOffsets) {
  for (const std::string parts : {"1", "2"}) {
    const Lowered l = LowerTrace(kMatmul, "m=64,n=64,k=64", "x=2,y=2",
                                 "distribute([m,k], [mo,ko], [mi,ki], [x,y])\n"
                                 "divide(mi, mio, mii, " +
                                     parts +
                                     ")\n"
                                     "reorder(mo, ko, mio, mii, n, ki)\n"
                                     "shard(A, m@x, k@y)\nshard(B, k@y)\nshard(C, m@x)\n"
                                     "communicate(C, mio)\n"
                                     "tensorize([mii, n, ki], matmul)\n");
    ASSERT_TRUE(l.legal) << l.reason;
    const RunStats m = Simulate(l.problem, l.program);
    EXPECT_TRUE(m.verified) << "divide by " << parts << ": " << m.error;
  }
}

// Extents below an axis's size: the ranks whose blocks lie wholly past the end (f=1 on
// x=2: rank 1's block starts at f=1) compute nothing. The clip of their kernel once took
// its start from the ranks that have instances (a constant 0 when the extent is 1), so
// rank 1 computed H[0, 1] in its scratch: explain said legal while translation validation
// refused the Program as unsound.
TEST(SimulatorTest, RanksWhollyPastTheEndComputeNothing) {
  const std::string megatron =
      "distribute([f], [fo], [fi], [x])\nshard(H, f@x)\nshard(X, b@x)\nshard(W1, f@x)\n"
      "communicate(X, b)\ntensorize([b, fi, d], matmul)\n";
  for (const auto& [extents, mesh] :
       std::vector<std::pair<std::string, std::string>>{{"b=1,d=1,f=1", "x=2"},
                                                        {"b=4,d=1,f=1", "x=3"},
                                                        {"b=3,d=2,f=2", "x=3"},
                                                        {"b=1,d=1,f=1", "x=7"},
                                                        {"b=5,d=3,f=4", "x=7"}}) {
    const Lowered l = LowerTrace("H[b,f] = X[b,d] * W1[d,f]", extents, mesh, megatron);
    ASSERT_TRUE(l.legal) << extents << " on " << mesh << ": " << l.reason;
    const RunStats s = Simulate(l.problem, l.program);
    EXPECT_TRUE(s.verified) << extents << " on " << mesh << ": " << s.error;
  }
}

// A trace of examples/ with `from` replaced by `to` (each occurrence).
std::string ExampleWith(const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string trace = Example(name);
  for (const auto& [from, to] : edits) {
    for (size_t at = trace.find(from); at != std::string::npos; at = trace.find(from, at)) {
      trace.replace(at, from.size(), to);
      at += to.size();
    }
  }
  return trace;
}

// The prefetched examples (SUMMA with both broadcasts prefetched, the all-gather ring and
// GEMM-ReduceScatter with the output prefetched) verify on every rank, with the checksum of
// the same schedule without prefetch: overlap moves when data travels, not what arrives.
TEST(SimulatorTest, PrefetchedExamplesVerifyOnEveryRank) {
  struct Case {
    std::string name, expr, extents, mesh, trace;
  };
  std::vector<Case> cases;
  for (int s : {2, 3}) {
    const std::string p = std::to_string(s);
    cases.push_back({"summa_prefetch", kMatmul, "m=12,n=6,k=18", "x=" + p + ",y=" + p,
                     ExampleWith("summa_prefetch", {{"ko, ki, 8", "ko, ki, " + p}})});
  }
  for (int s : {4, 2, 3}) {
    const std::string p = std::to_string(s);
    const std::string divide = "divide(n, no, ni, " + p + ")";
    cases.push_back({"allgather_gemm_prefetch", "C[m,n] = A[k,m] * B[k,n]", "m=24,k=8,n=12",
                     "x=" + p,
                     ExampleWith("allgather_gemm_prefetch", {{"divide(n, no, ni, 4)", divide}})});
    for (const std::string expr : {"C[m,n] = A[m,k] * B[k,n]", "C[m,n] += A[m,k] * B[k,n]"}) {
      cases.push_back({"gemm_reducescatter", expr, "m=24,k=12,n=12", "x=" + p,
                       ExampleWith("gemm_reducescatter", {{"divide(n, no, ni, 4)", divide}})});
    }
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + " " + c.expr + " on " + c.mesh);
    const Lowered l = LowerTrace(c.expr, c.extents, c.mesh, c.trace);
    ASSERT_TRUE(l.legal) << l.reason;
    ASSERT_NE(codegen::Dump(l.program).find("prefetch=1"), std::string::npos);
    const RunStats m = Simulate(l.problem, l.program);
    EXPECT_TRUE(m.verified) << m.error;
    std::string without = c.trace;
    for (size_t at = without.find(", prefetch=1"); at != std::string::npos;
         at = without.find(", prefetch=1")) {
      without.erase(at, 12);
    }
    const Lowered plain = LowerTrace(c.expr, c.extents, c.mesh, without);
    ASSERT_TRUE(plain.legal) << plain.reason;
    const RunStats n = Simulate(plain.problem, plain.program);
    EXPECT_TRUE(n.verified) << n.error;
    EXPECT_EQ(m.checksum, n.checksum);
    EXPECT_EQ(m.bytes_sent_max, n.bytes_sent_max);
  }
}

}  // namespace
}  // namespace meshtune::runtime
