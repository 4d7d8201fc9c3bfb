// PlanRedistribution over whole spaces: every pair of distributions (ScaLAPACK's cyclic at
// several block sizes, root, replicated, and schedule-like boxes split over mesh axes, some
// replicated along an axis) of every small matrix on several meshes. Applying the plan to
// local arrays filled from a global tensor gives every rank of the target exactly its part,
// every target slot written once; a distribution moved onto itself only copies locally.
// And the plans run on simulated ranks through Comm::Alltoallv.
#include "runtime/redistribution.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "runtime/sim_comm.h"
#include "tests/redistribution_cases.h"

namespace meshtune::runtime {
namespace {

using testing::Distributions;
using testing::Fill;
using testing::Locals;
using testing::Named;
using testing::Split;

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
              if (i == j) {
                EXPECT_EQ(p.from, p.to) << what;  // onto itself: local copies only
              }
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
    all.push_back(
        {ir::GivenLayout{kind, 0, 0}.ToString(), GivenDistribution({kind, 0, 0}, shape, mesh)});
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

// Plans run on simulated ranks (a thread each, messages through the simulator's
// mailboxes): every rank ends with its part of the target, for every pair of distributions
// of every matrix up to 5 x 5 on two meshes.
TEST(RedistributionTest, PlansRunOnSimulatedRanks) {
  int64_t runs = 0;
  for (const char* mesh_text : {"x=2,y=2", "x=2,y=3"}) {
    const ir::Mesh mesh = *ir::ParseMesh(mesh_text);
    const int ranks = static_cast<int>(mesh.Ranks());
    std::vector<int64_t> sizes;
    for (const ir::MeshAxis& a : mesh.axes) sizes.push_back(a.size);
    for (int64_t m = 1; m <= 5; ++m) {
      for (int64_t n = 1; n <= 5; ++n) {
        const std::vector<Named> all = Distributions(m, n, mesh);
        for (const Named& from : all) {
          for (const Named& to : all) {
            int collisions = 0;
            const Locals a = Fill(*from.d, ranks, n, &collisions);
            const Locals want = Fill(*to.d, ranks, n, &collisions);
            absl::StatusOr<std::vector<Piece>> plan = PlanRedistribution(*from.d, *to.d);
            ASSERT_TRUE(plan.ok()) << plan.status();
            Locals got(static_cast<size_t>(ranks));
            SimWorld world(sizes, 10);
            std::vector<std::thread> threads;
            for (int r = 0; r < ranks; ++r) {
              got[r].assign(want[r].size(), -1);
              threads.emplace_back([&, r] {
                std::unique_ptr<Comm> comm = world.CommFor(r);
                try {
                  Redistribute<double>(*plan, a[r].data(), got[r].data(), *comm);
                } catch (const SimAborted&) {
                }
              });
            }
            for (std::thread& t : threads) t.join();
            ASSERT_EQ(world.error(), "");
            ASSERT_EQ(got, want) << mesh_text << " " << m << "x" << n << " " << from.name << " -> "
                                 << to.name;
            ++runs;
          }
        }
      }
    }
  }
  EXPECT_EQ(runs, 2 * 25 * 15 * 15);
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
