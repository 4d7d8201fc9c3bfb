// The tuner with fixed machine numbers and the model-only runner: the family it picks at
// the shape extremes, its counters, its determinism, and its errors.
#include "search/tuner.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"
#include "search/explorer.h"
#include "search/runner.h"
#include "search/schedule_class.h"

namespace meshtune::search {
namespace {

TuneOptions MatmulOnFourRanks(const std::string& extents) {
  TuneOptions o;
  absl::StatusOr<ir::Problem> p = ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", extents);
  EXPECT_TRUE(p.ok()) << p.status();
  o.program = ir::ProgramOf(*p);
  o.meshes = MeshFactorisations(4, std::nullopt);  // x=4 and x=2,y=2
  o.params.alpha = o.params.alpha_coll = 1e-6;
  o.params.beta = o.params.beta_coll = 1e-9;
  o.params.gamma = 1e-11;
  o.top_k = 0;
  o.max_evaluations = 300;
  return o;
}

SearchResult MustTune(const TuneOptions& o) {
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  absl::StatusOr<SearchResult> r = Tune(o, *runner);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : SearchResult{};
}

bool Has(const std::string& text, const std::string& part) { return absl::StrContains(text, part); }

// Square matmul, 512 cubed. With overlap in the model (prefetch), split-k and 1D schedules
// whose communication the kernels hide come within 10% of the 2D ones: the search takes
// the default 1000 evaluations to find the 2D family.
TuneOptions SquareMatmulOnFourRanks() {
  TuneOptions o = MatmulOnFourRanks("m=512,n=512,k=512");
  o.max_evaluations = 1000;
  return o;
}

TEST(TunerTest, SquareMatmulOnFourRanksIsTwoDimensional) {
  const SearchResult r = MustTune(SquareMatmulOnFourRanks());
  EXPECT_EQ(r.mesh.ToString(), "x=2,y=2");
  // m and n both over the mesh, k not: a 2D algorithm (SUMMA-like: both inputs move).
  EXPECT_TRUE(Has(r.best.trace, "distribute([m,n]") || Has(r.best.trace, "distribute([n,m]"))
      << r.best.trace;
  int inputs = 0;
  for (const std::string& p : r.best.patterns) inputs += Has(p, "A@") || Has(p, "B@");
  EXPECT_EQ(inputs, 2) << r.best.trace;
  EXPECT_FALSE(r.measured_s.has_value());
  EXPECT_FALSE(r.verified);
  ASSERT_TRUE(r.lower_bound_ratio.has_value());
  EXPECT_GE(*r.lower_bound_ratio, 1.0);
}

TEST(TunerTest, TallMatmulIsOneDimensionalOverMWithoutMovingA) {
  const SearchResult r = MustTune(MatmulOnFourRanks("m=16384,n=64,k=64"));
  EXPECT_TRUE(Has(r.best.trace, "distribute([m], [mo], [mi], [x])")) << r.best.trace;
  EXPECT_EQ(r.mesh.ToString(), "x=4");
  EXPECT_TRUE(Has(r.best.trace, "shard(A, m@x)\n")) << r.best.trace;
  // A never moves between ranks (a Local copy of its own block costs nothing, and may be).
  for (const std::string& p : r.best.patterns) {
    EXPECT_FALSE(Has(p, "A@") && !Has(p, " Local")) << r.best.trace;
  }
}

TEST(TunerTest, DeepMatmulDistributesKAndReduces) {
  const SearchResult r = MustTune(MatmulOnFourRanks("m=64,n=64,k=16384"));
  EXPECT_TRUE(Has(r.best.trace, "distribute([k]")) << r.best.trace;
  bool reduces = false;
  for (const std::string& p : r.best.patterns) reduces |= Has(p, "C@") && Has(p, "Reduce");
  EXPECT_TRUE(reduces) << r.best.trace;
}

// Refuses the first `refuse` schedules it is asked about, and remembers them.
class RefusingChecker : public Checker {
 public:
  explicit RefusingChecker(int refuse) : refuse_(refuse) {}
  CheckResult Check(const ir::Problem&, const ir::Mesh&, const ir::Trace& trace) override {
    asked.push_back(trace.ToString());
    CheckResult r;
    r.ok = static_cast<int>(asked.size()) > refuse_;
    r.how = "simulated";
    if (!r.ok) r.error = "simulated: rank (x=0): C[0, 0] = 1 but the reference is 2";
    return r;
  }
  std::vector<std::string> asked;

