// Redistribution under MPI: tests/redistribution_mpi_app on 4 ranks (2x2) and 6 ranks
// (2x3) runs every pair of the test distributions of several matrices through MpiComm's
// Alltoallv and finds every rank's target storage right.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

TEST(RedistributionMpiTest, PlansRunUnderMpi) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string out = std::string(tmp ? tmp : "/tmp") + "/redistribution_out.txt";
  for (const auto& [ranks, mesh] : {std::pair<int, std::string>{4, "x=2,y=2"}, {6, "x=2,y=3"}}) {
    const std::string cmd = "timeout 120 mpirun -n " + std::to_string(ranks) +
                            " --oversubscribe tests/redistribution_mpi_app --mesh " + mesh + " >" +
                            out + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << cmd << "\n" << text.str();
    // 3 x 2 matrices, 13 x 13 pairs of distributions each.
    EXPECT_NE(text.str().find("redistributed 1014 plans on " + std::to_string(ranks) +
                              " ranks: 0 wrong"),
              std::string::npos)
        << text.str();
  }
}

}  // namespace
