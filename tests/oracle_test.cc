// The oracle of every run (runtime/oracle.h): a reference from the problem as stated and a
// coverage step. Lowering bugs planted in correct Programs show what each part catches,
// where the per-rank check runs had before coverage passes. The error bound of its
// tolerance, by hand on a dot product, an element-wise add and a product of intermediates;
// over a program's chain (runtime/program_values.h), a planted error of ten times an
// element's bound is caught in every statement, in f32 and f64, while an error of the bound
// and the values of a serial f32 run pass; copies agree within twice the bound.
#include "runtime/oracle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codegen/program.h"
#include "ir/problem.h"
#include "runtime/box.h"
#include "runtime/fill.h"
#include "runtime/program_values.h"
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

// The chain of an element-wise statement, as stated: H = X W1 (d terms), G = H + Z,
// Y = G W2 (f terms).
std::vector<runtime::ProblemSpec> Chain(int64_t b, int64_t d, int64_t f, int64_t e) {
  runtime::ProblemSpec h, g, y;
  h.output = {"H", {"b", "f"}};
  h.operands = {{"X", {"b", "d"}}, {"W1", {"d", "f"}}};
  h.extents = {{"b", b}, {"d", d}, {"f", f}};
  g.output = {"G", {"b", "f"}};
  g.operands = {{"H", {"b", "f"}}, {"Z", {"b", "f"}}};
  g.sum = true;
  g.extents = {{"b", b}, {"f", f}};
  y.output = {"Y", {"b", "e"}};
  y.operands = {{"G", {"b", "f"}}, {"W2", {"f", "e"}}};
  y.extents = {{"b", b}, {"e", e}, {"f", f}};
  return {h, g, y};
}

constexpr uint64_t kSeed = 7;
const double kU32 = std::ldexp(1.0, -24), kU64 = std::ldexp(1.0, -53);

TEST(OracleBoundTest, ADotProductOfFilledInputsIsBoundByGammaNOfItsTermsMagnitudes) {
  const runtime::ProblemSpec h = Chain(1, 3, 1, 1)[0];
  double value = 0, magnitude = 0;
  for (int64_t r = 0; r < 3; ++r) {
    const double t = runtime::ElementValue(kSeed, "X", r) * runtime::ElementValue(kSeed, "W1", r);
    value += t;
    magnitude += std::abs(t);
  }
  for (runtime::Precision p : {runtime::Precision::kF32, runtime::Precision::kF64}) {
    const runtime::Reference reference(h, kSeed, p);
    EXPECT_EQ(reference.roundings(), 3);  // 1 product and 2 sums on a term's path
    const runtime::Expected x = reference.At({0, 0});
    const double u = p == runtime::Precision::kF32 ? kU32 : kU64;
    EXPECT_DOUBLE_EQ(x.value, value);
    EXPECT_DOUBLE_EQ(x.run_error, 3 * u / (1 - 3 * u) * magnitude);
    EXPECT_DOUBLE_EQ(x.ref_error, 3 * kU64 / (1 - 3 * kU64) * magnitude);
    EXPECT_DOUBLE_EQ(x.Tolerance(), 2 * (x.run_error + x.ref_error) + 1e-30);
  }
  EXPECT_EQ(runtime::Gamma(int64_t{1} << 24, kU32), std::numeric_limits<double>::infinity());
}

// An intermediate's bounds are where its readers start: G = H + Z carries H's error and adds
// one rounding; Y = G W2 carries sum_r |W2| e_G plus its own gamma_N.
TEST(OracleBoundTest, AnIntermediatesErrorPropagatesThroughAnAddAndAProduct) {
  const std::vector<runtime::ProblemSpec> chain = Chain(1, 64, 2, 1);
  runtime::ProgramValues values(chain, kSeed, runtime::Precision::kF32);
  const runtime::Expected z = runtime::FilledValue(kSeed, "Z", 0, runtime::Precision::kF32);
  EXPECT_EQ(z.run_error, 0);  // the fill has 24 bits: exact in f32
  double propagated = 0, magnitude = 0;
  for (int64_t f = 0; f < 2; ++f) {
    const runtime::Expected h = values.Value("H", f, 1);
    const runtime::Expected zf = values.Value("Z", f, 1);
    const runtime::Expected g = values.Value("G", f, 2);
    EXPECT_GT(h.run_error, 0);
    EXPECT_DOUBLE_EQ(g.value, h.value + zf.value);
    EXPECT_DOUBLE_EQ(g.run_error, h.run_error + kU32 / (1 - kU32) *
                                                    (std::abs(h.value) + h.ref_error + h.run_error +
                                                     std::abs(zf.value)));
    EXPECT_DOUBLE_EQ(g.ref_error,
                     h.ref_error + kU64 / (1 - kU64) * (std::abs(h.value) + std::abs(zf.value)));
    const double w = std::abs(runtime::ElementValue(kSeed, "W2", f));
    propagated += g.run_error * w;
    magnitude += (std::abs(g.value) + g.ref_error + g.run_error) * w;
  }
  const runtime::Expected y = values.Value("Y", 0, 3);
  EXPECT_NEAR(y.run_error, propagated + 2 * kU32 / (1 - 2 * kU32) * magnitude, 1e-12 * y.run_error);
}

// `values` of `problem`'s output (every element) as held by one rank, element `planted`
// moved by `by`.
std::vector<double> HeldAll(const runtime::ProblemSpec& problem, runtime::ProgramValues& values,
                            int s, int64_t planted, double by) {
  std::vector<double> out;
  const int64_t n = runtime::Elements(problem.Shape(problem.output.tensor));
  for (int64_t i = 0; i < n; ++i)
    out.push_back(values.Value(problem.output.tensor, i, s + 1).value);
  out[planted] += by;
  return out;
}