 private:
  int refuse_;
};

TEST(TunerTest, AnUnmeasuredWinnerIsTheModelsBestThatTheCheckerPasses) {
  TuneOptions o = MatmulOnFourRanks("m=512,n=512,k=512");
  RefusingChecker checker(2);
  o.checker = &checker;
  const SearchResult r = MustTune(o);
  ASSERT_EQ(checker.asked.size(), 3u);
  EXPECT_EQ(r.best.trace, checker.asked[2]);
  EXPECT_EQ(r.checked, "simulated");
  ASSERT_EQ(r.refused.size(), 2u);
  EXPECT_EQ(r.refused[0],
            checker.asked[0] + "\n  simulated: rank (x=0): C[0, 0] = 1 but the reference is 2");
  // In the model's order: the refused ones were predicted no slower than the winner.
  EXPECT_NE(r.best.trace, checker.asked[0]);
}

TEST(TunerTest, WhenTheCheckerRefusesEveryCandidateNothingIsReturned) {
  TuneOptions o = MatmulOnFourRanks("m=512,n=512,k=512");
  RefusingChecker checker(1000);
  o.checker = &checker;
  o.max_checked = 3;
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  absl::StatusOr<SearchResult> r = Tune(o, *runner);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StartsWith(
      r.status().message(),
      "none of the model's 3 best schedules passed the simulator's check; the first: "))
      << r.status();
  EXPECT_EQ(checker.asked.size(), 3u);
}

TEST(TunerTest, TheSimulatingCheckerVerifiesTheDefaultWinner) {
  const SearchResult r = MustTune(MatmulOnFourRanks("m=256,n=256,k=256"));
  EXPECT_EQ(r.checked, "simulated");
  EXPECT_TRUE(r.refused.empty());
  // Too large for the real size: a scaled-down instance, named in checked_extents.
  TuneOptions big = MatmulOnFourRanks("m=8192,n=8192,k=8192");
  const SearchResult s = MustTune(big);
  EXPECT_EQ(s.checked, "simulated-scaled");
  EXPECT_FALSE(s.checked_extents.empty());
}

TEST(TunerTest, CountsAreConsistentAndTheSearchIsDeterministic) {
  TuneOptions o = MatmulOnFourRanks("m=64,n=64,k=64");
  o.meshes = {o.meshes[1]};  // x=2,y=2
  o.max_evaluations = 120;
  const SearchResult a = MustTune(o), b = MustTune(o);
  int64_t pruned = 0;
  for (const auto& [reason, n] : a.counts.pruned) pruned += n;
  EXPECT_EQ(a.counts.enumerated, a.counts.legal + pruned);
  EXPECT_EQ(a.counts.evaluated, 120);
  EXPECT_EQ(a.counts.evaluated, a.counts.costed + a.counts.duplicates + a.counts.unlowerable);
  EXPECT_EQ(a.strategy, "evolutionary");
  EXPECT_EQ(a.best.trace, b.best.trace);
  EXPECT_EQ(a.best.cost.seconds, b.best.cost.seconds);
}

TEST(TunerTest, SmallSpacesAreSearchedExhaustively) {
  TuneOptions o;
  o.program = ir::ProgramOf(*ir::ParseProblem("y[i] += A[i,j] * x[j]", "i=64,j=64"));
  o.meshes = MeshFactorisations(2, std::nullopt, {"y", "A", "x", "i", "j"});
  ASSERT_EQ(o.meshes.size(), 1u);
  EXPECT_EQ(o.meshes[0].ToString(), "p=2");  // x is a tensor here
  o.top_k = 0;
  const SearchResult r = MustTune(o);
  EXPECT_EQ(r.strategy, "exhaustive");
  EXPECT_EQ(r.counts.evaluated, r.counts.legal);
}

// A space within max_exhaustive is costed whole, however few evaluations are asked for:
// x=4,y=2 for 512 cubed has 5776 legal points.
TEST(TunerTest, ExhaustiveCostsEveryLegalPointWhateverMaxEvaluations) {
  TuneOptions o = MatmulOnFourRanks("m=512,n=512,k=512");
  o.meshes = {*ir::ParseMesh("x=4,y=2")};
  o.max_evaluations = 10;
  const SearchResult r = MustTune(o);
  ASSERT_GT(r.counts.legal, 1000);
  ASSERT_LE(r.counts.legal, o.max_exhaustive);
  EXPECT_EQ(r.strategy, "exhaustive");
  EXPECT_EQ(r.counts.evaluated, r.counts.legal);
}

// Past max_exhaustive the evolutionary search keeps to max_evaluations.
TEST(TunerTest, LargerSpacesKeepToMaxEvaluations) {
  TuneOptions o = MatmulOnFourRanks("m=64,n=64,k=64");
  o.meshes = {*ir::ParseMesh("x=4,y=2")};
  o.max_exhaustive = 100;
  o.max_evaluations = 50;
  const SearchResult r = MustTune(o);
  EXPECT_EQ(r.strategy, "evolutionary");
  EXPECT_LE(r.counts.evaluated, 50);
}

// Judged lazily, a space is searched by evolution with estimated counts; on a space small
// enough for the budget to cover, it finds the exhaustive search's best.
TEST(TunerTest, LazyJudgingFindsTheExhaustiveBestOnASmallSpace) {
  TuneOptions o = MatmulOnFourRanks("m=16,n=16,k=16");
  o.meshes = {*ir::ParseMesh("x=4")};
  const SearchResult exhaustive = MustTune(o);
  ASSERT_EQ(exhaustive.strategy, "exhaustive");
  ASSERT_FALSE(exhaustive.counts.estimated);
  o.judge.mode = JudgeOptions::Mode::kLazy;
  o.max_evaluations = 4 * exhaustive.counts.legal;
  const SearchResult lazy = MustTune(o);
  EXPECT_EQ(lazy.strategy, "evolutionary");
  EXPECT_TRUE(lazy.counts.estimated);
  EXPECT_EQ(lazy.counts.enumerated, exhaustive.counts.enumerated);
  EXPECT_EQ(lazy.best.cost.seconds, exhaustive.best.cost.seconds);
}

// A lazily judged space with no legal point says so once the search found none.
TEST(TunerTest, LazyJudgingWithNoLegalPointSaysWhy) {
  TuneOptions o;
  // No schedule fits in 64 bytes a rank.
  o.program = ir::ProgramOf(*ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=3,n=3,k=3"));
  o.meshes = {*ir::ParseMesh("x=2")};
  o.meshes[0].mem_per_rank_bytes = 64;
  o.judge.mode = JudgeOptions::Mode::kLazy;
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  const absl::StatusOr<SearchResult> r = Tune(o, *runner);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "no legal schedule found among "))
      << r.status();
}

