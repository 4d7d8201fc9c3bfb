// ExecuteStatements over the simulator (SimulateStatements): two-statement programs whose
// intermediate is read in place (Megatron's MLP: columns, then rows of the reduction) or
// moved between different shardings, on 2 to 5 ranks with extents that do not divide, in
// f32 and f64; each verifies against the serial reference of the whole program, moves
// bytes exactly when the shardings differ (an input read in two layouts too), takes inputs and
// outputs in given layouts at the program's edges, and reports an injected wrong element, a
// statement on another mesh and a wrong intermediate with the statement's number.
#include "runtime/statements_executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codegen/lower.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "runtime/simulator.h"

namespace meshtune::runtime {
namespace {

// One statement lowered with `trace` on `mesh`; a test failure when it is not legal.
StatementJob Lowered(const std::string& expr, const std::string& extents, const std::string& mesh,
                     const std::string& trace, const std::string& dtype = "f32",
                     const std::vector<std::string>& layouts = {}) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents, dtype);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  EXPECT_TRUE(p.ok() && m.ok()) << p.status() << " " << m.status();
  if (!p.ok() || !m.ok()) return {};
  const absl::Status given = ir::SetLayouts(layouts, &*p);
  EXPECT_TRUE(given.ok()) << given;
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*p, *m);
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(trace);
  EXPECT_TRUE(base.ok() && t.ok()) << base.status() << " " << t.status();
  if (!base.ok() || !t.ok()) return {};
  absl::StatusOr<ir::Verdict> v = ir::Judge(*base, *t);
  EXPECT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v.ok() && v->legal) << expr << "\n"
                                  << trace
                                  << (v.ok() && !v->legal
                                          ? v->reasons[0].code + ": " + v->reasons[0].message
                                          : "");
  if (!v.ok() || !v->legal) return {};
  absl::StatusOr<codegen::Program> program = codegen::Lower(v->computation);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return {};
  return {ProblemSpecOf(*p), *std::move(program)};
}

constexpr char kFirst[] = "H[b,f] = X[b,d] * W1[d,f]";
constexpr char kSecond[] = "Y[b,e] = H[b,f] * W2[f,e]";
// Long enough a reduction (d) and enough elements of G for the rounding H carries to show.
constexpr char kChainExtents[] = "b=96,d=1024,f=128,e=16";
// H's columns over x (X on every rank), then the reduction over f split as H's columns are.
constexpr char kColumns[] =
    "distribute([f], [fo], [fi], [x])\nreorder(fo, b, fi, d)\nshard(W1, f@x)\nshard(H, f@x)\n"
    "tensorize([b, fi, d], matmul)\n";
constexpr char kSplitF[] =
    "distribute([f], [fo], [fi], [x])\nreorder(fo, fi, b, e)\nshard(H, f@x)\nshard(W2, f@x)\n"
    "shard(Y, b@x)\ncommunicate(Y, fi)\ntensorize([fi, b, e], matmul)\n";
// The second statement over H's rows: H must move.
constexpr char kRows[] =
    "distribute([b], [bo], [bi], [x])\nreorder(bo, bi, e, f)\nshard(H, b@x)\nshard(Y, b@x)\n"
    "tensorize([bi, e, f], matmul)\n";

std::vector<StatementJob> Mlp(const std::string& extents, int ranks, const std::string& second,
                              const std::string& dtype = "f32",
                              const std::vector<std::string>& first_layouts = {},
                              const std::vector<std::string>& second_layouts = {}) {
  const std::string mesh = absl::StrCat("x=", ranks);
  auto own = [&](const std::string& expr) {
    // Each statement's own extents: the program's, less the indices it does not use.
    std::vector<std::string> kept;
    for (absl::string_view e : absl::StrSplit(extents, ',')) {
      const std::string index(e.substr(0, e.find('=')));
      if (expr.find(absl::StrCat(index, ",")) != std::string::npos ||
          expr.find(absl::StrCat(index, "]")) != std::string::npos)
        kept.emplace_back(e);
    }
    return absl::StrJoin(kept, ",");
  };
  return {Lowered(kFirst, own(kFirst), mesh, kColumns, dtype, first_layouts),
          Lowered(kSecond, own(kSecond), mesh, second, dtype, second_layouts)};
}

