// The tune of small programs of two and three statements on 2 to 6 ranks, odd
// extents included: the joint answer is never predicted slower than tuning each statement
// alone; Megatron's MLP moves nothing between its statements; and every program the tuner
// ranks — and every pairing of a producer's layout with a consumer's that its Pareto sets
// hold — is validated, run in the simulator against the serial reference of the whole
// program, and moves bytes exactly when the model says the layouts differ (intermediates,
// and inputs read by several statements).
#include "search/program_search.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/statement_program.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"
#include "runtime/simulator.h"
#include "search/program_layouts.h"
#include "search/tuner.h"

namespace meshtune::search {
namespace {

TuneOptions Options(const std::string& expr, const std::string& extents, const std::string& mesh) {
  TuneOptions o;
  absl::StatusOr<ir::StatementProgram> p = ir::ParseStatementProgram(expr, extents);
  EXPECT_TRUE(p.ok()) << p.status();
  if (p.ok()) o.program = *std::move(p);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  EXPECT_TRUE(m.ok()) << m.status();
  if (m.ok()) o.meshes = {*m};
  o.params.alpha = o.params.alpha_coll = 1e-6;
  o.params.beta = o.params.beta_coll = 1e-9;
  o.params.gamma = 1e-11;
  o.params.copy = 1e-10;
  o.top_k = 3;
  return o;
}

// `c` run in the simulator: its statements validated and executed as one program.
runtime::RunStats Simulated(const TuneOptions& o, const ProgramCandidate& c) {
  std::unique_ptr<Checker> checker = NewSimulatingChecker();
  std::vector<runtime::StatementJob> jobs;
  for (size_t s = 0; s < c.statements.size(); ++s) {
    absl::StatusOr<Runnable> r =
        checker->Validate(o.program.statements[s], o.meshes[0], c.statements[s].schedule);
    EXPECT_TRUE(r.ok()) << r.status() << "\n" << c.statements[s].trace;
    if (!r.ok()) return {};
    jobs.push_back({runtime::ProblemSpecOf(o.program.statements[s]), r->program});
  }
  return runtime::SimulateStatements(jobs);
}

// What the model says a program moves, against what the simulator saw it move.
void ExpectMovesAsPredicted(const ProgramCandidate& c, const runtime::RunStats& run) {
  bool moves = false;
  for (const Move& m : c.moves) moves = moves || !m.in_place;
  if (!moves) {
    EXPECT_EQ(run.bytes_sent_max, 0);
  }
  int64_t predicted = 0;
  for (const Move& m : c.moves) predicted = std::max(predicted, m.bytes_max);
  // The busiest rank of the whole program sends at least the busiest of any one move.
  EXPECT_GE(run.bytes_sent_max, predicted);
}

// Extents of 17 on a dim of every tensor: spread over 2 to 6 ranks, none of them left
// without a block (the default storage policy spreads every tensor over every rank).
struct Case {
  std::string expr, extents;
};

std::vector<Case> Programs() {
  return {
      {"H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=17,d=5,f=17,e=3"},
      {"S[i,j] = Q[i,d] * K[j,d]; O[i,e] = S[i,j] * V[j,e]", "i=17,j=17,d=4,e=5"},
      {"Y[i,b,c] = X[a,b,c] * U[a,i]; Z[i,j,c] = Y[i,b,c] * V[b,j]", "a=17,b=17,c=17,i=3,j=2"},
      {"H[b,f] = X[b,d] * W1[d,f]; H2[b,f] = H[b,f] + Bias[b,f]; Y[b,e] = H2[b,f] * W2[f,e]",
       "b=17,d=4,f=17,e=3"},
      {"B[i,k] = A[i,j] * W[j,k]; C[i,l] = B[i,k] * U[k,l]; D[i,m] = C[i,l] * V[l,m]",
       "i=17,j=17,k=17,l=17,m=3"},
      // Inputs read by two statements: X lives where the first reads it, moved for the second.
      {"H[b,f] = X[b,d] * W1[d,f]; G[b,e] = X[b,d] * W3[d,e]", "b=17,d=17,f=17,e=3"},
      {"H[b,f] = X[b,d] * W1[d,f]; Y[b,d] = H[b,f] * W2[f,d]; Z[b,d] = Y[b,d] + X[b,d]",
       "b=17,d=17,f=17"},
  };
}

TEST(ProgramSearchTest, EveryRankedProgramVerifiesInTheSimulatorAndMovesAsPredicted) {
  for (const Case& p : Programs()) {
    for (int ranks = 2; ranks <= 6; ++ranks) {
      SCOPED_TRACE(absl::StrCat(p.expr, " with ", p.extents, " on x=", ranks));
      const TuneOptions o = Options(p.expr, p.extents, absl::StrCat("x=", ranks));
      std::unique_ptr<Runner> runner = NewModelOnlyRunner();
      absl::StatusOr<SearchResult> r = Tune(o, *runner);
      ASSERT_TRUE(r.ok() && r->program.has_value()) << r.status();
      EXPECT_EQ(r->checked, "simulated");
      EXPECT_LE(r->program->ranked[0].seconds, r->program->separate.seconds * (1 + 1e-12));
      EXPECT_EQ(r->program->best.seconds, r->program->ranked[0].seconds);
      std::vector<const ProgramCandidate*> all{&r->program->separate};
      for (const ProgramCandidate& c : r->program->ranked) all.push_back(&c);
      for (const ProgramCandidate* c : all) {
        const runtime::RunStats run = Simulated(o, *c);
        EXPECT_TRUE(run.verified) << run.error;
        ExpectMovesAsPredicted(*c, run);
        double sum = 0;
        for (const Candidate& s : c->statements) sum += s.cost.seconds;
        for (const Move& m : c->moves) sum += m.seconds;
        EXPECT_NEAR(c->seconds, sum, 1e-12 * (1 + sum));
      }
    }
  }
}

TEST(ProgramSearchTest, EveryPairingOfAProducersLayoutWithAConsumersVerifies) {
  // Two statements on 3 and 4 ranks: each layout of H the first statement's candidates leave
  // it in, against each layout the second's read it in (their best candidate for it).
  for (int ranks : {3, 4}) {
    SCOPED_TRACE(absl::StrCat("x=", ranks));
    TuneOptions o = Options("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]",
                            "b=17,d=3,f=17,e=2", absl::StrCat("x=", ranks));
    std::map<std::string, Candidate> first, second;
    std::vector<std::unique_ptr<Explorer>> explorers;
    for (int s = 0; s < 2; ++s) {
      absl::StatusOr<std::unique_ptr<Explorer>> e =
          Explorer::Create(o.program.statements[s], o.meshes, o.space, o.params);
      ASSERT_TRUE(e.ok()) << e.status();
      NewExhaustiveStrategy()->Search(**e, SearchBudget{});
      for (const Candidate& c : (*e)->candidates()) {
        auto& kept = s == 0 ? first : second;
        const std::string key = LayoutKey(c, o.program.statements[s], "H");
        auto it = kept.find(key);
        if (it == kept.end() || Explorer::Better(c, it->second)) kept[key] = c;
      }
      explorers.push_back(*std::move(e));
    }
    ASSERT_GE(first.size(), 2u);
    ASSERT_GE(second.size(), 2u);
    for (const auto& [from, a] : first) {
      for (const auto& [to, b] : second) {
        SCOPED_TRACE(absl::StrCat("H from ", from, " to ", to));
        absl::StatusOr<std::vector<runtime::Box>> held =
            HeldBoxes(explorers[0]->evaluator(0).base(), a.schedule, "H");
        absl::StatusOr<std::vector<runtime::Box>> read =
            HeldBoxes(explorers[1]->evaluator(0).base(), b.schedule, "H");
        ASSERT_TRUE(held.ok() && read.ok());
        absl::StatusOr<MoveCost> move = CostMove({17, 17}, 4, o.meshes[0], *held, *read, o.params);
        ASSERT_TRUE(move.ok()) << move.status();
        EXPECT_EQ(move->in_place, from == to);
        ProgramCandidate c;
        c.statements = {a, b};
        c.moves = {Move{"H", 0, 1, move->in_place, move->bytes_max, move->seconds}};
        const runtime::RunStats run = Simulated(o, c);
        EXPECT_TRUE(run.verified) << run.error;
        ExpectMovesAsPredicted(c, run);
        if (!move->in_place) {
          EXPECT_EQ(run.bytes_sent_max, move->bytes_max);
        }
      }
    }
  }
}

TEST(ProgramSearchTest, MegatronsMlpMovesNothingBetweenItsStatements) {
  for (int ranks : {2, 4}) {
    const TuneOptions o = Options("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]",
                                  "b=64,d=32,f=128,e=32", absl::StrCat("x=", ranks));
    std::unique_ptr<Runner> runner = NewModelOnlyRunner();
    absl::StatusOr<SearchResult> r = Tune(o, *runner);
    ASSERT_TRUE(r.ok() && r->program.has_value()) << r.status();
    ASSERT_EQ(r->program->best.moves.size(), 1u);
    EXPECT_TRUE(r->program->best.moves[0].in_place)
        << r->program->best.statements[0].trace << "--\n"
        << r->program->best.statements[1].trace;
    EXPECT_EQ(r->program->best.moves[0].bytes_max, 0);
  }
}

TEST(ProgramSearchTest, ProgressIsReportedPerStatementThenForTheProgram) {
  TuneOptions o =
      Options("H[b,f] = X[b,d] * W1[d,f]; G[b,f] = H[b,f] + B[b,f]; Y[b,e] = G[b,f] * W2[f,e]",
              "b=16,d=8,f=16,e=4", "x=4");
  struct Seen : SearchCallback {
    void OnProgress(const SearchProgress& p) override { all.push_back(p); }
    std::vector<SearchProgress> all;
  } callback;
  const std::vector<SearchProgress>& seen = callback.all;
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  absl::StatusOr<SearchResult> r = Tune(o, *runner, {&callback});
  ASSERT_TRUE(r.ok() && r->program.has_value()) << r.status();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(seen.size(), 4u);
  int64_t enumerated = 0;
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(seen[s].stage, "search");
    EXPECT_EQ(seen[s].statement, s + 1);
    EXPECT_EQ(seen[s].statements, 3);
    EXPECT_EQ(seen[s].counts.enumerated, r->program->counts[s].enumerated);
    ASSERT_TRUE(seen[s].best_predicted_s.has_value());
    EXPECT_GT(*seen[s].best_predicted_s, 0);
    enumerated += seen[s].counts.enumerated;
  }
  EXPECT_EQ(seen[3].stage, "done");
  EXPECT_EQ(seen[3].statement, 0);
  EXPECT_EQ(seen[3].statements, 3);
  EXPECT_EQ(seen[3].counts.enumerated, enumerated);
  ASSERT_TRUE(seen[3].best_predicted_s.has_value());
  EXPECT_EQ(*seen[3].best_predicted_s, r->program->ranked[0].seconds);
  EXPECT_EQ(seen[3].to_measure, 0);
}

TEST(ProgramSearchTest, BadOptionsAndStatementsWithoutSchedulesAreErrors) {
  TuneOptions o =
      Options("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=4,d=4,f=4,e=4", "x=2");
  std::unique_ptr<Runner> runner = NewModelOnlyRunner();
  TuneOptions no_mesh = o;
  no_mesh.meshes.clear();
  EXPECT_EQ(Tune(no_mesh, *runner).status().message(), "no mesh to tune for");
  TuneOptions bad_k = o;
  bad_k.top_k = -1;
  EXPECT_EQ(Tune(bad_k, *runner).status().message(), "top-k must be >= 0, got -1");
  TuneOptions empty = o;
  empty.program.statements.clear();
  EXPECT_EQ(Tune(empty, *runner).status().message(), "the program has no statement");
}

// Every program verifies in 1 s, in eight equal samples; the library's chain, when asked, in
// `library_s` seconds (the programs and configurations it is asked for are recorded).
class ProgramsAndALibrary : public Runner {
 public:
  explicit ProgramsAndALibrary(double library_s) : library_s_(library_s) {}
  bool measures() const override { return true; }
  bool measures_library() const override { return true; }
  CandidateRun Run(const MeasureInput& input) override { return Timed(1.0); }
  CandidateRun RunProgram(const ProgramMeasureInput& input) override { return Timed(1.0); }
  CandidateRun RunLibrary(const LibraryInput& input) override {
    EXPECT_EQ(input.problem, nullptr);
    statements.push_back(input.program == nullptr ? 0 : input.program->statements.size());
    configs.push_back(runtime::ConfigText(input.config));
    return Timed(library_s_);
  }
  std::vector<size_t> statements;
  std::vector<std::string> configs;

