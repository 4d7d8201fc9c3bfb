// Comm's rank numbering and groups (comm.h) and the in-process transport (sim_comm.h):
// every collective and point-to-point call against values worked out per rank, and the
// misuses the simulator turns into an error instead of a hang (disagreeing roots, wrong
// counts, a wrong message size, a message nobody sends).
#include "runtime/sim_comm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm.h"

namespace meshtune::runtime {
namespace {

// Runs `fn(comm)` on a thread per rank of `world`, each with its own Comm; returns how many
// ranks ended by SimAborted.
int RunRanks(SimWorld& world, const std::function<void(Comm&)>& fn) {
  std::atomic<int> aborted{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < world.ranks(); ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Comm> comm = world.CommFor(r);
      try {
        fn(*comm);
      } catch (const SimAborted&) {
        ++aborted;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return aborted;
}

TEST(CommTest, RanksAreRowMajorAndTheMeshIsPeriodic) {
  SimWorld world({2, 3});
  EXPECT_EQ(world.ranks(), 6);
  const std::unique_ptr<Comm> comm = world.CommFor(4);
  EXPECT_EQ(comm->rank(), 4);
  EXPECT_EQ(comm->size(), 6);
  EXPECT_EQ(comm->axis_sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(comm->CoordsOf(0), (Coords{0, 0}));
  EXPECT_EQ(comm->CoordsOf(2), (Coords{0, 2}));
  EXPECT_EQ(comm->CoordsOf(4), (Coords{1, 1}));
  EXPECT_EQ(comm->CoordsOf(5), (Coords{1, 2}));
  for (int r = 0; r < 6; ++r) EXPECT_EQ(comm->RankOf(comm->CoordsOf(r)), r);
  EXPECT_EQ(comm->RankOf({-1, 4}), 4);
  EXPECT_EQ(comm->RankOf({2, 3}), 0);
  EXPECT_EQ(comm->RankOf({3, -1}), 5);
  EXPECT_EQ(comm->AllAxes(), (std::vector<int>{0, 1}));
}

TEST(CommTest, GroupsAreTheRanksSharingTheOtherCoordinatesInRowMajorOrder) {
  SimWorld world({2, 3});
  const std::unique_ptr<Comm> comm = world.CommFor(4);  // (1, 1)
  EXPECT_EQ(comm->Group({}), (std::vector<Coords>{{1, 1}}));
  EXPECT_EQ(comm->Group({1}), (std::vector<Coords>{{1, 0}, {1, 1}, {1, 2}}));
  EXPECT_EQ(comm->Group({0}), (std::vector<Coords>{{0, 1}, {1, 1}}));
  EXPECT_EQ(comm->Group({0, 1}),
            (std::vector<Coords>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
  // The last listed axis is the fastest.
  EXPECT_EQ(comm->Group({1, 0}),
            (std::vector<Coords>{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}}));
  EXPECT_EQ(comm->GroupIndex({1}, {0, 2}), 2);
  EXPECT_EQ(comm->GroupIndex({0, 1}, {1, 2}), 5);
  EXPECT_EQ(comm->GroupIndex({1, 0}, {1, 2}), 5);
  EXPECT_EQ(comm->GroupIndex({1, 0}, {0, 1}), 2);
}

TEST(CommTest, DataTypeBytes) {
  EXPECT_EQ(DataTypeBytes(DataType::kFloat), 4);
  EXPECT_EQ(DataTypeBytes(DataType::kDouble), 8);
  EXPECT_EQ(DataTypeBytes(DataType::kInt), 4);
  EXPECT_EQ(DataTypeBytes(DataType::kLongLong), 8);
  EXPECT_EQ(DataTypeBytes(DataType::kChar), 1);
}

TEST(SimCommTest, CollectivesOverGroupsAndTheWholeMesh) {
  SimWorld world({2, 3});
  std::vector<int> bcast(6), sum_row(6), max_all(6), min_col(6), reduced(6, -1);
  std::vector<std::vector<double>> gathered(6);
  EXPECT_EQ(RunRanks(world,
                     [&](Comm& c) {
                       const int r = c.rank();
                       const Coords me = c.CoordsOf(r);
                       // Along y (a row of 3) from the member at y=2.
                       int v = 100 + r;
                       c.Bcast(&v, 1, DataType::kInt, {1}, Coords{me[0], 2});
                       bcast[r] = v;
                       int s = r;
                       c.Allreduce(&s, 1, DataType::kInt, ReduceOp::kSum, {1});
                       sum_row[r] = s;
                       long long mx = r * 10;
                       c.Allreduce(&mx, 1, DataType::kLongLong, ReduceOp::kMax, c.AllAxes());
                       max_all[r] = static_cast<int>(mx);
                       int mn = r;
                       c.Allreduce(&mn, 1, DataType::kInt, ReduceOp::kMin, {0});
                       min_col[r] = mn;
                       // Reduce along x onto the member at x=1; others' recv stays.
                       int in = r + 1, out = -1;
                       c.ReduceSum(&in, &out, 1, DataType::kInt, {0}, Coords{1, me[1]});
                       reduced[r] = out;
                       // Along y, member i sends i+1 doubles (its rank, repeated).
                       const int i = c.GroupIndex({1}, me);
                       std::vector<double> send(i + 1, r), recv(6, -1);
                       c.Allgatherv(send.data(), i + 1, recv.data(), {1, 2, 3}, {0, 1, 3},
                                    DataType::kDouble, {1});
                       gathered[r] = recv;
                       c.Barrier();
                     }),
            0);
  EXPECT_EQ(world.error(), "");
  EXPECT_EQ(bcast, (std::vector<int>{102, 102, 102, 105, 105, 105}));
  EXPECT_EQ(sum_row, (std::vector<int>{3, 3, 3, 12, 12, 12}));
  EXPECT_EQ(max_all, (std::vector<int>{50, 50, 50, 50, 50, 50}));
  EXPECT_EQ(min_col, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(reduced, (std::vector<int>{-1, -1, -1, 1 + 4, 2 + 5, 3 + 6}));
  EXPECT_EQ(gathered[0], (std::vector<double>{0, 1, 1, 2, 2, 2}));
  EXPECT_EQ(gathered[4], (std::vector<double>{3, 4, 4, 5, 5, 5}));
}

TEST(SimCommTest, ReduceScatterGivesEachMemberTheSumOfItsPiece) {
  // Along y (3 members), pieces of 1, 0 and 2 elements: member i gets the sum over the row
  // of the elements at its displacement.
  SimWorld world({2, 3});
  std::vector<std::vector<int>> got(6);
  EXPECT_EQ(RunRanks(world,
                     [&](Comm& c) {
                       const int r = c.rank();
                       const std::vector<int> send = {r, 10 * r, 100 * r};
                       std::vector<int> recv(2, -1);
                       c.ReduceScatterSum(send.data(), recv.data(), {1, 0, 2}, DataType::kInt, {1});
                       got[r] = recv;
                     }),
            0);
  EXPECT_EQ(world.error(), "");
  EXPECT_EQ(got[0], (std::vector<int>{0 + 1 + 2, -1}));
  EXPECT_EQ(got[1], (std::vector<int>{-1, -1}));  // no piece: untouched
  EXPECT_EQ(got[2], (std::vector<int>{30, 300}));
  EXPECT_EQ(got[5], (std::vector<int>{120, 1200}));
}

TEST(SimCommTest, PointToPointAroundARing) {
  SimWorld world({4});
  std::vector<std::vector<float>> ring(4), fan(4);
  EXPECT_EQ(
      RunRanks(
          world,
          [&](Comm& c) {
            const int r = c.rank();
            // Send to r+1, receive from r-1.
            std::vector<float> v = {float(r), float(10 * r)};
            c.SendrecvReplace(v.data(), 2, DataType::kFloat, (r + 1) % 4, (r + 3) % 4);
            ring[r] = v;
            // Rank 0 sends its own pair to every other rank.
            std::vector<float> mine = {7.f + r, 8.f + r}, got = {-1, -1};
            std::vector<Message> sends;
            if (r == 0) {
              for (int p = 1; p < 4; ++p) sends.push_back({p, mine.data(), 2});
            }
            c.Exchange(sends, r == 0 ? Message{} : Message{0, got.data(), 2}, DataType::kFloat);
            fan[r] = got;
          }),
      0);
  EXPECT_EQ(world.error(), "");
  EXPECT_EQ(ring[0], (std::vector<float>{3, 30}));
  EXPECT_EQ(ring[1], (std::vector<float>{0, 0}));
  EXPECT_EQ(ring[2], (std::vector<float>{1, 10}));
  EXPECT_EQ(fan[0], (std::vector<float>{-1, -1}));
  for (int r = 1; r < 4; ++r) EXPECT_EQ(fan[r], (std::vector<float>{7, 8})) << r;
}

TEST(SimCommTest, MembersNamingDifferentRootsStopTheWorld) {
  SimWorld world({2});
  const int aborted = RunRanks(world, [](Comm& c) {
    int v = c.rank();
    c.Bcast(&v, 1, DataType::kInt, {0}, Coords{c.rank()});  // each names itself
    c.Barrier();
  });
  EXPECT_EQ(aborted, 2);
  EXPECT_TRUE(std::regex_match(
      world.error(), std::regex("simulated Bcast along \\[0\\]: rank \\([01]\\) names group "
                                "member [01] as the root but another member names [01]")))
      << world.error();
}

TEST(SimCommTest, AllgathervCountsThatDisagreeWithTheSendersStopTheWorld) {
  SimWorld world({2});
  RunRanks(world, [](Comm& c) {
    std::vector<int> send(2, 1), recv(4);
    // Member 1 sends 1 element but everyone expects 2 from it.
    c.Allgatherv(send.data(), c.rank() == 0 ? 2 : 1, recv.data(), {2, 2}, {0, 2}, DataType::kInt,
                 {0});
    c.Barrier();
  });
  EXPECT_TRUE(std::regex_match(
      world.error(), std::regex("simulated Allgatherv along \\[0\\]: rank \\([01]\\) expects "
                                "2 elements from group member 1, which sends 1")))
      << world.error();
}

TEST(SimCommTest, AMessageOfTheWrongSizeStopsTheWorld) {
  SimWorld world({2});
  RunRanks(world, [](Comm& c) {
    std::vector<double> data(3, 1.0);
    if (c.rank() == 0) {
      c.Exchange({Message{1, data.data(), 3}}, Message{}, DataType::kDouble);
    } else {
      c.Exchange({}, Message{0, data.data(), 2}, DataType::kDouble);
    }
  });
  EXPECT_EQ(world.error(),
            "simulated message from rank (0) to rank (1) has 3 elements, not the 2 expected");
}

TEST(SimCommTest, AMessageNobodySendsIsADeadlockNotAHang) {
  SimWorld world({2}, /*timeout_s=*/0.2);
  const auto start = std::chrono::steady_clock::now();
  const int aborted = RunRanks(world, [](Comm& c) {
    if (c.rank() == 0) {
      int v = 0;
      c.Exchange({}, Message{1, &v, 1}, DataType::kInt);  // rank 1 never sends
    }
  });
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(aborted, 1);
  EXPECT_EQ(world.error(),
            "simulated ranks deadlocked: a rank waited more than 0.2 s for its peers");
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 5.0);
}

TEST(SimCommTest, AFailedWorldKeepsItsFirstErrorAndAbortsLaterCalls) {
  SimWorld world({2});
  world.Fail("first");
  world.Fail("second");
  EXPECT_EQ(world.error(), "first");
  EXPECT_EQ(RunRanks(world, [](Comm& c) { c.Barrier(); }), 2);
}

}  // namespace
}  // namespace meshtune::runtime
