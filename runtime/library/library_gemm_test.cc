// GemmFormOf: which problems ScaLAPACK's GEMM computes, and how (operands, transposes,
// extents); LibraryGemmConfigs: the grids and blocks tried. RunLibraryGemm itself runs under
// mpirun in library_gemm_mpi_test.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "ir/problem.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"

namespace meshtune::runtime {
namespace {

std::optional<GemmForm> FormOf(const std::string& expr, const std::string& extents) {
  const absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  EXPECT_TRUE(p.ok()) << expr << ": " << p.status();
  if (!p.ok()) return std::nullopt;
  return GemmFormOf(ProblemSpecOf(*p));
}

TEST(GemmFormTest, MatmulAndItsTransposesAreOfMatmulForm) {
  const std::optional<GemmForm> plain = FormOf("C[m,n] += A[m,k] * B[k,n]", "m=7,n=5,k=3");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->c, "C");
  EXPECT_EQ(plain->a, "A");
  EXPECT_EQ(plain->b, "B");
  EXPECT_FALSE(plain->a_transposed);
  EXPECT_FALSE(plain->b_transposed);
  EXPECT_EQ(plain->m, 7);
  EXPECT_EQ(plain->n, 5);
  EXPECT_EQ(plain->k, 3);
  EXPECT_TRUE(plain->accumulate);

  const std::optional<GemmForm> both = FormOf("C[i,j] = A[k,i] * B[j,k]", "i=2,j=3,k=4");
  ASSERT_TRUE(both.has_value());
  EXPECT_TRUE(both->a_transposed);
  EXPECT_TRUE(both->b_transposed);
  EXPECT_FALSE(both->accumulate);
  EXPECT_EQ(both->m, 2);
  EXPECT_EQ(both->n, 3);
  EXPECT_EQ(both->k, 4);

  // The operand holding C's first index is A, whichever comes first in the statement.
  const std::optional<GemmForm> swapped = FormOf("C[m,n] = B[k,n] * A[m,k]", "m=2,n=3,k=4");
  ASSERT_TRUE(swapped.has_value());
  EXPECT_EQ(swapped->a, "A");
  EXPECT_EQ(swapped->b, "B");
  EXPECT_FALSE(swapped->a_transposed);
  EXPECT_FALSE(swapped->b_transposed);
}

TEST(GemmFormTest, OtherProblemsAreNot) {
  for (const auto& [expr, extents] : std::vector<std::pair<std::string, std::string>>{
           {"C[m,n] = A[m,n] + B[m,n]", "m=2,n=2"},                 // a sum
           {"C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=2,m=2,n=2,k=2"},  // batched
           {"y[i] += M[i,j] * x[j]", "i=2,j=2"},                    // a vector
           {"C[m,n] = A[m,k] * A[k,n]", "m=2,n=2,k=2"},             // A read twice
           {"C[m,n] = A[m,k] * B[l,n]", "m=2,n=2,k=2,l=2"},         // two summed indices
           {"C[m,n] = a[m] * b[n]", "m=2,n=2"},                     // an outer product
           {"C[m,n] = A[m,n]", "m=2,n=2"},                          // a copy
       }) {
    EXPECT_FALSE(FormOf(expr, extents).has_value()) << expr;
  }
}

TEST(LibraryGemmConfigsTest, TheGridsThatMoveFewestWordsWithBlocksThatFit) {
  GemmForm square;
  square.m = square.n = square.k = 2048;
  std::vector<std::string> texts;
  for (const LibraryGemmConfig& c : LibraryGemmConfigs(square, 4)) texts.push_back(ConfigText(c));
  EXPECT_EQ(texts,
            (std::vector<std::string>{"2x2, NB 64", "2x2, NB 256", "1x4, NB 64", "1x4, NB 256"}));
  // Tall C (m large): split m, C's rows, over the grid's rows.
  GemmForm tall;
  tall.m = 65536;
  tall.n = tall.k = 256;
  texts.clear();
  for (const LibraryGemmConfig& c : LibraryGemmConfigs(tall, 4)) texts.push_back(ConfigText(c));
  EXPECT_EQ(texts,
            (std::vector<std::string>{"4x1, NB 64", "4x1, NB 256", "2x2, NB 64", "2x2, NB 256"}));
  // Tiny: blocks shrink to a rank's share; one rank, one grid.
  GemmForm tiny;
  tiny.m = 3;
  tiny.n = 5;
  tiny.k = 2;
  texts.clear();
  for (const LibraryGemmConfig& c : LibraryGemmConfigs(tiny, 1)) texts.push_back(ConfigText(c));
  EXPECT_EQ(texts, (std::vector<std::string>{"1x1, NB 4"}));
}

}  // namespace
}  // namespace meshtune::runtime