 private:
  static CandidateRun Timed(double seconds) {
    CandidateRun r;
    r.verified = true;
    SetSamples(std::vector<double>(8, seconds), 1, &r);
    return r;
  }
  double library_s_;
};

TEST(ProgramSearchTest, AProgramOfMatmulsIsMeasuredAgainstTheLibrarysChain) {
  TuneOptions o =
      Options("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=64,d=32,f=64,e=16", "x=4");
  o.top_k = 2;
  ProgramsAndALibrary fast(0.5);
  const absl::StatusOr<SearchResult> r = Tune(o, fast);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->program.has_value());
  // The grids and blocks of the largest statement (the first: 64x64x32), each a chain of
  // both statements.
  const std::optional<runtime::GemmForm> first =
      runtime::GemmFormOf(runtime::ProblemSpecOf(o.program.statements[0]));
  ASSERT_TRUE(first.has_value());
  std::vector<std::string> expected;
  for (const runtime::LibraryGemmConfig& c : runtime::LibraryGemmConfigs(*first, 4))
    expected.push_back(runtime::ConfigText(c));
  EXPECT_EQ(fast.configs, expected);
  EXPECT_EQ(fast.statements, std::vector<size_t>(expected.size(), 2));
  ASSERT_EQ(r->library.size(), expected.size());
  // Twice as fast beyond the noise: the library is the answer; the program chosen is still
  // the fastest one measured, and the comparison against the library says by how much.
  ASSERT_GE(r->choice.library_answer, 0);
  EXPECT_EQ(*r->library[r->choice.library_answer].run.seconds, 0.5);
  EXPECT_EQ(r->measured_s, 1.0);
  ASSERT_TRUE(r->choice.vs_library.has_value());
  EXPECT_TRUE(r->choice.vs_library->separated);
  EXPECT_EQ(r->choice.vs_library->ratio, 2.0);
  EXPECT_EQ(r->choice.labels.back().rfind("PSGEMM ", 0), 0u) << r->choice.labels.back();

  // Twice as slow: the program stays the answer.
  ProgramsAndALibrary slow(2.0);
  const absl::StatusOr<SearchResult> s = Tune(o, slow);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->choice.library_answer, -1);
  EXPECT_EQ(s->choice.vs_library->ratio, 0.5);

  // Not measured: a statement not of matmul form (an element-wise add), or without the
  // option.
  TuneOptions add =
      Options("H[b,f] = X[b,d] * W1[d,f]; G[b,f] = H[b,f] + B[b,f]", "b=64,d=32,f=64", "x=4");
  add.top_k = 1;
  ProgramsAndALibrary not_matmul(0.5);
  const absl::StatusOr<SearchResult> a = Tune(add, not_matmul);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(not_matmul.configs.empty());
  EXPECT_TRUE(a->library.empty());
  EXPECT_EQ(a->choice.library_answer, -1);
  o.measure_library = false;
  ProgramsAndALibrary off(0.5);
  ASSERT_TRUE(Tune(o, off).ok());
  EXPECT_TRUE(off.configs.empty());
}

}  // namespace
}  // namespace meshtune::search
