// Given layouts: a program that starts from the application's layouts and ends
// in the output's computes the right answer. For small problems on small meshes, every
// legal point of the space (or a seeded sample: kPoints a space) with A, B and C given in
// block-cyclic layouts with partial blocks, on one rank, on every rank, or in blocks over named
// axes, runs in the mesh simulator: the inputs come only from their given storage (the shards
// start as NaN), the output is checked in its given layout, element by element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/space_sweep.h"

namespace meshtune::testing {

void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.Name(); }

namespace {

// 10 points a space in the suite (37 spaces, 25 s of a core: a point on 2x2 is 0.13 s);
// //tests:given_layouts_full_test checks 18.
#ifdef MESHTUNE_WIDE_SWEEP
constexpr int64_t kPoints = 18;
#else
constexpr int64_t kPoints = 10;
#endif

std::vector<SweepCase> Cases() {
  const std::vector<std::vector<std::string>> layouts = {
      {"A=cyclic(2,3)", "B=cyclic(3,2)", "C=cyclic(2,2)"},
      {"A=root", "B=replicated", "C=root"},
      {"A=replicated", "C=replicated"},
      {"B=cyclic(5,1)", "C=cyclic(1,4)"},
  };
  std::vector<SweepCase> cases;
  for (const std::string expr : {"C[m,n] += A[m,k] * B[k,n]", "C[m,n] = A[m,k] * B[k,n]"}) {
    for (const std::string mesh : {"x=2", "x=3", "x=2,y=2", "x=2,y=3"}) {
      for (const std::vector<std::string>& l : layouts) {
        cases.push_back({expr, "m=12,n=6,k=12", mesh, false, l});
      }
    }
  }
  // Block layouts over named axes (grid): the schedule's own sharding costs nothing to
  // reach; others redistribute.
  cases.push_back({"C[m,n] += A[m,k] * B[k,n]",
                   "m=12,n=6,k=12",
                   "x=2,y=2",
                   false,
                   {"A=grid(y,x)", "B=grid(x,*)", "C=grid(x,y)"}});
  cases.push_back(
      {"C[m,n] = A[m,k] * B[k,n]", "m=12,n=6,k=12", "x=3", false, {"A=grid(*,x)", "C=grid(x,*)"}});
  // Replicated schedules take their copies from the given layouts.
  cases.push_back({"C[m,n] += A[m,k] * B[k,n]",
                   "m=6,n=8,k=6",
                   "x=2,y=2",
                   true,
                   {"A=cyclic(4,4)", "B=root", "C=cyclic(3,5)"}});
  // Another problem: mat-vec and a transposed operand.
  cases.push_back({"w[i] += A[i,j] * v[j]",
                   "i=12,j=12",
                   "x=2,y=2",
                   false,
                   {"A=cyclic(5,3)", "v=root", "w=replicated"}});
  cases.push_back(
      {"C[m,n] += A[k,m] * B[k,n]", "m=8,n=12,k=6", "x=3", false, {"A=cyclic(4,4)", "C=root"}});
  return cases;
}

class GivenLayoutsTest : public ::testing::TestWithParam<SweepCase> {};

TEST_P(GivenLayoutsTest, EveryCheckedLegalPointVerifiesFromItsLayouts) {
  const SweepCase& c = GetParam();
  absl::StatusOr<SweepResult> r = SweepSpace(c, kPoints, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  std::cout << c.Name() << ": " << r->legal_points << " legal, " << r->checked << " checked, "
            << r->failures.size() << " failures\n";
  EXPECT_GT(r->checked, 0);
  EXPECT_EQ(r->checked, std::min<int64_t>(r->legal_points, kPoints));
  for (size_t i = 0; i < r->failures.size() && i < 5; ++i) {
    ADD_FAILURE() << r->failures[i].error << "\n" << r->failures[i].trace;
  }
}

INSTANTIATE_TEST_SUITE_P(Spaces, GivenLayoutsTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<SweepCase>& info) {
                           return absl::StrCat("case", info.index);
                         });

}  // namespace
}  // namespace meshtune::testing
