// PlanRedistribution over whole spaces: every pair of distributions (ScaLAPACK's cyclic at
// several block sizes, root, replicated, and schedule-like boxes split over mesh axes, some
// replicated along an axis) of every small matrix on several meshes. Applying the plan to
// local arrays filled from a global tensor gives every rank of the target exactly its part,
// every target slot written once; a distribution moved onto itself only copies locally.
#include "runtime/redistribution.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace meshtune::runtime {
namespace {

using Locals = std::vector<std::vector<double>>;

// Each rank's local storage filled from the tensor whose element at row-major position e is
// e + 1; -1 where nothing lands. `collisions` counts slots written twice.
Locals Fill(const Distribution& d, int ranks, int64_t cols, int* collisions) {
  Locals out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) out[r].assign(static_cast<size_t>(d.LocalElements(r)), -1);
  for (int64_t row = 0; row < d.rows(); ++row) {
    for (const Run& run : d.Row(row)) {
      for (int64_t c = run.begin; c < run.end; ++c) {
        double& slot = out[run.rank].at(static_cast<size_t>(run.offset + (c - run.begin) * run.stride));
        if (slot != -1) ++*collisions;
        slot = static_cast<double>(row * cols + c + 1);
      }
    }
  }
  return out;
}

// `to`'s local arrays after `plan` moves `from`'s; counts target slots written twice.
Locals Apply(const std::vector<Piece>& plan, const Locals& from, const Distribution& to, int ranks,
             int* twice) {
  Locals out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) out[r].assign(static_cast<size_t>(to.LocalElements(r)), -1);
  for (const Piece& p : plan) {
    for (int64_t k = 0; k < p.length; ++k) {
      double& slot = out[p.to].at(static_cast<size_t>(p.to_offset + k * p.to_stride));
      if (slot != -1) ++*twice;
      slot = from[p.from].at(static_cast<size_t>(p.from_offset + k * p.from_stride));
    }
  }
  return out;
}

