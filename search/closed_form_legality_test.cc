// The differential test of closed-form legality (ir/legality_closed_form.h): on whole
// spaces of small problems, every tensor option of every (nest, rotation) cell gets the same
// verdict and the same rejection code from an Evaluator judging by the closed forms as from
// one judging by isl alone (also with distributed indices split further); and the closed
// forms decide most of the options themselves. In the suite, a space of more than
// kMaxOptions options has a seeded sample of that many judged (each option drawn with the
// same chance, over every cell); //search:closed_form_legality_sweep judges every option.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/legality_closed_form.h"
#include "search/evaluator.h"

namespace meshtune::search {
namespace {

// The suite's spaces are cut where judging every option by isl takes minutes on 2 cores
// (the split square, the ragged batched matmul); //search:closed_form_legality_sweep
// judges the wider ones.
#ifdef MESHTUNE_WIDE_SWEEP
constexpr bool kWide = true;
constexpr int64_t kMaxOptions = INT64_MAX;
#else
constexpr bool kWide = false;
// isl takes 0.2 to 0.6 ms an option on 2 cores: the largest spaces (85536 options) would
// take most of a minute each.
constexpr int64_t kMaxOptions = 6000;
#endif

struct Case {
  std::string expr, extents, mesh;
  bool replication = false;
  bool split = false;  // SpaceOptions::split_distributed
};

class ClosedFormLegalityTest : public ::testing::TestWithParam<Case> {};

TEST_P(ClosedFormLegalityTest, SameVerdictAsIslOnEveryOption) {
  const Case& k = GetParam();
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(k.expr, k.extents);
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(k.mesh);
  ASSERT_TRUE(problem.ok() && mesh.ok());
  // Two bases: the isl context's memo is per base, and the two judges must not share it.
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*problem, *mesh);
  absl::StatusOr<ir::Computation> isl_base = ir::Computation::Create(*problem, *mesh);
  ASSERT_TRUE(base.ok() && isl_base.ok());
  SpaceOptions options;
  options.allow_replication = k.replication;
  options.split_distributed = k.split;
  absl::StatusOr<Space> space = Space::Build(*base, options);
  absl::StatusOr<Space> isl_space = Space::Build(*isl_base, options);
  ASSERT_TRUE(space.ok()) << space.status();
  ASSERT_TRUE(isl_space.ok()) << isl_space.status();
  ASSERT_EQ(space->nests().size(), isl_space->nests().size());
  Evaluator fast(*base, *space, cost::CostParams{}, /*closed_form_legality=*/true);
  Evaluator isl(*isl_base, *isl_space, cost::CostParams{}, /*closed_form_legality=*/false);
  std::map<std::string, int64_t> reasons;
  int64_t all_options = 0, options_judged = 0, mismatches = 0;
  for (const NestChoices& choices : space->nests()) {
    for (const auto& o : choices.options)
      all_options += static_cast<int64_t>(choices.rotations.size() * o.size());
  }
  // Every option, or each with the chance kMaxOptions / options.
  std::mt19937_64 rng(11);
  std::bernoulli_distribution judged(std::min(1.0, static_cast<double>(kMaxOptions) / all_options));
  for (size_t n = 0; n < space->nests().size(); ++n) {
    const NestChoices& choices = space->nests()[n];
    for (size_t r = 0; r < choices.rotations.size(); ++r) {
      for (size_t t = 0; t < choices.options.size(); ++t) {
        for (size_t o = 0; o < choices.options[t].size(); ++o) {
          if (all_options > kMaxOptions && !judged(rng)) continue;
          const int ni = static_cast<int>(n), ri = static_cast<int>(r), oi = static_cast<int>(o);
          const std::string want = isl.OptionReason(ni, ri, t, oi);
          const std::string got = fast.OptionReason(ni, ri, t, oi);
          ++options_judged;
          ++reasons[want.empty() ? "legal" : want];
          if (got != want && ++mismatches <= 5) {
            ADD_FAILURE() << choices.nest.Describe() << "\n"
                          << space->tensors()[t] << ": " << choices.options[t][o].Describe()
                          << (choices.rotations[r].loop.empty()
                                  ? ""
                                  : " rotated " + choices.rotations[r].loop)
                          << ": closed forms say '" << got << "', isl '" << want << "'";
          }
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  const int64_t closed = fast.legality().closed_form_checks();
  const int64_t fallback = fast.legality().isl_checks();
  EXPECT_EQ(isl.legality().closed_form_checks(), 0);
  // Outside the forms are only gathers the extent cuts short, a skew that an output walks;
  // and in the split spaces, loops distributed a second time (3 of 4 checks closed on 2x2).
  // Rings are decided by arithmetic (ClosedFormRing), compared here as every other rule.
  EXPECT_GT(closed, (k.split ? 2 : 4) * fallback)
      << closed << " decided, " << fallback << " left to isl";
  std::string seen;
  for (const auto& [reason, count] : reasons) absl::StrAppend(&seen, reason, "=", count, " ");
  EXPECT_GT(options_judged, 0);
  std::printf("%s on %s%s: %lld options, %lld judged; %lld checks closed, %lld by isl; %s\n",
              k.expr.c_str(), k.mesh.c_str(), k.replication ? " (replication)" : "",
              static_cast<long long>(all_options), static_cast<long long>(options_judged),
              static_cast<long long>(closed), static_cast<long long>(fallback), seen.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Spaces, ClosedFormLegalityTest,
    ::testing::Values(
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=4,k=8", "x=2"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=2,y=2"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=2,y=2", true},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=12,n=6,k=12", "x=2,y=3"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=2,y=2,z=2"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=16,n=16,k=32", "x=4,y=4"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=16,n=8,k=16", "x=4,y=2", true},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=1,y=4"},
        Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=4,n=2,k=4", "x=2"},
        Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=2,n=2,k=4", "x=2,y=2"},
        Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=6,n=2,k=6", "x=2,y=3"},
        Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=2,n=2,k=2", "x=2,y=2,z=2"},
        Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=2,j=4,k=2,r=2", "x=2"},
        Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=2,j=2,k=2,r=4", "x=2,y=2"},
        Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=2,j=2,k=2,r=4", "x=2,y=2", true},
        Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=6,j=2,k=3,r=6", "x=2,y=3"},
        Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=2,j=2,k=2,r=4", "x=2,y=2,z=2"},
        // Distributed indices split further: an index on two axes, a distributed index
        // divided, rotations by two of three axes, skews on one of a dim's axes.
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=4,k=8", "x=4", false, true},
        Case{"C[m,n] += A[m,k] * B[k,n]", kWide ? "m=8,n=8,k=8" : "m=4,n=4,k=8", "x=2,y=2", false,
             true},
        // Blocks that do not divide the extents: a short last block (docs/design.md).
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=7,n=5,k=3", "x=2"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=13,n=11,k=9", "x=3"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=13,n=11,k=9", "x=2,y=2"},
        Case{"C[m,n] += A[m,k] * B[k,n]", "m=13,n=11,k=9", "x=2,y=3", true},
        Case{"C[m,n] += A[k,m] * B[k,n]", "m=7,n=5,k=9", "x=2,y=2"},
        Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", kWide ? "b=3,m=5,n=7,k=3" : "b=3,m=5,n=3,k=3",
             "x=2,y=2"},
        Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=7,j=3,k=5,r=5", "x=3"},
        Case{"C[m,n] += A[m,k] * B[k,n]", kWide ? "m=7,n=5,k=3" : "m=5,n=3,k=3", "x=2,y=2", false,
             true}));

}  // namespace
}  // namespace meshtune::search
