// The matmul communication lower bound (search/lower_bound.h) in each of its regimes, against
// the bound worked out by hand.
#include "search/lower_bound.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ir/problem.h"

namespace meshtune::search {
namespace {

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";

ir::Problem Parse(const std::string& expr, const std::string& extents) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST(LowerBoundTest, SquareIn3DRegime) {
  // d = (n, n, n), P = 8 > d1 d2 / d3^2 = 1: 3 (n^3/P)^(2/3) - 3 n^2/P = 3n^2/4 - 3n^2/8.
  const double n = 1024;
  const std::optional<double> w = MatmulCommLowerBound(Parse(kMatmul, "m=1024,n=1024,k=1024"), 8);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(*w, 3 * n * n / 8, 1e-9 * n * n);
}

TEST(LowerBoundTest, OneAndTwoDimensionalRegimes) {
  // d = (8192, 1024, 1024), P = 4 <= d1/d2 = 8: (d1 d2 + d1 d3)/P + d2 d3 - (d1 d2 + d1 d3 +
  // d2 d3)/P = d2 d3 (1 - 1/P): the smaller operand gathered everywhere.
  const double mi = 1024.0 * 1024;
  std::optional<double> w = MatmulCommLowerBound(Parse(kMatmul, "m=8192,n=1024,k=1024"), 4);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(*w, 0.75 * mi, 1e-9 * mi);
  // d = (4096, 1024, 256), P = 16 in [d1/d2, d1 d2/d3^2] = [4, 64]:
  // 2 sqrt(d1 d2 d3^2/P) + d1 d2/P - (d1 d2 + d1 d3 + d2 d3)/P
  // = 2 * 2^17 + 2^18 - (2^22 + 2^20 + 2^18)/16 = 524288 - 344064.
  w = MatmulCommLowerBound(Parse("C[m,n] += A[k,m] * B[k,n]", "m=1024,n=256,k=4096"), 16);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(*w, 180224, 1e-9 * 180224);
}

TEST(LowerBoundTest, MatrixVectorIsMatmulWithOneColumn) {
  // d = (4096, 1024, 1), P = 4 <= 4: (d1 d2 + d1)/P + d2 - (d1 d2 + d1 + d2)/P = d2 (1 - 1/P).
  const std::optional<double> w =
      MatmulCommLowerBound(Parse("y[i] += A[i,j] * x[j]", "i=4096,j=1024"), 4);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(*w, 768, 1e-9 * 768);
}

TEST(LowerBoundTest, OtherProblemsAndOneRankHaveNone) {
  EXPECT_FALSE(MatmulCommLowerBound(Parse(kMatmul, "m=64,n=64,k=64"), 1).has_value());
  EXPECT_FALSE(MatmulCommLowerBound(Parse("C[i,j] = A[i,j] + B[i,j]", "i=64,j=64"), 4).has_value());
  EXPECT_FALSE(MatmulCommLowerBound(Parse("C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=4,m=8,n=8,k=8"), 4)
                   .has_value());
  EXPECT_FALSE(
      MatmulCommLowerBound(Parse("C[i,j] += A[i,k] * A[j,k]", "i=64,j=64,k=64"), 4).has_value());
  EXPECT_FALSE(
      MatmulCommLowerBound(Parse("O[i,l] += B[i,j,k] * C[j,l] * D[k,l]", "i=8,j=8,k=8,l=8"), 4)
          .has_value());
}

}  // namespace
}  // namespace meshtune::search
