// CostMove against the plan it summarizes: the loads of every row planned one by one
// (runtime::LoadOf of runtime::PlanRedistribution) give the same bytes and seconds as
// CostMove's one row per class of alike rows, over seeded random boxes; and a move of a
// tensor of 2^40 rows is costed without planning them (it once planned every row: a
// model-only program tune at b=2^30 ended in std::bad_alloc after 12.6 GB).
#include "search/program_layouts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "cost/move_cost.h"
#include "ir/mesh.h"
#include "runtime/given_layouts.h"
#include "runtime/redistribution.h"

namespace meshtune::search {
namespace {

cost::CostParams Params() {
  cost::CostParams p;
  p.alpha = 2e-6;
  p.beta = 1e-9;
  p.alpha_coll = 3e-6;
  p.beta_coll = 2e-9;
  p.gamma = 1e-11;
  return p;
}

// Per rank, a random box within `shape` (some empty); every element held by rank 0 too
// when `cover`, so that every target element has a source.
std::vector<runtime::Box> RandomBoxes(const std::vector<int64_t>& shape, int64_t ranks, bool cover,
                                      std::mt19937_64* rng) {
  std::vector<runtime::Box> out(static_cast<size_t>(ranks));
  for (int64_t r = 0; r < ranks; ++r) {
    runtime::Box& b = out[static_cast<size_t>(r)];
    for (int64_t n : shape) {
      const int64_t start = std::uniform_int_distribution<int64_t>(0, n - 1)(*rng);
      b.start.push_back(start);
      b.extent.push_back(std::uniform_int_distribution<int64_t>(0, n - start)(*rng));
    }
  }
  if (cover) out[0] = runtime::Box{std::vector<int64_t>(shape.size(), 0), shape};
  return out;
}

int64_t RankAt(const ir::Mesh& mesh, const std::vector<int64_t>& c) {
  int64_t r = 0;
  for (size_t a = 0; a < mesh.axes.size(); ++a) r = r * mesh.axes[a].size + c[a];
  return r;
}

TEST(ProgramLayoutsTest, CostMoveEqualsTheLoadOfEveryRowPlanned) {
  std::mt19937_64 rng(7);
  int compared = 0;
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{9}, {7, 5}, {6, 4, 5}, {3, 5, 2, 4}}) {
    for (const char* text : {"x=2", "x=3", "x=2,y=2", "x=2,y=3"}) {
      const ir::Mesh mesh = *ir::ParseMesh(text);
      for (int trial = 0; trial < 20; ++trial) {
        const auto from = RandomBoxes(shape, mesh.Ranks(), true, &rng);
        const auto to = RandomBoxes(shape, mesh.Ranks(), false, &rng);
        absl::StatusOr<MoveCost> got = CostMove(shape, 4, mesh, from, to, Params());
        ASSERT_TRUE(got.ok()) << got.status();
        auto box_of = [&](const std::vector<runtime::Box>& boxes) {
          return [&](const std::vector<int64_t>& c) { return boxes[RankAt(mesh, c)]; };
        };
        auto source = runtime::BoxDistribution(shape, mesh, box_of(from));
        auto target = runtime::BoxDistribution(shape, mesh, box_of(to));
        absl::StatusOr<std::vector<runtime::Piece>> plan =
            runtime::PlanRedistribution(*source, *target);
        ASSERT_TRUE(plan.ok()) << plan.status();
        if (got->in_place) continue;
        int64_t bytes = 0;
        double seconds = 0;
        const cost::CostParams p = Params();
        for (const runtime::RankLoad& l : runtime::LoadOf(*plan, mesh.Ranks())) {
          bytes = std::max(bytes, l.sent * 4);
          seconds = std::max(seconds, cost::MoveSeconds(l, 4, p, false, mesh.Ranks()));
        }
        EXPECT_EQ(got->bytes_max, bytes) << text << " trial " << trial;
        EXPECT_DOUBLE_EQ(got->seconds, seconds) << text << " trial " << trial;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 250);
}

// H[b, f] of b=2^40 rows moved from rows over x=4 to columns over x=4: each rank keeps a
// quarter of its rows' columns and sends the other three quarters, 2^38 x 6 elements.
TEST(ProgramLayoutsTest, AMoveOfTwoToTheFortyRowsIsCostedByItsClasses) {
  const int64_t b = int64_t{1} << 40;
  const std::vector<int64_t> shape = {b, 8};
  const ir::Mesh mesh = *ir::ParseMesh("x=4");
  std::vector<runtime::Box> rows, cols;
  for (int64_t r = 0; r < 4; ++r) {
    rows.push_back({{r * (b / 4), 0}, {b / 4, 8}});
    cols.push_back({{0, r * 2}, {b, 2}});
  }
  absl::StatusOr<MoveCost> c = CostMove(shape, 4, mesh, rows, cols, Params());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->in_place);
  EXPECT_EQ(c->bytes_max, (b / 4) * 6 * 4);
}

}  // namespace
}  // namespace meshtune::search
