// The communication lower bounds (search/lower_bound.h): matmul's in each of its regimes and
// any statement's, against bounds worked out by hand.
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

// The bound for any statement (CommLowerBound) against bounds worked out by hand.
TEST(CommLowerBoundTest, MatmulIsAtLeastItsOwnBoundAndEqualIn3D) {
  const ir::Problem square = Parse(kMatmul, "m=1024,n=1024,k=1024");
  // s = (1/2, 1/2, 1/2): d_j = (n^3/8)^(2/3) = n^2/4 each, less 3 n^2/8 owned.
  EXPECT_NEAR(*CommLowerBound(square, 8), 3.0 * 1024 * 1024 / 8, 1e-6 * 1024 * 1024);
  for (const char* extents : {"m=8192,n=1024,k=1024", "m=1024,n=256,k=4096", "m=64,n=64,k=4096"})
    for (int64_t ranks : {2, 4, 16, 64}) {
      const ir::Problem p = Parse(kMatmul, extents);
      EXPECT_GE(*CommLowerBound(p, ranks), *MatmulCommLowerBound(p, ranks)) << extents << ranks;
    }
}

TEST(CommLowerBoundTest, BatchedMatmulAndElementwiseNeedNoCommunication) {
  // The batch splits without a word moved; so does an elementwise sum.
  EXPECT_NEAR(*CommLowerBound(Parse("C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=4,m=8,n=8,k=8"), 4), 0,
              1e-9);
  EXPECT_NEAR(*CommLowerBound(Parse("C[i,j] = A[i,j] + B[i,j]", "i=64,j=64"), 4), 0, 1e-9);
  // Batched, but fewer batches than ranks: each batch's matmul on 2 ranks at least.
  const double per_batch = *MatmulCommLowerBound(Parse(kMatmul, "m=512,n=512,k=512"), 2);
  EXPECT_GT(*CommLowerBound(Parse("C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=2,m=512,n=512,k=512"), 4),
            0.5 * per_batch);
}

TEST(CommLowerBoundTest, MttkrpByHand) {
  // M[i,r] = X[i,j,k] * B[j,r] * C[k,r], i=j=k=64, r=8, P=8: T = 2^18 iterations a rank,
  // sizes M, B, C 512 and X 2^18, lower limits c/8. The vertex s = (1/3, 2/3, 1/3, 1/3)
  // (i: M+X, j: X+B, k: X+C, r: M+B+C, each 1) asks (d_M d_B d_C)^(1/3) d_X^(2/3) >= 2^18:
  // with d_X = 2^15, d = 256 for the three small ones, 3 * 256 + 2^15 touched against
  // 3 * 64 + 2^15 owned: 576 words (splitting i gathers B and C: 896).
  const ir::Problem mttkrp = Parse("M[i,r] = X[i,j,k] * B[j,r] * C[k,r]", "i=64,j=64,k=64,r=8");
  EXPECT_NEAR(*CommLowerBound(mttkrp, 8), 576, 1e-6);
  EXPECT_FALSE(MatmulCommLowerBound(mttkrp, 8).has_value());
}

TEST(CommLowerBoundTest, OneRankAndATensorNamedTwiceHaveNone) {
  EXPECT_FALSE(CommLowerBound(Parse(kMatmul, "m=64,n=64,k=64"), 1).has_value());
  EXPECT_FALSE(CommLowerBound(Parse("C[i,j] += A[i,k] * A[j,k]", "i=64,j=64,k=64"), 4).has_value());
}

}  // namespace
}  // namespace meshtune::search