TEST(StatementsExecutorTest, MegatronMlpReadsTheIntermediateInPlaceOnEveryRankCount) {
  for (const std::string dtype : {"f32", "f64"}) {
    for (int ranks = 1; ranks <= 5; ++ranks) {
      for (const std::string extents : {"b=8,d=6,f=12,e=4", "b=7,d=5,f=11,e=3"}) {
        SCOPED_TRACE(absl::StrCat(dtype, " x=", ranks, " ", extents));
        const std::vector<StatementJob> jobs = Mlp(extents, ranks, kSplitF, dtype);
        EXPECT_TRUE(codegen::ReadInPlace(jobs[0].program, jobs[1].program, "H"));
        const RunStats m = SimulateStatements(jobs);
        EXPECT_TRUE(m.verified) << m.error;
        EXPECT_EQ(m.bytes_sent_max, 0);
        EXPECT_EQ(m.seconds.size(), 1u);
      }
    }
  }
}

TEST(StatementsExecutorTest, AnIntermediateShardedOtherwiseMovesAndStillVerifies) {
  for (int ranks = 2; ranks <= 5; ++ranks) {
    for (const std::string extents : {"b=8,d=6,f=12,e=4", "b=7,d=5,f=11,e=3"}) {
      SCOPED_TRACE(absl::StrCat("x=", ranks, " ", extents));
      const std::vector<StatementJob> jobs = Mlp(extents, ranks, kRows);
      EXPECT_FALSE(codegen::ReadInPlace(jobs[0].program, jobs[1].program, "H"));
      const RunStats m = SimulateStatements(jobs);
      EXPECT_TRUE(m.verified) << m.error;
      EXPECT_GT(m.bytes_sent_max, 0);
    }
  }
}

TEST(StatementsExecutorTest, AnInputReadInTwoLayoutsMovesFromItsFirstReader) {
  // X by rows in statement 1, on every rank in statement 2: X lives where statement 1
  // reads it, and statement 2's copy is gathered from there at each run.
  constexpr char kByRows[] =
      "distribute([b], [bo], [bi], [x])\nreorder(bo, bi, f, d)\nshard(X, b@x)\nshard(H, b@x)\n"
      "tensorize([bi, f, d], matmul)\n";
  constexpr char kByColumns[] =
      "distribute([e], [eo], [ei], [x])\nreorder(eo, b, ei, d)\nshard(W3, e@x)\nshard(G, e@x)\n"
      "tensorize([b, ei, d], matmul)\n";
  for (int ranks = 1; ranks <= 5; ++ranks) {
    for (const std::string extents : {"b=8,d=6,f=4,e=10", "b=7,d=5,f=3,e=11"}) {
      SCOPED_TRACE(absl::StrCat("x=", ranks, " ", extents));
      const std::string mesh = absl::StrCat("x=", ranks);
      const std::vector<std::string> e = absl::StrSplit(extents, ',');
      const std::vector<StatementJob> jobs = {
          Lowered("H[b,f] = X[b,d] * W1[d,f]", absl::StrCat(e[0], ",", e[1], ",", e[2]), mesh,
                  kByRows),
          Lowered("G[b,e] = X[b,d] * W3[d,e]", absl::StrCat(e[0], ",", e[1], ",", e[3]), mesh,
                  kByColumns)};
      const RunStats m = SimulateStatements(jobs);
      EXPECT_TRUE(m.verified) << m.error;
      if (ranks > 1) {
        EXPECT_GT(m.bytes_sent_max, 0);
      } else {
        EXPECT_EQ(m.bytes_sent_max, 0);
      }
    }
  }
}

// The chain of the element-wise statement: H = X W1, G = H + Z, Y = G W2, over `ranks` with
// f split as H's columns throughout (read in place) and Y's reduction over f summed across
// the ranks.
std::vector<StatementJob> Chain(const std::string& extents, int ranks,
                                const std::string& dtype = "f32") {
  constexpr char kAdd[] =
      "distribute([f], [fo], [fi], [x])\nreorder(fo, b, fi)\nshard(G, f@x)\nshard(H, f@x)\n"
      "shard(Z, f@x)\ntensorize([b, fi], add)\n";
  constexpr char kReduceF[] =
      "distribute([f], [fo], [fi], [x])\nreorder(fo, fi, b, e)\nshard(G, f@x)\nshard(W2, f@x)\n"
      "shard(Y, b@x)\ncommunicate(Y, fi)\ntensorize([fi, b, e], matmul)\n";
  const std::map<std::string, std::string> e = [&] {
    std::map<std::string, std::string> out;
    for (absl::string_view kv : absl::StrSplit(extents, ','))
      out[std::string(kv.substr(0, 1))] = std::string(kv);
    return out;
  }();
  const std::string mesh = absl::StrCat("x=", ranks);
  return {Lowered(kFirst, absl::StrCat(e.at("b"), ",", e.at("d"), ",", e.at("f")), mesh, kColumns,
                  dtype),
          Lowered("G[b,f] = H[b,f] + Z[b,f]", absl::StrCat(e.at("b"), ",", e.at("f")), mesh, kAdd,
                  dtype),
          Lowered("Y[b,e] = G[b,f] * W2[f,e]",
                  absl::StrCat(e.at("b"), ",", e.at("f"), ",", e.at("e")), mesh, kReduceF, dtype)};
}

