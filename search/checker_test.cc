// The simulating checker on meshes above its rank limit: the schedule is simulated on a
// smaller mesh of the same axes, over a whole space of legal points, and the exact error
// when no smaller mesh keeps its transfers.
#include "search/checker.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "search/explorer.h"

namespace meshtune::search {
namespace {

const char kSummaText[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 4)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n"
    "shard(C, m@x, n@y)\n"
    "shard(A, m@x, k@y)\n"
    "shard(B, k@x, n@y)\n"
    "communicate(A, ko)\n"
    "communicate(B, ko)\n"
    "tensorize([mi, ni, ki], matmul)\n";

const ir::Trace kSumma = *ir::ParseTrace(kSummaText);

ir::Problem Matmul(const std::string& extents) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", extents);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST(CheckerTest, AMeshAboveTheRankLimitIsSimulatedOnASmallerOne) {
  SimulatingCheckerOptions options;
  options.max_ranks = 4;
  std::unique_ptr<Checker> checker = NewSimulatingChecker(options);
  const CheckResult r = checker->Check(Matmul("m=16,n=16,k=16"), *ir::ParseMesh("x=4,y=4"), kSumma);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.how, "simulated-scaled");
  EXPECT_EQ(r.scaled, "k=16,m=16,n=16 on x=2,y=2");
  // Within the limit, the real mesh.
  options.max_ranks = 16;
  const CheckResult whole = NewSimulatingChecker(options)->Check(Matmul("m=16,n=16,k=16"),
                                                                 *ir::ParseMesh("x=4,y=4"), kSumma);
  EXPECT_TRUE(whole.ok) << whole.error;
  EXPECT_EQ(whole.how, "simulated");
  EXPECT_EQ(whole.scaled, "");
}

TEST(CheckerTest, NoSmallerMeshKeepsTheTransfers) {
  SimulatingCheckerOptions options;
  options.max_ranks = 2;  // x=2,y=2 cannot shrink: each axis keeps at least two ranks
  const CheckResult r = NewSimulatingChecker(options)->Check(Matmul("m=16,n=16,k=16"),
                                                             *ir::ParseMesh("x=2,y=2"), kSumma);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error,
            "too many ranks to simulate (4): on no mesh of at most 2 ranks does the schedule "
            "keep its transfers and patterns");
}

// Legal points of matmul on x=2,y=4 (8 ranks; every 16th of the 1,824, in the space's
// order), checked with a limit of 4 ranks: each is simulated on x=2,y=2 and verified, or,
// when its transfers or patterns change on that mesh, refused with the exact reason.
TEST(CheckerTest, EveryLegalPointOfASpaceVerifiesOnTheSmallerMesh) {
  const ir::Problem problem = Matmul("m=8,n=8,k=8");
  const std::vector<ir::Mesh> meshes = {*ir::ParseMesh("x=2,y=4")};
  cost::CostParams params;
  absl::StatusOr<std::unique_ptr<Explorer>> explorer =
      Explorer::Create(problem, meshes, SpaceOptions{}, params);
  ASSERT_TRUE(explorer.ok()) << explorer.status();
  SimulatingCheckerOptions small;
  small.max_ranks = 4;
  std::unique_ptr<Checker> scaled = NewSimulatingChecker(small);
  int points = 0, on_smaller = 0;
  (*explorer)->ForEachLegal([&](const Point& p) {
    if (points++ % 16 != 0) return true;  // each check lowers a few times
    const ir::Trace schedule = (*explorer)->evaluator(p.mesh).space().ToTrace(p.genome);
    const std::string trace = schedule.ToString();
    const CheckResult r = scaled->Check(problem, meshes[0], schedule);
    if (r.ok) {
      ++on_smaller;
      EXPECT_EQ(r.how, "simulated-scaled") << trace;
      EXPECT_TRUE(absl::EndsWith(r.scaled, " on x=2,y=2")) << r.scaled;
    } else {
      EXPECT_EQ(r.error,
                "too many ranks to simulate (8): on no mesh of at most 4 ranks does the "
                "schedule keep its transfers and patterns")
          << trace;
    }
    return !testing::Test::HasFailure();
  });
  EXPECT_EQ(points, 1872);  // 48 of them reduce C around a ring
  // Most schedules keep their transfers on the smaller mesh.
  EXPECT_GT(on_smaller * 2, (points + 15) / 16) << on_smaller;
}

}  // namespace
}  // namespace meshtune::search