int64_t Ceil(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dim `dim` of `n` split in even blocks (the last shorter) over mesh axis `axis`, at `coord`.
void Split(Box* b, int dim, int64_t n, int64_t parts, int64_t coord) {
  const int64_t size = Ceil(n, parts);
  b->start[dim] = std::min(n, coord * size);
  b->extent[dim] = std::min(n, (coord + 1) * size) - b->start[dim];
}

struct Named {
  std::string name;
  std::unique_ptr<Distribution> d;
};

// The distributions of an m x n matrix on `mesh` the test moves between.
std::vector<Named> Distributions(int64_t m, int64_t n, const ir::Mesh& mesh) {
  std::vector<Named> out;
  for (int64_t mb : {1, 2, 3}) {
    for (int64_t nb : {1, 2, 3}) {
      const ir::GivenLayout l{ir::GivenLayout::Kind::kCyclic, mb, nb};
      out.push_back({l.ToString(), GivenDistribution(l, {m, n}, mesh)});
    }
  }
  for (auto kind : {ir::GivenLayout::Kind::kRoot, ir::GivenLayout::Kind::kReplicated}) {
    const ir::GivenLayout l{kind, 0, 0};
    out.push_back({l.ToString(), GivenDistribution(l, {m, n}, mesh)});
  }
  const int64_t px = mesh.axes[0].size, py = mesh.axes.size() > 1 ? mesh.axes[1].size : 1;
  // Rows over x and columns over y (replicated along later axes): a 2D block layout.
  out.push_back({"m@x,n@y", BoxDistribution({m, n}, mesh, [=](const std::vector<int64_t>& c) {
                   Box b{{0, 0}, {m, n}};
                   Split(&b, 0, m, px, c[0]);
                   if (c.size() > 1) Split(&b, 1, n, py, c[1]);
                   return b;
                 })});
  // Columns over x, replicated along y.
  out.push_back({"n@x", BoxDistribution({m, n}, mesh, [=](const std::vector<int64_t>& c) {
                   Box b{{0, 0}, {m, n}};
                   Split(&b, 1, n, px, c[0]);
                   return b;
                 })});
  return out;
}

TEST(RedistributionTest, EveryPairOfDistributionsOfEverySmallMatrix) {
  int64_t plans = 0, pieces = 0;
  for (const char* mesh_text : {"x=2", "x=2,y=2", "x=2,y=3", "x=2,y=2,z=2"}) {
    const ir::Mesh mesh = *ir::ParseMesh(mesh_text);
    const int ranks = static_cast<int>(mesh.Ranks());
    for (int64_t m = 1; m <= 7; ++m) {
      for (int64_t n = 1; n <= 7; ++n) {
        const std::vector<Named> all = Distributions(m, n, mesh);
        std::vector<Locals> filled;
        for (const Named& d : all) {
          int collisions = 0;
          filled.push_back(Fill(*d.d, ranks, n, &collisions));
          ASSERT_EQ(collisions, 0) << d.name;
        }
        for (size_t i = 0; i < all.size(); ++i) {
          for (size_t j = 0; j < all.size(); ++j) {
            const std::string what = std::string(mesh_text) + " " + std::to_string(m) + "x" +
                                     std::to_string(n) + " " + all[i].name + " -> " + all[j].name;
            absl::StatusOr<std::vector<Piece>> plan = PlanRedistribution(*all[i].d, *all[j].d);
            ASSERT_TRUE(plan.ok()) << what << ": " << plan.status();
            int twice = 0;
            const Locals moved = Apply(*plan, filled[i], *all[j].d, ranks, &twice);
            EXPECT_EQ(twice, 0) << what;
            ASSERT_EQ(moved, filled[j]) << what;
            for (const Piece& p : *plan) {
              if (i == j) EXPECT_EQ(p.from, p.to) << what;  // onto itself: local copies only
              EXPECT_GT(p.length, 0) << what;
            }
            ++plans;
            pieces += static_cast<int64_t>(plan->size());
          }
        }
      }
    }
  }
  EXPECT_GT(plans, 20000);
  std::printf("%lld plans, %lld pieces\n", static_cast<long long>(plans),
              static_cast<long long>(pieces));
}

TEST(RedistributionTest, HigherRankTensorsMoveBetweenRootReplicatedAndBoxes) {
  const ir::Mesh mesh = *ir::ParseMesh("x=2,y=3");
  const std::vector<int64_t> shape = {3, 4, 5};
  std::vector<Named> all;
  for (auto kind : {ir::GivenLayout::Kind::kRoot, ir::GivenLayout::Kind::kReplicated}) {
    all.push_back({ir::GivenLayout{kind, 0, 0}.ToString(),
                   GivenDistribution({kind, 0, 0}, shape, mesh)});
  }
  all.push_back({"i@x,k@y", BoxDistribution(shape, mesh, [](const std::vector<int64_t>& c) {
                   Box b{{0, 0, 0}, {3, 4, 5}};
                   Split(&b, 0, 3, 2, c[0]);
                   Split(&b, 2, 5, 3, c[1]);
                   return b;
                 })});
  all.push_back({"j@y", BoxDistribution(shape, mesh, [](const std::vector<int64_t>& c) {
                   Box b{{0, 0, 0}, {3, 4, 5}};
                   Split(&b, 1, 4, 3, c[1]);
                   return b;
                 })});
  for (const Named& from : all) {
    for (const Named& to : all) {
      int collisions = 0, twice = 0;
      const Locals a = Fill(*from.d, 6, 5, &collisions), b = Fill(*to.d, 6, 5, &collisions);
      ASSERT_EQ(collisions, 0);
      absl::StatusOr<std::vector<Piece>> plan = PlanRedistribution(*from.d, *to.d);
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_EQ(Apply(*plan, a, *to.d, 6, &twice), b) << from.name << " -> " << to.name;
      EXPECT_EQ(twice, 0);
    }
  }
}

TEST(RedistributionTest, RefusesWhatCannotBeMoved) {
  const ir::Mesh mesh = *ir::ParseMesh("x=2");
  const auto root = GivenDistribution({ir::GivenLayout::Kind::kRoot, 0, 0}, {4, 4}, mesh);
  const auto other = GivenDistribution({ir::GivenLayout::Kind::kRoot, 0, 0}, {5, 4}, mesh);
  EXPECT_EQ(PlanRedistribution(*root, *other).status().message(),
            "the distributions have 4 and 5 rows");
  // Rank 1 holds nothing of a tensor whose rows 2 and 3 only it should have had.
  const auto half = BoxDistribution({4, 4}, mesh, [](const std::vector<int64_t>& c) {
    return c[0] == 0 ? Box{{0, 0}, {2, 4}} : Box{{0, 0}, {}};
  });
  EXPECT_EQ(PlanRedistribution(*half, *root).status().message(),
            "row 2 column 0 is needed by rank 0 and held by no rank");
}

}  // namespace
}  // namespace meshtune::runtime
