// Simulate() on lowered Programs, one per communication pattern the lowering emits
// (broadcast, all-gather, initial skew plus ring shifts, reduce-scatter, all-reduce, none),
// in f32 and f64: each verifies, agrees on its checksum across dtypes, and reports an
// injected wrong element; a program with its reduction removed does not verify; Execute
// refuses a job whose mesh is not the program's.
#include "runtime/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "codegen/program.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "runtime/executor.h"
#include "runtime/sim_comm.h"

namespace meshtune::runtime {
namespace {

// The Program of a legal schedule (`trace` on `mesh`); a test failure when it does not
// parse, is illegal or does not lower.
// The problem as stated, what a run is checked against.
ProblemSpec Stated(const std::string& expr, const std::string& extents) {
  return ProblemSpecOf(*ir::ParseProblem(expr, extents));
}

codegen::Program LowerOrFail(const std::string& expr, const std::string& extents,
                             const std::string& dtype, const std::string& mesh,
                             const std::string& trace, const std::vector<std::string>& layouts = {},
                             bool result_on_layer = false) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents, dtype);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  EXPECT_TRUE(p.ok() && m.ok()) << p.status() << " " << m.status();
  if (!p.ok() || !m.ok()) return {};
  const absl::Status given = ir::SetLayouts(layouts, &*p);
  EXPECT_TRUE(given.ok()) << given;
  if (!given.ok()) return {};
  p->result_on_layer = result_on_layer;
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*p, *m);
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(trace);
  EXPECT_TRUE(base.ok() && t.ok()) << base.status() << " " << t.status();
  if (!base.ok() || !t.ok()) return {};
  absl::StatusOr<ir::Verdict> v = ir::Judge(*base, *t);
  EXPECT_TRUE(v.ok()) << v.status();
  if (!v.ok()) return {};
  EXPECT_TRUE(v->legal) << v->reasons[0].code << ": " << v->reasons[0].message;
  if (!v->legal) return {};
  absl::StatusOr<codegen::Program> program = codegen::Lower(v->computation);
  EXPECT_TRUE(program.ok()) << program.status();
  return program.ok() ? *std::move(program) : codegen::Program{};
}

// The communication patterns of `p`'s transfers and reductions, in program order.
std::vector<std::string> Patterns(const codegen::Program& p) {
  std::vector<std::string> out;
  std::function<void(const codegen::StmtPtr&)> walk = [&](const codegen::StmtPtr& s) {
    if (const auto* b = std::get_if<codegen::Block>(&s->node)) {
      for (const codegen::StmtPtr& c : b->body) walk(c);
    } else if (const auto* f = std::get_if<codegen::For>(&s->node)) {
      walk(f->body);
    } else if (const auto* t = std::get_if<codegen::Transfer>(&s->node)) {
      out.push_back(t->tensor + " " + t->pattern.ToString());
    } else if (const auto* r = std::get_if<codegen::Reduce>(&s->node)) {
      out.push_back(r->tensor + " " + r->pattern.ToString());
    }
  };
  if (p.body != nullptr) walk(p.body);
  return out;
}

// `p` without its Reduce statements.
codegen::StmtPtr WithoutReduce(const codegen::StmtPtr& s) {
  if (const auto* b = std::get_if<codegen::Block>(&s->node)) {
    codegen::Block out;
    for (const codegen::StmtPtr& c : b->body) {
      if (!std::holds_alternative<codegen::Reduce>(c->node)) out.body.push_back(WithoutReduce(c));
    }
    return codegen::MakeStmt(std::move(out));
  }
  if (const auto* f = std::get_if<codegen::For>(&s->node)) {
    codegen::For out = *f;
    out.body = WithoutReduce(f->body);
    return codegen::MakeStmt(std::move(out));
  }
  return s;
}

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kMatmulTa[] = "C[m,n] = A[k,m] * B[k,n]";

struct Case {
  std::string name, expr, extents, mesh, trace;
  std::vector<std::string> patterns;  // what the lowering must emit, so the case tests it
  std::vector<std::string> layouts;   // given layouts, as --layout takes them
  bool result_on_layer = false;       // ir::Problem::result_on_layer
};

