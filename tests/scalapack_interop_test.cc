// ScaLAPACK interop under mpirun on 4 ranks (tests/scalapack_interop_app): PSGEMM and the
// model's best meshtune schedule, run from the same block-cyclic layouts (NB 64, 2x2 grid)
// and from whole inputs on rank 0 / every rank, give the same C element by element. The
// inputs are multiples of 1/8, so every sum is exact in f32 and any correct schedule
// matches PSGEMM exactly.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace {

TEST(ScalapackInteropTest, TunedScheduleFromBlockCyclicMatchesPsgemm) {
  const meshtune::testing::CliRun r = meshtune::testing::Mpirun(4, "tests/scalapack_interop_app");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* line :
       {"256x192x320, A and B block-cyclic: schedule on x=2,y=2, largest relative difference 0\n",
        "256x192x320, A and B root and replicated: schedule on x=2,y=2, largest relative "
        "difference 0\n",
        "200x130x70, A and B block-cyclic: schedule on x=2,y=2, largest relative difference 0\n",
        "200x130x70, A and B root and replicated: schedule on x=2,y=2, largest relative "
        "difference 0\n",
        "256x384x128 in place as C[n,m] += B[n,k] * A[k,m] (grid(y,x)): largest relative "
        "difference 0, shards are the local arrays: yes\n",
        "interop: 5 cases, largest relative difference 0\n",
        "refused: ExecuteInLayouts: --layout names tensor 'D', which C[m,n] += A[m,k] * B[k,n] "
        "does not have (it has C, A, B)\n",
        "refused: ExecuteInLayouts: --layout A: layout 'cyclic(64)' is not block, cyclic(MB,NB) "
        "(MB, NB from 1 to 2147483647), replicated, root or grid(AXIS or *,...)\n",
        "refused: ExecuteInLayouts takes 3 pointers (one per tensor), got 1\n"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
  }
}

}  // namespace
