// The property behind "a schedule called legal computes the right answer": for small
// problems on small meshes, every legal point of the schedule space — or a seeded sample
// where the space is larger than --max-points — replays, lowers and verifies against the
// reference on every rank of the mesh simulator (tests/space_sweep.h), both as the runtime
// owning its shards and on the caller's memory (tests/bound_run.h), twice. The spaces hold
// prefetched schedules (double-buffered transfers and reductions, search/space.h), so
// those are swept too; each space's line says how many of its checked points prefetch.
//
// The suite runs a sample per space (--max-points 24 by default); the wider sweep
// (//tests:legal_is_correct_sweep) runs more spaces (see Cases) with --max-points 2000. Problems:
// matmul, transposed operands, batched matmul, MTTKRP, C[i,j,l] += A[i,j,k] * B[k,l],
// mat-vec (w[i] += A[i,j] * v[j]: x and y name mesh axes), element-wise add and a split-k shape,
// with extents that divide unevenly over some meshes (6, 12: non-powers of two); meshes x=2, x=3,
// x=4, 2x2, 2x3, 2x2x2; each with and without replicated layouts. Then the spaces with
// distributed indices split further (SpaceOptions::split_distributed) on x=4, 2x2 and 2x2x2,
// with rotations in steps (SpaceOptions::rotation_steps) on 2x2 and 2x3, and with all-to-all
// transfers (SpaceOptions::all_to_all: steps that straddle a layout's blocks) on x=4, 2x2
// (also with copies: each block read from the copy nearest the reader) and 2x3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/bound_run.h"
#include "tests/space_sweep.h"

namespace meshtune::testing {

// gtest prints a case by its name (found by argument-dependent lookup).
void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.Name(); }