const std::vector<Case>& Cases() {
  static const std::vector<Case>* cases = new std::vector<Case>{
      {"summa",
       kMatmul,
       "m=8,n=12,k=16",
       "x=2,y=2",
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 2)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, "
       "n@y)\n"
       "communicate(A, ko)\ncommunicate(B, ko)\ntensorize([mi, ni, ki], matmul)\n",
       {"A Broadcast(axes=[1])", "B Broadcast(axes=[0])"}},
      {"cannon",
       kMatmul,
       "m=8,n=12,k=16",
       "x=2,y=2",
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 2)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@(x+y)%2)\nshard(B, k@(x+y)%2, n@y)\n"
       "shard(C, m@x, n@y)\ncommunicate(A, ko, rotate=[mo,no])\ncommunicate(B, ko, "
       "rotate=[mo,no])\n"
       "tensorize([mi, ni, ki], matmul)\n",
       {"A Shift(axis=1, +1)", "B Shift(axis=0, +1)"}},
      {"all-gather rows",
       kMatmul,
       "m=16,n=12,k=8",
       "x=2,y=2",
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
       "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n",
       {"A AllGather(axes=[1])", "B AllGather(axes=[0])"}},
      {"split-k reduce-scatter",
       kMatmul,
       "m=8,n=8,k=16",
       "x=4",
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n",
       {"C ReduceScatter(axes=[0])"}},
      {"split-k reduce onto one layer",
       kMatmul,
       "m=8,n=8,k=16",
       "x=4",
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n",
       {"C Reduce(axes=[0])"},
       {},
       true},
      {"split-k all-reduce into every copy",
       kMatmul,
       "m=8,n=8,k=16",
       "x=4",
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n",
       {"C AllReduce(axes=[0])"}},
      {"split-k all-reduce",
       kMatmul,
       "m=8,n=8,k=16",
       "x=4",
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n",
       {"C AllReduce(axes=[0])"},
       {"C=replicated"}},
      {"all-gather gemm, broadcast",
       kMatmulTa,
       "m=16,k=8,n=16",
       "x=4",
       "distribute([m], [mo], [mi], [x])\ndivide(n, no, ni, 4)\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x)\nshard(B, n@x)\nshard(C, m@x)\ncommunicate(B, no)\n"
       "tensorize([mi, ni, k], matmul_ta)\n",
       {"B Broadcast(axes=[0])"}},
      {"all-gather gemm, ring",
       kMatmulTa,
       "m=16,k=8,n=16",
       "x=4",
       "distribute([m], [mo], [mi], [x])\ndivide(n, no, ni, 4)\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x)\nshard(B, n@x)\nshard(C, m@x)\ncommunicate(B, no, rotate=[mo])\n"
       "tensorize([mi, ni, k], matmul_ta)\n",
       {"B Shift(axis=0, +1)"}},
      {"element-wise sum",
       "C[m,n] = A[m,n] + B[m,n]",
       "m=6,n=8",
       "x=2,y=2",
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\nshard(A, m@x, n@y)\nshard(B, m@x, n@y)\n"
       "shard(C, m@x, n@y)\ntensorize([mi, ni], add)\n",
       {}},
  };
  return *cases;
}

TEST(SimulateTest, EveryPatternVerifiesInBothDtypesWithOneChecksum) {
  for (const Case& c : Cases()) {
    double checksum[2] = {0, 0};
    for (int d = 0; d < 2; ++d) {
      const std::string dtype = d == 0 ? "f32" : "f64";
      const codegen::Program p =
          LowerOrFail(c.expr, c.extents, dtype, c.mesh, c.trace, c.layouts, c.result_on_layer);
      ASSERT_EQ(Patterns(p), c.patterns) << c.name;
      ASSERT_EQ(p.dtype_bytes, d == 0 ? 4 : 8) << c.name;
      SimOptions options;
      options.warmup = 1;
      options.reps = 2;
      const RunStats m = Simulate(Stated(c.expr, c.extents), p, options);
      EXPECT_TRUE(m.verified) << c.name << " " << dtype << ": " << m.error;
      EXPECT_EQ(m.error, "") << c.name << " " << dtype;
      EXPECT_EQ(m.seconds.size(), 2u) << c.name << " " << dtype;
      EXPECT_GT(m.kernel_calls, 0) << c.name << " " << dtype;
      EXPECT_EQ(m.bytes_sent_max > 0, !c.patterns.empty()) << c.name << " " << dtype;
      checksum[d] = m.checksum;
    }
    EXPECT_NEAR(checksum[0], checksum[1], 1e-3 * (1 + std::abs(checksum[1]))) << c.name;
  }
}

