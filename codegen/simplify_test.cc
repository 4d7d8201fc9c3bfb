#include "codegen/simplify.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace meshtune::codegen {
namespace {

using Op = Expr::Op;

Expr C(int64_t v) { return Expr::Const(v); }
Expr V(const std::string& n) { return Expr::Var(n); }
Expr Div(const Expr& a, int64_t d) { return Expr::Make(Op::kFloorDiv, {a, C(d)}); }
Expr Mod(const Expr& a, int64_t m) { return Expr::Make(Op::kMod, {a, C(m)}); }

TEST(SimplifyTest, FoldsWhatTheClosedFormsWrite) {
  const VarRanges r = {{"x", {0, 31}}, {"y", {0, 31}}, {"no", {0, 31}}};
  EXPECT_EQ(Simplify(Div(V("x") * C(256), 256), r).ToString(), "x");
  EXPECT_EQ(Simplify(Mod(V("x"), 32), r).ToString(), "x");
  EXPECT_EQ(Simplify(Mod(Mod(V("no") + V("y"), 32) * C(256), 256 * 32), r).ToString(),
            "floormod(no + y, 32) * 256");
  EXPECT_EQ(
      Simplify(Mod(Div(Mod(V("no") + V("y"), 32) * C(256), 256) - Div(V("x") * C(256), 256), 32), r)
          .ToString(),
      "floormod(floormod(no + y, 32) - x, 32)");
  EXPECT_EQ(Simplify(Div(V("x") * C(8) + C(3), 8), r).ToString(), "x");
  EXPECT_EQ(Simplify(Div(V("x") + C(64), 32), r).ToString(), "2");
  EXPECT_EQ(Simplify(Mod(V("x") + C(32), 32), r).ToString(), "x");
  EXPECT_EQ(Simplify(V("x") - V("x") + C(0), r).ToString(), "0");
  EXPECT_EQ(Simplify(Div(Mod(V("no") + V("y"), 1024) * C(8), 256), r).ToString(),
            "floord(no + y, 32)");  // no + y < 1024
  EXPECT_EQ(Simplify(Mod(V("u") * C(6) + C(4), 8), r).ToString(), "floormod(u * 3 + 2, 4) * 2");
  // An unbounded variable keeps its division.
  EXPECT_EQ(Simplify(Div(V("u"), 4), r).ToString(), "floord(u, 4)");
}

// A random quasi-affine expression over x, y, t (ranged) and u (not).
Expr Random(std::mt19937_64& rng, int depth) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  static const char* kVars[] = {"x", "y", "t", "u"};
  if (depth == 0 || pick(4) == 0) {
    return pick(3) == 0 ? C(pick(17) - 8) : V(kVars[pick(4)]);
  }
  switch (pick(8)) {
    case 0:
      return Random(rng, depth - 1) + Random(rng, depth - 1);
    case 1:
      return Random(rng, depth - 1) - Random(rng, depth - 1);
    case 2:
      return Random(rng, depth - 1) * C(pick(9) - 4);
    case 3:
      return Expr::Make(Op::kNeg, {Random(rng, depth - 1)});
    case 4:
      return Div(Random(rng, depth - 1), 1 + pick(9));
    case 5:
      return Mod(Random(rng, depth - 1), 1 + pick(9));
    case 6:
      return Expr::Make(pick(2) ? Op::kMin : Op::kMax,
                        {Random(rng, depth - 1), Random(rng, depth - 1)});
    default:
      return Random(rng, depth - 1) * Random(rng, depth - 1);
  }
}

// Property: over every assignment within the ranges (u over [-6, 6]), the simplified
// expression has the original's value.
TEST(SimplifyTest, EqualOnEveryPointOfTheRanges) {
  const VarRanges r = {{"x", {0, 3}}, {"y", {0, 5}}, {"t", {2, 9}}};
  std::mt19937_64 rng(7);
  int shorter = 0;
  for (int i = 0; i < 4000; ++i) {
    const Expr e = Random(rng, 4);
    const Expr s = Simplify(e, r);
    if (s.ToString().size() < e.ToString().size()) ++shorter;
    for (int64_t x = 0; x <= 3; ++x) {
      for (int64_t y = 0; y <= 5; ++y) {
        for (int64_t t = 2; t <= 9; ++t) {
          for (int64_t u = -6; u <= 6; ++u) {
            auto lookup = [&](const std::string& n) {
              return n == "x" ? x : n == "y" ? y : n == "t" ? t : u;
            };
            ASSERT_EQ(s.Eval(lookup), e.Eval(lookup))
                << e.ToString() << " simplified to " << s.ToString() << " at x=" << x << " y=" << y
                << " t=" << t << " u=" << u;
          }
        }
      }
    }
  }
  EXPECT_GT(shorter, 1000);  // the rewrites do apply
}

}  // namespace
}  // namespace meshtune::codegen