TEST(TunerTest, BadOptionsAreErrors) {
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  TuneOptions o = MatmulOnFourRanks("m=64,n=64,k=64");
  o.meshes.clear();
  EXPECT_EQ(Tune(o, *runner).status().message(), "no mesh to tune for");
  o = MatmulOnFourRanks("m=64,n=64,k=64");
  o.top_k = -1;
  EXPECT_EQ(Tune(o, *runner).status().message(), "top-k must be >= 0, got -1");
  o = MatmulOnFourRanks("m=64,n=64,k=64");
  o.budget_s = 0;
  EXPECT_EQ(Tune(o, *runner).status().message(),
            "the budget must be a positive number of seconds, got 0");
}

TEST(TunerTest, NoLegalScheduleSaysWhy) {
  TuneOptions o;
  // No schedule fits in 64 bytes a rank.
  o.program = ir::ProgramOf(*ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=3,n=3,k=3"));
  o.meshes = {*ir::ParseMesh("x=2")};
  o.meshes[0].mem_per_rank_bytes = 64;
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  const absl::StatusOr<SearchResult> r = Tune(o, *runner);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "no legal schedule among ")) << r.status();
  EXPECT_TRUE(Has(std::string(r.status().message()), "over_memory_budget")) << r.status();
}

// Meshes of several rank counts (idle ranks allowed) that all leave a rank empty: the
// message names the range of rank counts tried, and does not advise allowing idle ranks.
TEST(TunerTest, NoScheduleOverMeshesOfSeveralRankCountsSaysIdleRanksWereAllowed) {
  TuneOptions o;
  o.program = ir::ProgramOf(*ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=1,n=1,k=1"));
  o.meshes = {*ir::ParseMesh("x=3"), *ir::ParseMesh("x=2")};
  o.top_k = 0;
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  const absl::StatusOr<SearchResult> r = Tune(o, *runner);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "no schedule spreads C[m,n] += A[m,k] * B[k,n] (k=1,m=1,n=1) over 2 to 3 ranks (x=3 "
            "or x=2), idle ranks allowed, without leaving a rank empty (every split of an index "
            "over an axis leaves a block past its end); fewer than 2 ranks (a smaller --ranks or "
            "mesh) leave more ranks idle");
}

