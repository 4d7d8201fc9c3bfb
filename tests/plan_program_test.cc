// Plans of programs of several statements through meshtune's C++ API (meshtune/plan.h) in an
// MPI application (tests/plan_program_app.cc): the two-GEMM MLP, attention-like, a TTM
// chain, three statements with an element-wise one between, an input read in two layouts, each
// planned by estimate on 1 to 6 ranks with extents that do not divide the mesh, one Execute over
// all the program's tensors, every tensor it writes (the intermediates too) checked on every rank
// and gathered against the application's own serial reference; the MLP from a wisdom file of its
// program tune; measure mode and given layouts refused with their messages; a program the wisdom
// file does not hold is NotFound.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace {

// The output of plan_program_app `args` under mpirun on `ranks` ranks, whose exit status
// must be `status`.
std::string RunMpi(int ranks, const std::string& args, int status) {
  const meshtune::testing::CliRun r =
      meshtune::testing::Mpirun(ranks, "tests/plan_program_app", args);
  EXPECT_EQ(r.status, status) << args;
  return r.out;
}

constexpr char kMlp[] = "--expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]' ";

TEST(PlanProgramTest, EstimatedProgramsComputeEveryTensorOnTheApplicationsData) {
  struct Case {
    std::string args, tensors;
    std::vector<int> ranks;
  };
  const Case cases[] = {
      {std::string(kMlp) + "--extents b=7,d=5,e=3,f=11", "H X W1 Y W2", {1, 2, 3, 4}},
      {"--expr 'S[i,j] = Q[i,d] * K[j,d]; O[i,e] = S[i,j] * V[j,e]' --extents i=9,j=7,d=5,e=6",
       "S Q K O V",
       {4, 6}},
      {"--expr 'Y[i,b,c] = X[a,b,c] * U[a,i]; Z[i,j,c] = Y[i,b,c] * V[b,j]' "
       "--extents a=5,b=6,c=7,i=3,j=4",
       "Y X U Z V",
       {4, 6}},
      {"--expr 'H[b,f] = X[b,d] * W1[d,f]; G[b,f] = H[b,f] + B[b,f]; Y[b,e] += G[b,f] * W2[f,e]' "
       "--extents b=6,d=5,e=4,f=7",
       "H X W1 G B Y W2",
       {3, 4}},
      // X read by rows in one statement and whole in the other: moved from its first reader.
      {"--expr 'H[b,f] = X[b,d] * W1[d,f]; G[b,e] = X[b,d] * W3[d,e]' "
       "--extents b=12,d=30,e=2,f=12",
       "H X W1 G W3",
       {4}},
  };
  for (const Case& c : cases) {
    for (int ranks : c.ranks) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks: " + c.args);
      const std::string out = RunMpi(ranks, "--mode estimate " + c.args, 0);
      EXPECT_NE(out.find("tensors: " + c.tensors + "\n"), std::string::npos) << out;
      EXPECT_NE(out.find("program: verified\n"), std::string::npos) << out;
    }
  }
}

TEST(PlanProgramTest, AProgramIsPlannedFromItsWisdomRecord) {
  const std::string out = RunMpi(4,
                                 std::string(kMlp) +
                                     "--extents b=7,d=5,e=3,f=11 --mode wisdom --wisdom "
                                     "tests/plan_program_wisdom.jsonl",
                                 0);
  EXPECT_NE(out.find("program: verified\n"), std::string::npos) << out;
  // Renamed, the same workload.
  const std::string renamed = RunMpi(
      4,
      "--expr 'A[p,q] = B[p,r] * C[r,q]; D[p,s] = A[p,q] * E[q,s]' --extents p=7,r=5,s=3,q=11 "
      "--mode wisdom --wisdom tests/plan_program_wisdom.jsonl",
      0);
  EXPECT_NE(renamed.find("tensors: A B C D E\n"), std::string::npos) << renamed;
  EXPECT_NE(renamed.find("program: verified\n"), std::string::npos) << renamed;
  const std::string other = RunMpi(4,
                                   std::string(kMlp) +
                                       "--extents b=8,d=5,e=3,f=11 --mode wisdom --wisdom "
                                       "tests/plan_program_wisdom.jsonl",
                                   1);
  EXPECT_NE(other.find("program: error: no tuning record for H[b,f] = X[b,d] * W1[d,f]; "),
            std::string::npos)
      << other;
  EXPECT_NE(other.find("in wisdom file tests/plan_program_wisdom.jsonl\n"), std::string::npos)
      << other;
}

TEST(PlanProgramTest, AProgramIsPlannedByMeasuringOnTheApplicationsRanks) {
  // The joint programs (and "separate") measured side by side on the application's own
  // ranks; the winner bound and checked against the serial reference.
  const std::string out =
      RunMpi(2, std::string(kMlp) + "--extents b=7,d=5,e=3,f=11 --mode measure", 0);
  EXPECT_NE(out.find("tensors: H X W1 Y W2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("measured: "), std::string::npos) << out;
  EXPECT_NE(out.find("program: verified\n"), std::string::npos) << out;
}

TEST(PlanProgramTest, WhatAProgramCannotTakeIsRefusedByName) {
  const std::string clash = RunMpi(
      2, "--expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[e,f] * W2[f,e]' --extents b=7,d=5,e=3,f=11",
      1);
  EXPECT_NE(clash.find("program: error: "), std::string::npos) << clash;
}

}  // namespace