std::string Check(const std::vector<runtime::ProblemSpec>& chain, int s,
                  const std::vector<double>& held, runtime::Precision precision) {
  runtime::ProgramValues values(chain, kSeed, precision);
  const runtime::HeldOutput h{static_cast<int64_t>(held.size()), [](int64_t i) { return i; },
                              [&held](int64_t i) { return held[i]; }};
  return runtime::CheckHeldValues(chain[s], kSeed, h, precision, "x=0", values.OperandsOf(s));
}

TEST(OracleBoundTest, TenTimesTheBoundInOneElementOfAnyStatementOfAChainIsCaught) {
  const std::vector<runtime::ProblemSpec> chain = Chain(4, 256, 24, 5);
  for (runtime::Precision p : {runtime::Precision::kF32, runtime::Precision::kF64}) {
    runtime::ProgramValues values(chain, kSeed, p);
    for (int s = 0; s < 3; ++s) {
      const runtime::ProblemSpec& problem = chain[s];
      const std::vector<int64_t> shape = problem.Shape(problem.output.tensor);
      const int64_t planted = shape[1] + 3;  // [1, 3]
      const std::string& name = problem.output.tensor;
      SCOPED_TRACE(absl::StrCat(name, p == runtime::Precision::kF32 ? " f32" : " f64"));
      const runtime::Expected x = values.Value(name, planted, s + 1);
      const double bound = x.run_error + x.ref_error;
      EXPECT_GT(bound, 0);
      // The bound itself, and just within the tolerance (twice it), either way: right.
      for (double by : {bound, -bound, 0.99 * x.Tolerance(), -0.99 * x.Tolerance()})
        EXPECT_EQ(Check(chain, s, HeldAll(problem, values, s, planted, by), p), "") << by;
      for (double by : {10 * bound, -10 * bound}) {
        const std::vector<double> held = HeldAll(problem, values, s, planted, by);
        EXPECT_EQ(Check(chain, s, held, p),
                  absl::StrFormat("rank (x=0): %s[1, 3] = %.6g but the reference is %.6g", name,
                                  held[planted], x.value));
      }
    }
  }
}

// What a serial f32 run holds: H summed over d ascending, G = H + Z rounded, Y summed over f
// descending (another order than the reference's), each statement's result rounded to f32.
TEST(OracleBoundTest, ASerialF32RunOfTheChainIsWithinTheBound) {
  const int64_t b = 6, d = 512, f = 40, e = 3;
  const std::vector<runtime::ProblemSpec> chain = Chain(b, d, f, e);
  const auto v = [](const std::string& t, int64_t i) {
    return static_cast<float>(runtime::ElementValue(kSeed, t, i));
  };
  std::vector<double> h(b * f), g(b * f), y(b * e);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < f; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < d; ++k) sum += v("X", i * d + k) * v("W1", k * f + j);
      h[i * f + j] = sum;
      g[i * f + j] = static_cast<float>(sum + v("Z", i * f + j));
    }
    for (int64_t j = 0; j < e; ++j) {
      float sum = 0;
      for (int64_t k = f - 1; k >= 0; --k)
        sum += static_cast<float>(g[i * f + k]) * v("W2", k * e + j);
      y[i * e + j] = sum;
    }
  }
  EXPECT_EQ(Check(chain, 0, h, runtime::Precision::kF32), "");
  EXPECT_EQ(Check(chain, 1, g, runtime::Precision::kF32), "");
  EXPECT_EQ(Check(chain, 2, y, runtime::Precision::kF32), "");
}

// CheckCoverage with the bound: rank 0 holds every element at its reference, rank 1 a copy
// of element 3 moved by `by`; the message of rank 0.
std::string CoverageWithin(double by) {
  const runtime::ProblemSpec h = Chain(1, 256, 8, 1)[0];
  const runtime::Reference reference(h, kSeed, runtime::Precision::kF32);
  std::vector<std::vector<std::pair<int64_t, double>>> held(2);
  for (int64_t i = 0; i < 8; ++i) held[0].emplace_back(i, reference.At({0, i}).value);
  held[1].emplace_back(3, held[0][3].second + by);
  runtime::SimWorld world({2}, 5);
  std::vector<std::string> out(2);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const auto& mine = held[r];
      const runtime::HeldOutput c{static_cast<int64_t>(mine.size()),
                                  [&mine](int64_t i) { return mine[i].first; },
                                  [&mine](int64_t i) { return mine[i].second; }};
      out[r] = runtime::CheckCoverage(h, kSeed, c, runtime::Precision::kF32,
                                      *world.CommFor(static_cast<int>(r)));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(out[0], out[1]);
  return out[0];
}

TEST(OracleBoundTest, CopiesAgreeWithinTwiceTheBound) {
  const runtime::ProblemSpec h = Chain(1, 256, 8, 1)[0];
  const runtime::Expected x = runtime::Reference(h, kSeed, runtime::Precision::kF32).At({0, 3});
  EXPECT_EQ(CoverageWithin(0), "");
  EXPECT_EQ(CoverageWithin(1.9 * x.Tolerance()), "");
  EXPECT_EQ(CoverageWithin(-1.9 * x.Tolerance()), "");
  const double far = 2.1 * x.Tolerance();
  EXPECT_EQ(
      CoverageWithin(far),
      absl::StrFormat("H[0, 3] differs between its copies: %.6g and %.6g", x.value, x.value + far));
}

}  // namespace
}  // namespace meshtune