// The rounding of H's long sums, carried into G and Y, is within the bound of the chain
// (runtime/oracle.h) at extents where it is not within a tolerance of each statement's own
// terms (2e-4 (1 + depth) of |H + Z|, plus 1e-6: "statement 2: ... G[..]" before the bound).
TEST(StatementsExecutorTest, AChainThroughAnElementWiseAddVerifiesOnTwoAndEightRanks) {
  for (const std::string dtype : {"f32", "f64"}) {
    for (int ranks : {2, 8}) {
      SCOPED_TRACE(absl::StrCat(dtype, " x=", ranks));
      const RunStats m = SimulateStatements(Chain(kChainExtents, ranks, dtype));
      EXPECT_TRUE(m.verified) << m.error;
      EXPECT_EQ(m.bytes_sent_max, 0);  // H and G read in place
    }
  }
}

TEST(StatementsExecutorTest, InputsAndOutputsInGivenLayoutsMoveAtTheProgramsEdges) {
  // X block-cyclic and W1 on rank 0 for the statement that reads them first, Y block-cyclic
  // and W2 on every rank (replicated) for the one that writes and reads them: each moved between
  // the application's layout and its home inside the run, Y checked where the application holds it;
  // the values are the block program's (its checksum).
  const std::vector<std::string> first = {"X=cyclic(2,3)", "W1=root"};
  const std::vector<std::string> second = {"Y=cyclic(3,2)", "W2=replicated"};
  for (const std::string dtype : {"f32", "f64"}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      for (const char* trace : {kSplitF, kRows}) {
        SCOPED_TRACE(absl::StrCat(dtype, " x=", ranks, "\n", trace));
        const std::string extents = "b=7,d=5,f=11,e=3";
        const RunStats given = SimulateStatements(Mlp(extents, ranks, trace, dtype, first, second));
        EXPECT_TRUE(given.verified) << given.error;
        const RunStats block = SimulateStatements(Mlp(extents, ranks, trace, dtype));
        ASSERT_TRUE(block.verified) << block.error;
        EXPECT_NEAR(given.checksum, block.checksum, 1e-9 * (1 + std::abs(block.checksum)));
      }
    }
  }
  // A wrong element where the application holds Y is caught there.
  SimOptions options;
  options.inject_fault = "wrong";
  const RunStats wrong =
      SimulateStatements(Mlp("b=8,d=6,f=12,e=4", 3, kSplitF, "f32", first, second), options);
  EXPECT_FALSE(wrong.verified);
  EXPECT_EQ(wrong.error.rfind("statement 2: rank (x=0): Y[", 0), 0u) << wrong.error;
}

TEST(StatementsExecutorTest, AWrongFinalElementIsReportedWithItsStatement) {
  SimOptions options;
  options.inject_fault = "wrong";
  const RunStats m = SimulateStatements(Mlp("b=8,d=6,f=12,e=4", 4, kSplitF), options);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error.rfind("statement 2: rank (x=0): Y[", 0), 0u) << m.error;
  EXPECT_NE(m.error.find("but the reference is"), std::string::npos) << m.error;
}

TEST(StatementsExecutorTest, AWrongIntermediateFailsTheStatementThatWroteIt) {
  // The first statement lowered for a bigger d: its H is right for that d, wrong for the
  // program's, and the check of statement 1 says so before statement 2's does.
  std::vector<StatementJob> jobs = Mlp("b=8,d=6,f=12,e=4", 2, kSplitF);
  jobs[0].problem.extents["d"] = 5;
  const RunStats m = SimulateStatements(jobs);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error.rfind("statement 1: ", 0), 0u) << m.error;
}

TEST(StatementsExecutorTest, StatementsOnDifferentMeshesAreRefused) {
  std::vector<StatementJob> jobs = Mlp("b=8,d=6,f=12,e=4", 2, kSplitF);
  jobs[1] = Mlp("b=8,d=6,f=12,e=4", 3, kSplitF)[1];
  const RunStats m = SimulateStatements(jobs);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error, "statement 2 runs on another mesh than statement 1");
  EXPECT_EQ(SimulateStatements({}).error, "the program has no statement");
}

}  // namespace
}  // namespace meshtune::runtime