namespace {

int64_t g_max_points = 24;
#ifdef MESHTUNE_WIDE_SWEEP
constexpr bool kWide = true;
#else
constexpr bool kWide = false;
#endif
uint64_t g_seed = 1;

struct Totals {
  int64_t spaces = 0, legal = 0, checked = 0, prefetched = 0, programs = 0, unlowerable = 0,
          failures = 0;
};
Totals g_totals;

// "; 0 failures in 40 of 1234 points: the space's failure rate is below 7.2% (95%
// confidence)": what a sample without failures says of the whole space ("" with failures,
// or when every point was checked: then the space is proven).
std::string FailureBound(const SweepResult& r) {
  if (!r.failures.empty()) return "";
  if (r.checked >= r.legal_points) return "; every legal point checked";
  const double bound = 1 - std::pow(0.05, 1.0 / static_cast<double>(r.checked));
  return absl::StrFormat(
      "; 0 failures in %d of %d points: the space's failure rate is below %.1f%% (95%% "
      "confidence)",
      r.checked, r.legal_points, 100 * bound);
}

// Every space of the wide sweep; the suite leaves out those of the problems with three or
// more indices on 2D and 3D meshes (building their tables takes 15 s to 3 min each on
// 2 cores), but for batched matmul on 2x2.
std::vector<SweepCase> Cases(bool wide) {
  const std::vector<std::pair<std::string, std::string>> problems = {
      {"C[m,n] += A[m,k] * B[k,n]", "m=12,n=8,k=12"},
      {"C[m,n] += A[k,m] * B[k,n]", "m=8,n=12,k=6"},
      {"C[m,n] += A[m,k] * B[n,k]", "m=6,n=8,k=12"},
      {"C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=2,m=4,n=6,k=4"},
      {"O[i,l] += B[i,j,k] * C[j,l] * D[k,l]", "i=6,j=4,k=4,l=6"},
      {"C[i,j,l] += A[i,j,k] * B[k,l]", "i=4,j=6,k=4,l=6"},
      {"w[i] += A[i,j] * v[j]", "i=12,j=12"},
      {"C[i,j] = A[i,j] + B[i,j]", "i=12,j=6"},
      {"C[m,n] += A[m,k] * B[k,n]", "m=2,n=2,k=24"},  // split-k
  };
  std::vector<SweepCase> cases;
  for (const auto& [expr, extents] : problems) {
    const bool big = std::count(extents.begin(), extents.end(), '=') >= 4;
    for (const std::string mesh : {"x=2", "x=3", "x=4", "x=2,y=2", "x=2,y=3", "x=2,y=2,z=2"}) {
      for (bool replication : {false, true}) {
        const bool in_suite =
            !big || mesh.find(',') == std::string::npos ||
            (expr[0] == 'C' && expr[2] == 'b' && mesh == "x=2,y=2" && !replication);
        if (wide || in_suite) cases.push_back({expr, extents, mesh, replication});
        // Matmul and split-k with copies of C, the result left on one layer.
        if (replication && (wide || in_suite) && expr == problems[0].first) {
          SweepCase on_layer{expr, extents, mesh, replication};
          on_layer.result_on_layer = true;
          cases.push_back(on_layer);
        }
      }
    }
  }
  // The spaces with distributed indices split further (Tesseract, 2.5D with steps, 2.5D
  // Cannon and their neighbours): matmul on x=4 and 2x2 (no copies) in the suite, the
  // small problems in the wide sweep, 2x2x2 too (the sweep lists every legal point before
  // sampling: 10^7 to 10^9 of them on 2x2x2, minutes and gigabytes). The suite's 2x2 space is
  // matmul at m=n=k=4 (68486 legal points, most of them split; 4 s), the wide sweep's at
  // m=12,n=8,k=12 (1.6 million; its tables take 23 s to build).
  for (const auto& [expr, extents] : problems) {
    const bool big = std::count(extents.begin(), extents.end(), '=') >= 4;
    for (const std::string mesh : {"x=4", "x=2,y=2", "x=2,y=2,z=2"}) {
      for (bool replication : {false, true}) {
        const bool in_suite = expr == problems[0].first && extents == problems[0].second &&
                              (mesh == "x=4" || (mesh == "x=2,y=2" && !replication));
        if (in_suite || (wide && !big))
          cases.push_back({expr,
                           in_suite && !wide && mesh == "x=2,y=2" ? "m=4,n=4,k=4" : extents,
                           mesh,
                           replication,
                           {},
                           true});
      }
    }
  }
  // Rotations in steps (SpaceOptions::rotation_steps): meshes whose time loops can run more
  // steps than an axis has ranks (x=2 and x=4 divide only into their size).
  for (const auto& [expr, extents] : problems) {
    const bool big = std::count(extents.begin(), extents.end(), '=') >= 4;
    for (const std::string mesh : {"x=2,y=2", "x=2,y=3"}) {
      const bool in_suite =
          expr == problems[0].first && extents == problems[0].second && mesh == "x=2,y=2";
      if (in_suite || (wide && !big))
        cases.push_back({expr, extents, mesh, false, {}, false, true});
    }
  }
  // All-to-all transfers (SpaceOptions::all_to_all): uneven extents and meshes whose time
  // loops cut a layout's blocks.
  for (const auto& [expr, extents] : problems) {
    const bool big = std::count(extents.begin(), extents.end(), '=') >= 4;
    for (const std::string mesh : {"x=4", "x=2,y=2", "x=2,y=3"}) {
      for (bool replication : {false, true}) {
        const bool in_suite = expr == problems[0].first && extents == problems[0].second &&
                              (!replication || mesh == "x=2,y=2");
        if (in_suite || (wide && !big))
          cases.push_back({expr, extents, mesh, replication, {}, false, false, true});
      }
    }
  }
  // Blocks that do not divide the extents (docs/design.md): odd extents on every mesh, so
  // that the last block is short or, past the end, empty; with and without copies.
  const std::vector<std::pair<std::string, std::string>> ragged = {
      {"C[m,n] += A[m,k] * B[k,n]", "m=7,n=5,k=3"},
      {"C[m,n] += A[m,k] * B[k,n]", "m=13,n=11,k=9"},
      {"C[m,n] += A[k,m] * B[k,n]", "m=7,n=5,k=9"},
      {"C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=3,m=5,n=7,k=3"},
      {"O[i,l] += B[i,j,k] * C[j,l] * D[k,l]", "i=7,j=3,k=5,l=5"},
      {"C[i,j,l] += A[i,j,k] * B[k,l]", "i=5,j=3,k=7,l=5"},
      {"w[i] += A[i,j] * v[j]", "i=13,j=11"},
      {"C[i,j] = A[i,j] + B[i,j]", "i=13,j=7"},
  };
  for (const auto& [expr, extents] : ragged) {
    const bool big = std::count(extents.begin(), extents.end(), '=') >= 3;
    for (const std::string mesh : {"x=2", "x=3", "x=2,y=2", "x=2,y=3", "x=2,y=2,z=2"}) {
      for (bool replication : {false, true}) {
        const bool in_suite =
            mesh == "x=2" || mesh == "x=3" || (!big && !replication && mesh != "x=2,y=2,z=2");
        if (wide || in_suite) cases.push_back({expr, extents, mesh, replication});
      }
    }
    // All-to-all transfers, where the time loops cut a layout's short blocks.
    if (expr == ragged[0].first && (wide || extents == ragged[0].second))
      cases.push_back({expr, extents, "x=2,y=3", false, {}, false, false, true});
  }
  return cases;
}

class LegalIsCorrectTest : public ::testing::TestWithParam<SweepCase> {};

TEST_P(LegalIsCorrectTest, EveryCheckedLegalPointVerifies) {
  const SweepCase& c = GetParam();
  // Each point also runs on the caller's memory (runtime::BoundProgram), as a library user's
  // and a generated callable kernel's calls do.
  // A space whose result is left on one layer takes at least 40 points: the sample must
  // hold a reduction onto the layer (asserted below), and those are a few in a hundred.
  const int64_t max_points = c.result_on_layer ? std::max<int64_t>(g_max_points, 40) : g_max_points;
  absl::StatusOr<SweepResult> r =
      SweepSpace(c, max_points, g_seed, [](const ir::Computation& comp, const codegen::Program& p) {
        return CheckBoundRun(comp.problem(), p);
      });
  ASSERT_TRUE(r.ok()) << r.status();
  std::cout << c.Name() << ": " << r->legal_points << " legal, " << r->checked << " checked ("
            << r->prefetched << " prefetched, " << r->all_to_all << " all-to-all, " << r->onto_layer
            << " onto a layer), " << r->distinct_programs << " distinct programs, "
            << r->unlowerable << " not lowered, " << r->failures.size() << " failures"
            << FailureBound(*r) << "\n";
  for (const auto& [why, n] : r->unlowerable_reasons)
    std::cout << "  not lowered (" << n << "): " << why << "\n";
  // Every point of the samples lowers (and is validated: codegen::LowerValidated).
  EXPECT_EQ(r->unlowerable, 0) << "legal points lowering declined";
  EXPECT_EQ(r->checked, std::min(r->legal_points, max_points));
  if (c.rotation_steps) {
    EXPECT_GT(r->stepped, 0) << "no point of the sample rotates in steps";
  }
  if (c.all_to_all) {
    EXPECT_GT(r->all_to_all, 0) << "no point of the sample makes an all-to-all";
  }
  // With copies, some GEMMs copy C along an axis and, with the result left on one layer,
  // reduce it onto that layer; by default every copy holds the result.
  if (c.allow_replication && c.expr == "C[m,n] += A[m,k] * B[k,n]" && c.result_on_layer) {
    EXPECT_GT(r->onto_layer, 0) << "no point of the sample reduces C onto one layer";
  }
  if (!c.result_on_layer) {
    EXPECT_EQ(r->onto_layer, 0) << "a point leaves the result on one layer by default";
  }
  for (size_t i = 0; i < r->failures.size() && i < 5; ++i) {
    ADD_FAILURE() << r->failures[i].error << "\n" << r->failures[i].trace;
  }
  ++g_totals.spaces;
  g_totals.legal += r->legal_points;
  g_totals.checked += r->checked;
  g_totals.prefetched += r->prefetched;
  g_totals.programs += r->distinct_programs;
  g_totals.unlowerable += r->unlowerable;
  g_totals.failures += static_cast<int64_t>(r->failures.size());
}

// The spaces hold prefetched schedules (search/space.h: every rotation of a nest with a
// time loop again, prefetched), and the sweep runs them: in matmul on 2x2 some of the
// sample prefetch, and each verifies.
TEST(LegalIsCorrectPrefetchTest, PrefetchedPointsAreSweptAndVerify) {
  absl::StatusOr<SweepResult> r =
      SweepSpace({"C[m,n] += A[m,k] * B[k,n]", "m=12,n=8,k=12", "x=2,y=2"}, 40, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->checked, 40);
  EXPECT_GT(r->prefetched, 5);
  EXPECT_LT(r->prefetched, 40);
  EXPECT_TRUE(r->failures.empty()) << r->failures[0].error << "\n" << r->failures[0].trace;
}

// The points whose output is communicated at a rotated loop: a ring reduction where the
// partial sums pass around a ring (ir/ring.h), or an ordinary one where the rotation leaves
// the output aligned. Each checked point also passes translation validation (the second
// proof, codegen/validate/validate.h: the sweep lowers each point with codegen::LowerValidated,
// which refuses an unsound Program) and runs on the caller's memory; spaces whose ring ends
// one step before the holders (the block layouts) and, with skewed layouts, on them. One test
// per space (so that the shards share them out); the sample of each space holds rings.
std::vector<SweepCase> RingCases() {
  std::vector<SweepCase> cases = {
      {"C[m,n] += A[m,k] * B[k,n]", "m=12,n=8,k=12", "x=4"},
      {"C[m,n] += A[m,k] * B[k,n]", "m=12,n=8,k=12", "x=2,y=2"},
      {"C[m,n] += A[m,k] * B[k,n]", "m=6,n=12,k=6", "x=3"},
      {"C[m,n] += A[m,k] * B[k,n]", "m=8,n=6,k=12", "x=2,y=3"},
      {"C[m,n] += A[k,m] * B[k,n]", "m=8,n=12,k=8", "x=4"},
      {"w[i] += A[i,j] * v[j]", "i=12,j=12", "x=3"},
      {"C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=16", "x=2,y=2", true},
  };
  for (SweepCase& c : cases) c.rings_only = true;
  return cases;
}

class LegalIsCorrectRingTest : public ::testing::TestWithParam<SweepCase> {};

TEST_P(LegalIsCorrectRingTest, EveryRingPointVerifies) {
  const SweepCase& c = GetParam();
  // 60 points of each space in the suite, 150 in the wide sweep.
  const int64_t points = kWide ? 150 : 60;
  absl::StatusOr<SweepResult> r =
      SweepSpace(c, points, 5, [](const ir::Computation& comp, const codegen::Program& p) {
        return CheckBoundRun(comp.problem(), p);
      });
  ASSERT_TRUE(r.ok()) << r.status();
  std::cout << c.Name() << ": " << r->legal_points << " communicate the output at a rotated "
            << "loop, " << r->checked << " checked, " << r->rings << " rings, "
            << r->failures.size() << " failures\n";
  EXPECT_EQ(r->checked, std::min<int64_t>(r->legal_points, points));
  EXPECT_GT(r->rings, 0) << "no point of the sample passes partial sums around a ring";
  for (size_t i = 0; i < r->failures.size() && i < 5; ++i)
    ADD_FAILURE() << r->failures[i].error << "\n" << r->failures[i].trace;
}

INSTANTIATE_TEST_SUITE_P(Rings, LegalIsCorrectRingTest, ::testing::ValuesIn(RingCases()),
                         [](const ::testing::TestParamInfo<SweepCase>& info) {
                           return absl::StrCat("ring", info.index);
                         });

INSTANTIATE_TEST_SUITE_P(Spaces, LegalIsCorrectTest, ::testing::ValuesIn(Cases(kWide)),
                         [](const ::testing::TestParamInfo<SweepCase>& info) {
                           return absl::StrCat("case", info.index);
                         });

class PrintTotals : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "TOTAL: " << g_totals.spaces << " spaces, " << g_totals.legal << " legal points, "
              << g_totals.checked << " checked (at most " << g_max_points << " per space, seed "
              << g_seed << "; " << g_totals.prefetched << " prefetched), " << g_totals.programs
              << " distinct programs, " << g_totals.unlowerable << " not lowered, "
              << g_totals.failures << " failures\n";
  }
};

}  // namespace
}  // namespace meshtune::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--max-points") meshtune::testing::g_max_points = std::atoll(argv[i + 1]);
    if (flag == "--seed") meshtune::testing::g_seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  ::testing::AddGlobalTestEnvironment(new meshtune::testing::PrintTotals);
  return RUN_ALL_TESTS();
}
