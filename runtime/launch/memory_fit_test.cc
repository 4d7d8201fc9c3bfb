// The memory check before a run: which launches put every rank on this machine, the exact
// refusal messages (ranks on this machine, or one rank elsewhere) for the footprint of a
// replayed SUMMA, and the boundary.
#include "runtime/launch/memory_fit.h"

#include <gtest/gtest.h>

#include <string>

#include "base/check.h"
#include "ir/computation.h"
#include "ir/legality.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"

namespace meshtune::runtime {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// SUMMA on 2x2 with k in two steps: per rank 3 shards and 2 transfer buffers of
// (extent/2)^2 elements each, as ir::ComputeFootprint counts them.
ir::Footprint Summa(int64_t extent, const std::string& dtype = "f32") {
  const std::string e = std::to_string(extent);
  absl::StatusOr<ir::Problem> problem =
      ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=" + e + ",n=" + e + ",k=" + e, dtype);
  absl::StatusOr<ir::Computation> base =
      ir::Computation::Create(*problem, *ir::ParseMesh("x=2,y=2"));
  absl::StatusOr<ir::Trace> trace = ir::ParseTrace(
      "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 2)\n"
      "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, "
      "n@y)\n"
      "communicate(A, ko)\ncommunicate(B, ko)\ntensorize([mi, ni, ki], matmul)\n");
  ir::Replay replay = ir::ReplayTrace(*base, *trace);
  MT_CHECK(replay.status.ok());
  return ir::ComputeFootprint(replay.computation);
}

TEST(RanksOnThisMachineTest, MpirunAloneStartsEveryRankHere) {
  LaunchOptions options;
  EXPECT_EQ(RanksOnThisMachine(4, options), 4);
  options.launcher = {"/opt/openmpi/bin/mpirun"};
  EXPECT_EQ(RanksOnThisMachine(4, options), 4);
  options.hostfile = "hosts";
  EXPECT_EQ(RanksOnThisMachine(4, options), 1);
  options.hostfile = "";
  options.extra_args = {"--host", "a,b"};
  EXPECT_EQ(RanksOnThisMachine(4, options), 1);
  options.extra_args = {};
  options.launcher = {"mpirun", "--map-by", "node"};
  EXPECT_EQ(RanksOnThisMachine(4, options), 1);
  options.launcher = {"srun"};
  EXPECT_EQ(RanksOnThisMachine(4, options), 1);
}

TEST(CheckRunFitsMemoryTest, TooManyRanksHereIsRefusedWithTheirTotal) {
  // 5 MiB a rank (shards 3 MiB, buffers 2 MiB), 20 MiB for 4 ranks.
  const absl::Status s = CheckRunFitsMemory(Summa(1024), 4, LaunchOptions{}, 16 * kMiB);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(
      s.message(),
      "each rank needs 5 MiB (shards 3 MiB, transfer buffers 2 MiB), 20 MiB for the 4 ranks on "
      "this machine, but it has 16 MiB of memory; use smaller extents, or more ranks on more "
      "machines (--hostfile)");
}

TEST(CheckRunFitsMemoryTest, SizesAreFormattedToFourDigits) {
  // 1,000,000 bytes a shard or buffer: 3,000,000 + 2,000,000 a rank.
  const absl::Status s = CheckRunFitsMemory(Summa(1000), 4, LaunchOptions{}, 16 * kMiB);
  EXPECT_EQ(
      s.message(),
      "each rank needs 4.768 MiB (shards 2.861 MiB, transfer buffers 1.907 MiB), 19.07 MiB for "
      "the 4 ranks on this machine, but it has 16 MiB of memory; use smaller extents, or more "
      "ranks on more machines (--hostfile)");
  // f64 doubles every size.
  EXPECT_EQ(
      CheckRunFitsMemory(Summa(1000, "f64"), 4, LaunchOptions{}, 32 * kMiB).message(),
      "each rank needs 9.537 MiB (shards 5.722 MiB, transfer buffers 3.815 MiB), 38.15 MiB for "
      "the 4 ranks on this machine, but it has 32 MiB of memory; use smaller extents, or more "
      "ranks on more machines (--hostfile)");
}

TEST(CheckRunFitsMemoryTest, ARankElsewhereIsCheckedAlone) {
  LaunchOptions options;
  options.hostfile = "hosts";
  EXPECT_TRUE(CheckRunFitsMemory(Summa(1024), 4, options, 16 * kMiB).ok());
  const absl::Status s = CheckRunFitsMemory(Summa(1024), 4, options, 4 * kMiB);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(
      s.message(),
      "each rank needs 5 MiB (shards 3 MiB, transfer buffers 2 MiB) but this machine has 4 MiB "
      "of memory; use smaller extents or more ranks");
}

TEST(CheckRunFitsMemoryTest, ExactlyEnoughFits) {
  EXPECT_TRUE(CheckRunFitsMemory(Summa(1024), 4, LaunchOptions{}, 20 * kMiB).ok());
  EXPECT_FALSE(CheckRunFitsMemory(Summa(1024), 4, LaunchOptions{}, 20 * kMiB - 1).ok());
  LaunchOptions srun;
  srun.launcher = {"srun"};
  EXPECT_TRUE(CheckRunFitsMemory(Summa(1024), 4, srun, 5 * kMiB).ok());
  EXPECT_FALSE(CheckRunFitsMemory(Summa(1024), 4, srun, 5 * kMiB - 1).ok());
}

TEST(CheckRunFitsMemoryTest, ARunWithoutRanksIsCheckedAsOneRank) {
  // Not a division by zero: a rank count below 1 is taken as one rank.
  for (const int64_t ranks : {0, -3}) {
    EXPECT_TRUE(CheckRunFitsMemory(Summa(1024), ranks, LaunchOptions{}, 5 * kMiB).ok()) << ranks;
    EXPECT_EQ(CheckRunFitsMemory(Summa(1024), ranks, LaunchOptions{}, 4 * kMiB).message(),
              "each rank needs 5 MiB (shards 3 MiB, transfer buffers 2 MiB) but this machine has 4 "
              "MiB of memory; use smaller extents or more ranks")
        << ranks;
  }
}

TEST(CheckRunFitsMemoryTest, UnknownMemoryIsNeverRefused) {
  EXPECT_TRUE(CheckRunFitsMemory(Summa(1 << 20), 4, LaunchOptions{}, 0).ok());
}

TEST(CheckRunFitsMemoryTest, ThisMachinesMemoryIsKnownAndLarge) {
  EXPECT_GT(MachineMemoryBytes(), 64 * kMiB);
}

}  // namespace
}  // namespace meshtune::runtime
