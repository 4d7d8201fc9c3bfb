// The search's work, counted rather than timed: per model-only tune of a fixed set of
// problems and rank counts, how many tensor checks isl decided (the rest the closed forms,
// ir/legality_closed_form.h) and how many legal points isl lowered for costing (outside
// search/closed_form.h). The counts are deterministic (fixed seed, fixed evaluations, no
// time limit reached), so the bounds cannot be flaky: a change that sends a structure back
// to isl — rotated outputs (rings), gathers of skewed layouts, a new rule without a closed form —
// raises a count past its bound and fails here, where a timing would only drift. The scale
// guard is counted the same way: how many points a tune on tens of thousands of ranks costs.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "ir/problem.h"
#include "search/runner.h"
#include "search/space.h"
#include "search/strategy.h"
#include "search/tuner.h"

namespace meshtune::search {
namespace {

struct Case {
  std::string expr, extents;
  int64_t ranks;
  int64_t max_isl_checks, max_isl_lowerings;
};

// Fixed machine numbers (alpha 1 us, beta 1 ns/B, gamma 100 GFLOP/s), so that costs compare
// and long costing walks can be bounded against the best so far.
cost::CostParams FixedParams() {
  cost::CostParams p;
  p.alpha = p.alpha_coll = 1e-6;
  p.beta = p.beta_coll = 1e-9;
  p.gamma = 1e-11;
  return p;
}

class WorkCountTest : public ::testing::TestWithParam<Case> {};

TEST_P(WorkCountTest, IslWorkStaysWithinItsBound) {
  const Case& k = GetParam();
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(k.expr, k.extents);
  ASSERT_TRUE(problem.ok()) << problem.status();
  TuneOptions o;
  o.program = ir::ProgramOf(*problem);
  o.meshes = MeshFactorisations(k.ranks, std::nullopt);
  o.params = FixedParams();
  o.top_k = 0;
  o.max_evaluations = 300;
  o.budget_s = 1e6;  // the evaluations end the search, never the clock
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  absl::StatusOr<SearchResult> r = Tune(o, *runner);
  ASSERT_TRUE(r.ok()) << r.status();
  const SearchCounts& c = r->counts;
  std::printf("%s (%s) on %lld ranks: %lld checks closed, %lld by isl; %lld isl lowerings\n",
              k.expr.c_str(), k.extents.c_str(), static_cast<long long>(k.ranks),
              static_cast<long long>(c.closed_form_checks), static_cast<long long>(c.isl_checks),
              static_cast<long long>(c.isl_lowerings));
  EXPECT_GT(c.closed_form_checks, 0);
  EXPECT_LE(c.isl_checks, k.max_isl_checks);
  EXPECT_LE(c.isl_lowerings, k.max_isl_lowerings);
}

// Bounds: no isl check and no isl lowering at all (2026-11-29: every tensor check of these
// tunes is decided by the closed forms). With rings sent back to isl (ClosedFormRing planted
// to decline) the same tunes make 168, 1,974, 433, 221, 1,809 and 389 isl checks; with
// gathers of skewed layouts sent back (the closed forms declining them, as before they had
// a form) 0, 241, 375, 66, 172 and 45: each plant fails every case it reaches.
INSTANTIATE_TEST_SUITE_P(
    Structures, WorkCountTest,
    ::testing::Values(Case{"C[m,n] += A[m,k] * B[k,n]", "m=64,n=64,k=64", 4, 0, 0},
                      Case{"Y[i,j,r] = X[i,j,k] * U[k,r]", "i=64,j=64,k=64,r=16", 8, 0, 0},
                      Case{"D[i,j] = A[i,k,l] * B[k,j] * C[l,j]", "i=128,j=16,k=32,l=32", 8, 0, 0},
                      Case{"T[a,b] = U[a,c,d] * V[c,d,b]", "a=64,b=64,c=16,d=16", 4, 0, 0},
                      Case{"E[a,b,c] = F[a,d] * G[d,b,c]", "a=32,b=32,c=32,d=32", 16, 0, 0},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=8,m=64,n=64,k=64", 4, 0, 0}));

// The scale guard (search/strategy.h: ExhaustiveLimit), counted: a model-only tune of
// 8192^3 matmul on every mesh of many ranks costs at most max_evaluations points, however few
// its space's legal points are. Without layouts that leave a rank an empty block, the spaces
// of 16,384 and 65,536 ranks hold 1,450,176 and 1,022,784 points (judged whole, exact
// counts), 9,316 and 8,352 of them legal: under the count-only guard (exhaustive up to
// max_exhaustive = 10,000 legal points) every one was costed, 9,316 and 8,352 evaluations
// (158 s and 124 s with `meshtune tune`) where the evolutionary search makes 300 here. Such
// a tune is cancelled as soon as its progress shows more (every 256 evaluations), so the
// test fails in seconds rather than at its timeout.
class ScaleGuardTest : public ::testing::TestWithParam<int64_t> {};

// Keeps the most evaluations any progress report of the search showed.
class EvaluationCount : public SearchCallback {
 public:
  void OnProgress(const SearchProgress& p) override {
    if (p.stage == "search") most = std::max(most, p.counts.evaluated);
  }
  int64_t most = 0;
};

TEST_P(ScaleGuardTest, ManyRanksCostNoMoreThanMaxEvaluations) {
  const int64_t ranks = GetParam();
  absl::StatusOr<ir::Problem> problem =
      ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=8192,n=8192,k=8192");
  ASSERT_TRUE(problem.ok()) << problem.status();
  TuneOptions o;
  o.program = ir::ProgramOf(*problem);
  o.meshes = MeshFactorisations(ranks, std::nullopt);
  o.params = FixedParams();
  o.top_k = 0;
  o.max_evaluations = 300;
  o.budget_s = 1e6;  // the evaluations end the search, never the clock
  EvaluationCount count;
  o.cancelled = [&count, &o] { return count.most > o.max_evaluations; };
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  absl::StatusOr<SearchResult> r = Tune(o, *runner, {&count});
  ASSERT_TRUE(r.ok()) << r.status() << ": the search costed " << count.most << " points, past "
                      << o.max_evaluations;
  const SearchCounts& c = r->counts;
  std::printf("8192^3 on %lld ranks: %s; %lld points, %lld legal%s, %lld evaluated, %lld costed\n",
              static_cast<long long>(ranks), r->strategy.c_str(),
              static_cast<long long>(c.enumerated), static_cast<long long>(c.legal),
              c.estimated ? " (estimated)" : "", static_cast<long long>(c.evaluated),
              static_cast<long long>(c.costed));
  EXPECT_LE(c.evaluated, o.max_evaluations);
  EXPECT_EQ(r->strategy, "evolutionary");
}

INSTANTIATE_TEST_SUITE_P(MatmulAtScale, ScaleGuardTest, ::testing::Values(16384, 65536));

// The limit itself: max_exhaustive up to kExhaustiveRanks ranks, then in proportion to the
// ranks, never below max_evaluations.
TEST(ScaleGuardTest, ExhaustiveLimitShrinksWithTheRanksDownToMaxEvaluations) {
  EXPECT_EQ(ExhaustiveLimit(10000, 1000, 8), 10000);
  EXPECT_EQ(ExhaustiveLimit(10000, 1000, kExhaustiveRanks), 10000);
  EXPECT_EQ(ExhaustiveLimit(10000, 1000, 4 * kExhaustiveRanks), 2500);
  EXPECT_EQ(ExhaustiveLimit(10000, 1000, 65536), 1000);
  EXPECT_EQ(ExhaustiveLimit(10000, 10, 65536), 10000 * kExhaustiveRanks / 65536);
  EXPECT_EQ(ExhaustiveLimit(100, 50, 8), 100);
}

}  // namespace
}  // namespace meshtune::search