TEST(SimulateTest, AnInjectedWrongElementIsReportedForEveryPattern) {
  for (const Case& c : Cases()) {
    const codegen::Program p =
        LowerOrFail(c.expr, c.extents, "f64", c.mesh, c.trace, c.layouts, c.result_on_layer);
    SimOptions options;
    options.inject_fault = "wrong";
    const RunStats m = Simulate(Stated(c.expr, c.extents), p, options);
    EXPECT_FALSE(m.verified) << c.name;
    const std::string rank0 = c.mesh == "x=4" ? "rank (x=0): C[" : "rank (x=0, y=0): C[";
    EXPECT_EQ(m.error.rfind(rank0, 0), 0u) << c.name << ": " << m.error;
  }
}

TEST(SimulateTest, AProgramWithoutItsReductionDoesNotVerify) {
  for (const Case& c : Cases()) {
    if (c.name.rfind("split-k", 0) != 0) continue;
    codegen::Program p =
        LowerOrFail(c.expr, c.extents, "f32", c.mesh, c.trace, c.layouts, c.result_on_layer);
    ASSERT_TRUE(Simulate(Stated(c.expr, c.extents), p).verified) << c.name;
    p.body = WithoutReduce(p.body);
    ASSERT_EQ(Patterns(p), std::vector<std::string>{}) << c.name;
    const RunStats m = Simulate(Stated(c.expr, c.extents), p);
    EXPECT_FALSE(m.verified) << c.name;
    EXPECT_EQ(m.error.rfind("rank (x=0): C[", 0), 0u) << c.name << ": " << m.error;
  }
}

// The 3D algorithm on 2x2x2 replicates A along y and B along x: before each run their
// copies off coordinate 0 are overwritten with NaN and broadcast from it (timed), so the run
// verifies only with the copies made; the sources count what they send.
TEST(SimulateTest, ReplicatedInputsAreBroadcastFromTheirFirstLayer) {
  const codegen::Program p =
      LowerOrFail("C[m,n] += A[m,k] * B[k,n]", "m=16,n=8,k=12", "f32", "x=2,y=2,z=2",
                  "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\nshard(A, m@x, k@z)\n"
                  "shard(B, k@z, n@y)\nshard(C, m@x, n@y)\ncommunicate(C, ki)\n"
                  "tensorize([ki, mi, ni], contraction)\n");
  ASSERT_EQ(codegen::ReplicatedAxes(p, *p.Tensor("A")), std::vector<int>{1});
  ASSERT_EQ(codegen::ReplicatedAxes(p, *p.Tensor("B")), std::vector<int>{0});
  // C too is the same along z: as the output, every copy holds the result (all-reduced).
  EXPECT_EQ(codegen::ReplicatedAxes(p, *p.Tensor("C")), std::vector<int>{2});
  EXPECT_TRUE(codegen::LayerAxes(p, *p.Tensor("C")).empty());
  const RunStats m = Simulate(Stated("C[m,n] += A[m,k] * B[k,n]", "m=16,n=8,k=12"), p);
  EXPECT_TRUE(m.verified) << m.error;
  // Rank (0,0,0) sends its 8 x 6 block of A (192 B) and 6 x 4 block of B (96 B).
  EXPECT_GE(m.bytes_sent_max, 192 + 96);
}

TEST(ExecuteTest, AJobOnAnotherMeshIsRefused) {
  const Case& summa = Cases()[0];
  const codegen::Program p = LowerOrFail(summa.expr, summa.extents, "f32", summa.mesh, summa.trace);
  SimWorld world({2});
  const RunStats m = Execute(Stated(summa.expr, summa.extents), p, world.CommFor(0), ExecOptions{});
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error, "the mesh has 4 ranks but the job has 2");
}

}  // namespace
}  // namespace meshtune::runtime
