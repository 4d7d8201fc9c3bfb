// Redistribution under MPI: tests/redistribution_mpi_app on 4 ranks (2x2) and 6 ranks
// (2x3) runs every pair of the test distributions of several matrices through MpiComm's
// Alltoallv and finds every rank's target storage right.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace {

TEST(RedistributionMpiTest, PlansRunUnderMpi) {
  for (const auto& [ranks, mesh] : {std::pair<int, std::string>{4, "x=2,y=2"}, {6, "x=2,y=3"}}) {
    const meshtune::testing::CliRun r =
        meshtune::testing::Mpirun(ranks, "tests/redistribution_mpi_app", "--mesh " + mesh);
    EXPECT_EQ(r.status, 0) << r.out;
    // 3 x 2 matrices, 13 x 13 pairs of distributions each.
    EXPECT_NE(
        r.out.find("redistributed 1350 plans on " + std::to_string(ranks) + " ranks: 0 wrong"),
        std::string::npos)
        << r.out;
  }
}

}  // namespace
