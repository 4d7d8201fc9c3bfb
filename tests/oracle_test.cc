// The oracle of every run (runtime/oracle.h): a reference from the problem as stated and a
// coverage step. Lowering bugs planted in correct Programs show what each part catches,
// where the per-rank check runs had before coverage passes.
#include "runtime/oracle.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "codegen/program.h"
#include "ir/problem.h"
#include "runtime/sim_comm.h"
#include "runtime/simulator.h"
#include "tests/bound_run.h"
#include "tests/lower_text.h"

namespace meshtune {
namespace {

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kExtents[] = "m=8,n=4,k=6";
// m over x: each rank computes its rows of C from its rows of A and all of B, no transfer.
constexpr char kRows[] =
    "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, m@x)\n"
    "tensorize([mi, n, k], matmul)\n";

ir::Problem Matmul() { return *ir::ParseProblem(kMatmul, kExtents); }

// The bug: `tensor`'s shard is placed at block 0 on every rank (its layout ignores the mesh
// coordinates) — for the fill of an input and the claim of the output alike.
void PinToBlockZero(codegen::Program* p, const std::string& tensor) {
  for (codegen::TensorInfo& t : p->tensors) {
    if (t.name != tensor) continue;
    for (codegen::DimLayout& d : t.layout) {
      for (auto& [size, index] : d.blocks) index = codegen::Expr::Const(0);
    }
  }
}

TEST(OracleTest, TheUnplantedProgramPassesEveryCheck) {
  const codegen::Program p = testing::LowerText(kMatmul, kExtents, "x=2", kRows);
  const runtime::RunStats m = runtime::Simulate(runtime::ProblemSpecOf(Matmul()), p);
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_EQ(testing::CheckBoundRun(Matmul(), p), "");
}

// Rank x=1 fills rows 0-3 of A and says its C holds rows 0-3: it computes those rows right,
// so every rank's own elements match the reference, and rows 4-7 of C are nowhere.
TEST(OracleTest, ABlockMovedOnBothSidesIsCaughtByCoverageAlone) {
  codegen::Program p = testing::LowerText(kMatmul, kExtents, "x=2", kRows);
  PinToBlockZero(&p, "A");
  PinToBlockZero(&p, "C");
  // The check before coverage: each rank's own output elements against the reference.
  EXPECT_EQ(testing::CheckBoundRunPerRank(Matmul(), p), "");
  // With coverage: the simulator (the executor's own check), and bound runs.
  const runtime::RunStats m = runtime::Simulate(runtime::ProblemSpecOf(Matmul()), p);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error, "C[4, 0] is held by no rank");
  EXPECT_EQ(testing::CheckBoundRun(Matmul(), p), "bound run: C[4, 0] is held by no rank");
}

// The reference comes from the problem as stated: a program lowered for `=` that is run
// for a `+=` problem (or the reverse) is wrong, whatever its own statement says.
TEST(OracleTest, TheReferenceIsTheStatedProblemNotTheProgram) {
  const codegen::Program p = testing::LowerText(kMatmul, kExtents, "x=2", kRows);
  const ir::Problem set = *ir::ParseProblem("C[m,n] = A[m,k] * B[k,n]", kExtents);
  const runtime::RunStats m = runtime::Simulate(runtime::ProblemSpecOf(set), p);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error.rfind("rank (x=0): C[0, 0] = ", 0), 0u) << m.error;
  const ir::Problem transposed = *ir::ParseProblem("C[m,n] += A[m,k] * B[n,k]", "m=8,n=4,k=6");
  EXPECT_FALSE(runtime::Simulate(runtime::ProblemSpecOf(transposed), p).verified);
}

// CheckCoverage over a simulated mesh of `ranks`, rank r holding `held[r]` (global index,
// value); the message of rank 0 (every rank gets the same).
std::string Coverage(const std::vector<std::vector<std::pair<int64_t, double>>>& held) {
  runtime::ProblemSpec c;
  c.output = {"C", {"i"}};
  c.operands = {{"A", {"i"}}};
  c.sum = true;
  c.extents = {{"i", 4}};
  runtime::SimWorld world({static_cast<int64_t>(held.size())}, 5);
  std::vector<std::string> out(held.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < held.size(); ++r) {
    threads.emplace_back([&, r] {
      const auto& mine = held[r];
      const runtime::HeldOutput h{static_cast<int64_t>(mine.size()),
                                  [&mine](int64_t i) { return mine[i].first; },
                                  [&mine](int64_t i) { return mine[i].second; }};
      out[r] = runtime::CheckCoverage(c, h, 1e-6, *world.CommFor(static_cast<int>(r)));
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& s : out) EXPECT_EQ(s, out[0]);
  return out[0];
}

TEST(OracleTest, CoverageNamesTheFirstElementNoRankHoldsOrWhoseCopiesDisagree) {
  EXPECT_EQ(Coverage({{{0, 1}, {1, 1}}, {{2, 1}, {3, 1}}}), "");
  EXPECT_EQ(Coverage({{{0, 1}, {1, 1}}, {{3, 1}, {1, 1}}}), "C[2] is held by no rank");
  EXPECT_EQ(Coverage({{{0, 1}, {1, 1}, {2, 0.5}, {3, 1}}, {{2, 0.25}}}),
            "C[2] differs between its copies: 0.25 and 0.5");
  EXPECT_EQ(Coverage({{{0, 1}, {1, 1}, {2, 0.5}, {3, 1}}, {{2, std::nan("")}}}),
            "C[2] is not a finite number on some rank");
  // A slot that holds no element (-1) and copies that agree.
  EXPECT_EQ(Coverage({{{0, 1}, {-1, 9}, {2, 1}}, {{1, 1}, {2, 1}, {3, 1}}, {{3, 1}}}), "");
}

}  // namespace
}  // namespace meshtune