TEST(TunerTest, CancellationStopsTheTune) {
  TuneOptions o = MatmulOnFourRanks("m=64,n=64,k=64");
  o.cancelled = [] { return true; };
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  EXPECT_EQ(Tune(o, *runner).status().code(), absl::StatusCode::kCancelled);
}

// A verified run of eight samples: `seconds` in each, times 1 + jitter[i % 4].
CandidateRun Verified(double seconds, std::vector<double> jitter = {0, 0, 0, 0}) {
  CandidateRun r;
  r.verified = true;
  std::vector<double> samples;
  for (int i = 0; i < 8; ++i) samples.push_back(seconds * (1 + jitter[i % 4]));
  SetSamples(samples, 1, &r);
  return r;
}

// Measures nothing for real: every run verifies, 1 s on a 1D mesh (x=4 alone), 2 s on others,
// the same in each of eight rounds.
class PrefersOneDimension : public Runner {
 public:
  bool measures() const override { return true; }
  CandidateRun Run(const MeasureInput& input) override {
    meshes.push_back(input.mesh->ToString());
    return Verified(input.mesh->axes.size() == 1 ? 1.0 : 2.0);
  }
  std::vector<std::string> meshes;
};

TEST(TunerTest, EachMeshsBestIsMeasuredAndMeasurementDecides) {
  // Square matmul: the model prefers x=2,y=2 throughout its top list; the measured set
  // still holds x=4's best, and that one wins when it runs faster.
  TuneOptions o = SquareMatmulOnFourRanks();
  o.top_k = 2;
  PrefersOneDimension runner;
  const absl::StatusOr<SearchResult> r = Tune(o, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(runner.meshes.size(), 2u);
  EXPECT_NE(runner.meshes[0], runner.meshes[1]);
  EXPECT_EQ(r->mesh.ToString(), "x=4");
  EXPECT_EQ(r->measured_s, 1.0);
  EXPECT_TRUE(r->verified);
  // Each measurement says its family, which starts with its mesh.
  ASSERT_EQ(r->measurements.size(), 2u);
  for (const MeasuredCandidate& m : r->measurements) {
    EXPECT_EQ(m.family, FamilyOf(m.candidate, m.mesh));
    EXPECT_EQ(m.family.rfind(m.mesh.ToString() + ": ", 0), 0u) << m.family;
  }
  // In model order: the first measured is the model's best.
  const absl::StatusOr<SearchResult> model = Tune(SquareMatmulOnFourRanks(), *NewModelOnlyRunner());
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(runner.meshes[0], model->mesh.ToString());
  EXPECT_EQ(model->mesh.ToString(), "x=2,y=2");
}

// Every run verifies at 1 s on a 1D mesh and 1.01 s on others, give or take 10% a round: a
// difference inside the noise.
class WithinTheNoise : public Runner {
 public:
  bool measures() const override { return true; }
  CandidateRun Run(const MeasureInput& input) override {
    const bool one = input.mesh->axes.size() == 1;
    return Verified(one ? 1.0 : 1.01, one ? std::vector<double>{0, 0.1, 0, 0.1}
                                          : std::vector<double>{0.1, 0, 0.1, 0});
  }
};

TEST(TunerTest, ATieWithinTheNoiseIsSaidAndTheLowerMedianPicks) {
  TuneOptions o = SquareMatmulOnFourRanks();
  o.top_k = 2;
  WithinTheNoise runner;
  const absl::StatusOr<SearchResult> r = Tune(o, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->measurements.size(), 2u);
  // x=4 has the lower median, but not beyond the noise: it is chosen, and the verdict says
  // that the difference is noise.
  EXPECT_EQ(r->choice.verdict, "tie within noise");
  ASSERT_TRUE(r->choice.leader.has_value());
  EXPECT_FALSE(r->choice.leader->separated);
  EXPECT_TRUE(r->choice.leader->paired);
  EXPECT_EQ(r->choice.leader->rounds, 8);
  // Eight paired ratios: their whole range (x_(2) to x_(7) would hold the median only with
  // 1 - 2 * 9/256 < 0.95) holds it with 1 - 2/256.
  EXPECT_DOUBLE_EQ(r->choice.leader->ratio_level, 1 - 2.0 / 256);
  EXPECT_EQ(r->mesh.ToString(), "x=4");
  EXPECT_DOUBLE_EQ(*r->measured_s, 1.05);  // its median, as measured: never scaled
  EXPECT_EQ(r->choice.labels[r->choice.leader->a].rfind("x=4 #", 0), 0u);
}

// x=4 runs faster than any machine could: 0.1 ms for 512^3 (the floor of 2 ranks' worth of
// cores at 20 GF/s each is 5.4 ms); the others 2 s. Counts its runs.
class FasterThanPhysics : public PrefersOneDimension {
 public:
  CandidateRun Run(const MeasureInput& input) override {
    const bool one = input.mesh->axes.size() == 1;
    runs += one ? 1 : 0;
    return Verified(one ? 1e-4 : 2.0);
  }
  int runs = 0;
};

TEST(TunerTest, ATimeBelowTheMachinesFloorIsMeasuredAgainThenRefused) {
  TuneOptions o = SquareMatmulOnFourRanks();
  o.top_k = 2;
  // A calibrated machine: 2 cores; each of 4 ranks computed at 10 GF/s with all 4 busy.
  o.params.cores = 2;
  o.params.ranks_per_node = 4;
  o.params.gamma = 1e-10;
  FasterThanPhysics runner;
  const absl::StatusOr<SearchResult> r = Tune(o, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(runner.runs, 2);  // measured, then again alone
  EXPECT_EQ(r->mesh.ToString(), "x=2,y=2");
  EXPECT_EQ(r->measured_s, 2.0);
  const MeasuredCandidate& line =
      r->measurements[0].mesh.axes.size() == 1 ? r->measurements[0] : r->measurements[1];
  ASSERT_TRUE(line.implausible.has_value());
  EXPECT_EQ(*line.implausible,
            "implausible_time: measured 0.0001 s, below the floor of 0.005369 s (2.68e+08 flop at "
            "the peak of 40 GF/s of 4 ranks on 2 cores a node, with 25% headroom)");
  // Without a calibrated machine there is no floor: the time stands (and wins).
  o.params.cores = 0;
  FasterThanPhysics unknown;
  const absl::StatusOr<SearchResult> u = Tune(o, unknown);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(unknown.runs, 1);
  EXPECT_EQ(u->mesh.ToString(), "x=4");
}

// Every schedule verifies in 1 s; the library, when asked, in `library_s` seconds for a
// block size of 64 and twice that for others (its configurations are recorded).
class WithALibrary : public PrefersOneDimension {
 public:
  explicit WithALibrary(double library_s) : library_s_(library_s) {}
  bool measures_library() const override { return true; }
  CandidateRun RunLibrary(const LibraryInput& input) override {
    configs.push_back(runtime::ConfigText(input.config));
    return Verified(input.config.nb == 64 ? library_s_ : 2 * library_s_);
  }
  std::vector<std::string> configs;

 private:
  double library_s_;
};

TEST(TunerTest, AMatmulIsMeasuredAgainstTheLibraryAtItsMostPromisingConfigurations) {
  TuneOptions o = SquareMatmulOnFourRanks();
  o.top_k = 2;
  WithALibrary runner(0.5);
  const absl::StatusOr<SearchResult> r = Tune(o, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::optional<runtime::GemmForm> form =
      runtime::GemmFormOf(runtime::ProblemSpecOf(o.program.statements[0]));
  ASSERT_TRUE(form.has_value());
  std::vector<std::string> expected;
  for (const runtime::LibraryGemmConfig& c : runtime::LibraryGemmConfigs(*form, 4))
    expected.push_back(runtime::ConfigText(c));
  EXPECT_EQ(runner.configs, expected);
  ASSERT_EQ(r->library.size(), expected.size());
  EXPECT_EQ(*r->library[0].run.seconds, 0.5);
  // The library beats every schedule beyond the noise: it is the answer (the fastest
  // configuration, NB 64), and the schedule chosen is still the fastest one.
  EXPECT_EQ(r->measured_s, 1.0);
  ASSERT_GE(r->choice.library_answer, 0);
  EXPECT_EQ(r->library[r->choice.library_answer].config.nb, 64);
  ASSERT_TRUE(r->choice.vs_library.has_value());
  EXPECT_TRUE(r->choice.vs_library->separated);
  EXPECT_EQ(r->choice.vs_library->ratio, 2.0);  // the chosen schedule against the library
  // A library as fast as the fastest schedule stays the answer (a tie within the noise);
  // one twice as slow does not.
  WithALibrary tie(1.0);
  const absl::StatusOr<SearchResult> t = Tune(o, tie);
  ASSERT_TRUE(t.ok());
  EXPECT_GE(t->choice.library_answer, 0);
  WithALibrary slow(2.0);
  const absl::StatusOr<SearchResult> s = Tune(o, slow);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->choice.library_answer, -1);
  EXPECT_EQ(s->mesh.ToString(), "x=4");
  EXPECT_EQ(s->choice.vs_library->ratio, 0.5);

  // Not measured: without the option, for a problem not of matmul form, model-only, or by a
  // runner that does not run libraries.
  o.measure_library = false;
  WithALibrary off(0.5);
  ASSERT_TRUE(Tune(o, off).ok());
  EXPECT_TRUE(off.configs.empty());
  TuneOptions batched;
  batched.program =
      ir::ProgramOf(*ir::ParseProblem("C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=2,m=32,n=32,k=32"));
  batched.meshes = {*ir::ParseMesh("x=2")};
  batched.top_k = 1;
  WithALibrary not_matmul(0.5);
  const absl::StatusOr<SearchResult> b = Tune(batched, not_matmul);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(not_matmul.configs.empty());
  EXPECT_TRUE(b->library.empty());
  PrefersOneDimension plain;
  o.measure_library = true;
  const absl::StatusOr<SearchResult> p = Tune(o, plain);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->library.empty());
}

// Validation refuses the schedules of one mesh (x=4): they are never run nor returned.
class RefusesTheLine : public Checker {
 public:
  CheckResult Check(const ir::Problem&, const ir::Mesh&, const ir::Trace&) override {
    CheckResult r;
    r.ok = true;
    r.how = "simulated";
    return r;
  }
  absl::StatusOr<Runnable> Validate(const ir::Problem& problem, const ir::Mesh& mesh,
                                    const ir::Trace& trace) override {
    if (mesh.axes.size() == 1) {
      return absl::FailedPreconditionError(
          "lowering_unsound: B at no: rank (x=1) reads B[0, 0] from rank (x=0)");
    }
    return Checker::Validate(problem, mesh, trace);
  }
};

TEST(TunerTest, AMeasuredCandidateThatValidationRefusesIsNeverRunNorReturned) {
  TuneOptions o = SquareMatmulOnFourRanks();
  o.top_k = 2;
  RefusesTheLine checker;
  o.checker = &checker;
  PrefersOneDimension runner;
  const absl::StatusOr<SearchResult> r = Tune(o, runner);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(runner.meshes.size(), 1u);  // x=4's best was refused before running
  EXPECT_EQ(runner.meshes[0], "x=2,y=2");
  EXPECT_EQ(r->mesh.ToString(), "x=2,y=2");
  EXPECT_EQ(r->checked, "measured");
  ASSERT_EQ(r->refused.size(), 1u);
  EXPECT_NE(r->refused[0].find("\n  lowering_unsound: B at no: rank (x=1)"), std::string::npos)
      << r->refused[0];
  ASSERT_EQ(r->measurements.size(), 2u);
  EXPECT_EQ(r->measurements[1].run.error,
            "lowering_unsound: B at no: rank (x=1) reads B[0, 0] from rank (x=0)");
}

TEST(TunerTest, CancellationStopsTheSpaceMidway) {
  // Polled between nests: the third poll says stop, and there is no fourth.
  int polls = 0;
  const absl::StatusOr<std::unique_ptr<Explorer>> e = Explorer::Create(
      *ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=64,n=64,k=64"), {*ir::ParseMesh("x=2,y=2")},
      {}, cost::CostParams{}, [&] { return ++polls >= 3; });
  EXPECT_EQ(e.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(e.status().message(), "the tune was cancelled");
  EXPECT_EQ(polls, 3);
}

// The best candidate per schedule class: the winner's class holds the winner's prediction
// and no class does better than the winner (model-only: the winner is the model's best).
TEST(TunerTest, ClassBestsHoldTheWinnersClassAndNoneBeatsTheWinner) {
  const TuneOptions o = MatmulOnFourRanks("m=512,n=512,k=512");
  const SearchResult r = MustTune(o);
  ASSERT_FALSE(r.class_bests.empty());
  absl::StatusOr<ir::Trace> winner_trace = ir::ParseTrace(r.best.trace);
  ASSERT_TRUE(winner_trace.ok()) << winner_trace.status();
  absl::StatusOr<std::string> winner_class =
      ScheduleClassOfTrace(*winner_trace, o.program.statements[0], o.meshes[r.best.mesh]);
  ASSERT_TRUE(winner_class.ok()) << winner_class.status();
  bool found = false;
  std::set<std::string> classes;
  for (const ClassBest& b : r.class_bests) {
    EXPECT_TRUE(classes.insert(b.schedule_class).second) << b.schedule_class << " twice";
    EXPECT_GE(b.best.cost.seconds, r.best.cost.seconds) << b.schedule_class;
    EXPECT_EQ(b.mesh, o.meshes[b.best.mesh].ToString());
    absl::StatusOr<ir::Trace> t = ir::ParseTrace(b.best.trace);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(*ScheduleClassOfTrace(*t, o.program.statements[0], o.meshes[b.best.mesh]),
              b.schedule_class);
    if (b.schedule_class != *winner_class) continue;
    found = true;
    EXPECT_EQ(b.best.cost.seconds, r.best.cost.seconds);
  }
  EXPECT_TRUE(found) << "no entry for the winner's class " << *winner_class;
  // On x=4 and x=2,y=2 the search costs 1D, 2D and split-k schedules (no 3-axis mesh).
  EXPECT_EQ(classes, (std::set<std::string>{"1D", "2D", "split-k"}));
}

// Any extents on any rank count of one axis: the model-only tune of a matrix-vector
// product finds a schedule, simulated against the serial reference of the statement, unless
// every index is too short to give each of the p ranks a block (then the message says so);
// a vector too short to spread (x[j], j < p) is copied instead.
TEST(TunerTest, EveryShapeOnEveryRankCountHasAScheduleOrSaysWhy) {
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  for (int64_t p : {2, 3, 5, 7}) {
    for (int64_t i : {1, 2, 3, 5, 7, 9}) {
      for (int64_t j : {1, 2, 3, 5, 7, 9}) {
        const std::string extents = absl::StrCat("i=", i, ",j=", j);
        SCOPED_TRACE(absl::StrCat(extents, " on p=", p));
        TuneOptions o;
        o.program = ir::ProgramOf(*ir::ParseProblem("y[i] += M[i,j] * x[j]", extents));
        o.meshes = {*ir::ParseMesh(absl::StrCat("p=", p))};
        o.top_k = 0;
        const absl::StatusOr<SearchResult> r = Tune(o, *runner);
        // Blocks of ceil(e / p) leave no rank empty.
        auto fills = [p](int64_t e) { return (p - 1) * ((e + p - 1) / p) < e; };
        if (fills(i) || fills(j)) {
          ASSERT_TRUE(r.ok()) << r.status();
          EXPECT_TRUE(absl::StartsWith(r->checked, "simulated")) << r->checked;
        } else {
          // On 2 ranks, allowing idle ones adds no mesh: the message does not advise it.
          const std::string instead =
              p == 2 ? "one rank (--ranks 1, or a mesh of one rank) leaves the other idle instead"
                     : absl::StrCat("a smaller mesh, or --ranks ", p,
                                    " --allow-idle-ranks, leaves ranks idle instead");
          EXPECT_EQ(r.status().message(),
                    absl::StrCat("no schedule spreads y[i] += M[i,j] * x[j] (", extents,
                                 ") over the ", p, " ranks of p=", p,
                                 " without leaving a rank empty (every split of an index over "
                                 "an axis leaves a block past its end); ",
                                 instead));
        }
      }
    }
  }
}

}  // namespace
}  // namespace meshtune::search
