// The MPI path swept (tests/mpi_sweep.h): points drawn from whole spaces, chosen to cover
// every communication pattern kind with and without prefetch, run as one mpirun job through
// the executor over MpiComm, each checked against the problem as stated and for coverage
// (runtime/oracle.h). The suite runs a small sample on 4 ranks; the wide sweep
// (//tests:mpi_sweep_wide, MESHTUNE_WIDE_SWEEP) more points a space, 3D meshes on 8 ranks.
#include "tests/mpi_sweep.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace meshtune::testing {
namespace {

#ifdef MESHTUNE_WIDE_SWEEP
constexpr bool kWide = true;
#else
constexpr bool kWide = false;
#endif

std::vector<SweepCase> Spaces() {
  const std::string mm = "C[m,n] += A[m,k] * B[k,n]";
  std::vector<SweepCase> spaces = {
      {mm, "m=12,n=8,k=12", "x=2,y=2"},
      {mm, "m=12,n=8,k=12", "x=3"},
      {mm, "m=4,n=4,k=12", "x=4", false, {}, false, false, /*all_to_all=*/true},
      {mm, "m=2,n=2,k=24", "x=2,y=2", /*allow_replication=*/true},
      {"w[i] += A[i,j] * v[j]", "i=12,j=12", "x=3", true},
      {"C[i,j] = A[i,j] + B[i,j]", "i=12,j=6", "x=2,y=2"},
      {"C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=2,m=4,n=6,k=4", "x=2"},
  };
  SweepCase rings{mm, "m=12,n=8,k=12", "x=4"};
  rings.rings_only = true;
  spaces.push_back(rings);
  SweepCase on_layer{mm, "m=2,n=2,k=24", "x=2,y=2", true};
  on_layer.result_on_layer = true;
  spaces.push_back(on_layer);
  SweepCase steps{mm, "m=12,n=8,k=12", "x=2,y=2"};
  steps.rotation_steps = true;
  spaces.push_back(steps);
  if (kWide) {
    spaces.push_back({mm, "m=12,n=8,k=12", "x=2,y=3", true});
    spaces.push_back({mm, "m=12,n=8,k=12", "x=2,y=2,z=2", true});
    spaces.push_back({"O[i,l] += B[i,j,k] * C[j,l] * D[k,l]", "i=6,j=4,k=4,l=6", "x=2", true});
    spaces.push_back({"C[i,j,l] += A[i,j,k] * B[k,l]", "i=4,j=6,k=4,l=6", "x=3", true});
    SweepCase split{mm, "m=12,n=8,k=12", "x=4"};
    split.split_distributed = true;
    spaces.push_back(split);
  }
  return spaces;
}

TEST(MpiSweepTest, SampledPointsOfEveryPatternVerifyUnderMpirun) {
  const int64_t per_space = kWide ? 60 : 6;
  absl::StatusOr<std::vector<MpiPoint>> points = DrawMpiPoints(Spaces(), per_space, 1);
  ASSERT_TRUE(points.ok()) << points.status();
  const char* tmp = std::getenv("TEST_TMPDIR");
  absl::StatusOr<MpiSweepResult> r =
      RunMpiSweep("tests/mpi_sweep_worker", kWide ? 8 : 4, *points, tmp ? tmp : "/tmp");
  ASSERT_TRUE(r.ok()) << r.status();
  std::cout << r->points << " points run under mpirun, " << r->verified << " verified, "
            << r->failures.size() << " failures; by pattern kind:\n";
  for (const auto& [kind, n] : r->kinds) std::cout << "  " << kind << ": " << n << "\n";
  EXPECT_EQ(r->verified, r->points);
  for (size_t i = 0; i < r->failures.size() && i < 5; ++i) ADD_FAILURE() << r->failures[i];
  // Every pattern kind, and prefetched transfers and reductions, ran.
  for (const std::string kind :
       {"Broadcast", "AllGather", "AllToAll", "Shift", "SendRecv", "Reduce", "ReduceScatter",
        "AllReduce", "RingReduce", "Broadcast prefetched", "AllGather prefetched",
        "Shift prefetched", "SendRecv prefetched", "AllReduce prefetched"}) {
    EXPECT_GT(r->kinds[kind], 0) << "no point ran " << kind;
  }
}

}  // namespace
}  // namespace meshtune::testing
