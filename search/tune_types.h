// What a tune takes and gives (search/tuner.h: Tune): its options, its result, and the
// progress it reports to its callbacks.
#ifndef MESHTUNE_SEARCH_TUNE_TYPES_H_
#define MESHTUNE_SEARCH_TUNE_TYPES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_params.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "search/checker.h"
#include "search/decision.h"
#include "search/evaluator.h"
#include "search/explorer.h"
#include "search/program_candidate.h"
#include "search/runner.h"
#include "search/schedule_class.h"
#include "search/space.h"
#include "search/strategy.h"

namespace meshtune::search {

struct TuneOptions {
  ir::StatementProgram program;  // a statement is a program of one
  std::vector<ir::Mesh> meshes;  // one (--mesh), or every factorisation of --ranks
  SpaceOptions space;
  cost::CostParams params;
  int top_k = 4;                   // candidates measured (0: none)
  double budget_s = 600;           // the whole tune; the search gets at most half
  int64_t max_evaluations = 1000;  // points the evolutionary search lowers and costs
  // Up to this many legal points, every one is costed (exhaustive; max_evaluations does
  // not apply, the budget does) on meshes of up to kExhaustiveRanks ranks; on larger ones
  // fewer, in proportion to the ranks, and never fewer than max_evaluations
  // (search/strategy.h: ExhaustiveLimit).
  int64_t max_exhaustive = 10000;
  // How the space is judged: whole up to JudgeOptions::whole_points points, lazily (counts
  // estimated, evolutionary search) beyond.
  JudgeOptions judge;
  EvolutionOptions evolution;
  std::function<bool()> cancelled;  // polled between steps when set
  // Checks an unmeasured winner before it is returned (search/checker.h); nullptr: the
  // simulating checker. Candidates are tried in the model's order, at most `max_checked`.
  Checker* checker = nullptr;
  int max_checked = 8;
  // For a problem of matmul form without given layouts, measured by a runner that measures
  // libraries: also time ScaLAPACK's GEMM at its most promising configurations
  // (runtime::LibraryGemmConfigs on the largest mesh's ranks), in the same tune.
  bool measure_library = true;
  // A program of several statements whose statements together have at most this many
  // instances is simulated whole (every statement and move) before a model-only answer is
  // returned; larger ones have each statement checked alone.
  int64_t simulate_below = int64_t{1} << 22;
};

// One measured configuration of the library.
struct LibraryMeasurement {
  runtime::LibraryGemmConfig config;
  CandidateRun run;
  // Refused by the physics guard: "implausible_time: ..." (search/plausibility.h).
  std::optional<std::string> implausible;
};

// One measured candidate.
struct MeasuredCandidate {
  Candidate candidate;
  ir::Mesh mesh;       // its mesh (x=2,y=2)
  std::string family;  // FamilyOf(candidate, its mesh): "x=2,y=2: A Shift(y); B Shift(x)"
  CandidateRun run;
  std::optional<std::string> implausible;  // as LibraryMeasurement::implausible
};

// How the answer was chosen among what was measured (search/decision.h).
struct MeasuredChoice {
  // The contenders: "x=2,y=2 #1" per measurement (its place in the model's order), then
  // "PSGEMM 2x2 NB 64" per library configuration; Compared indices point here.
  std::vector<std::string> labels;
  std::optional<Compared> leader;  // the fastest against the second fastest
  std::string verdict;             // "separated", "tie within noise" or ""
  // The answer is SearchResult::library[library_answer] (-1: a schedule, or none).
  int library_answer = -1;
  // The chosen schedule against the fastest library configuration.
  std::optional<Compared> vs_library;
};

// A tune's answer. For a program of several statements, `program` holds the schedules
// and `best`, `library`, `measurements`, `lower_bound*` and `class_bests` are left empty;
// the rest is set as for one statement (counts summed over the statements; choice.labels
// the programs measured).
struct SearchResult {
  // The library's measurements (empty when it was not measured), in the order taken.
  std::vector<LibraryMeasurement> library;
  Candidate best;
  ir::Mesh mesh;                     // the winner's mesh
  std::optional<double> measured_s;  // the chosen schedule's measured median, when measured
  MeasuredChoice choice;
  bool verified = false;  // the winner ran and verified
  // How the winner is known to compute the right answer: "measured" (verified under MPI),
  // "simulated" or "simulated-scaled" (search/checker.h).
  std::string checked;
  std::string
      checked_extents;  // the instance simulated when "simulated-scaled" (CheckResult::scaled)
  // Candidates the checker refused (wrong results in the simulator), with why: never returned.
  std::vector<std::string> refused;
  std::optional<double> lower_bound;  // words: CommLowerBound (search/lower_bound.h); a program:
                                      // its statements' largest
  std::optional<double> lower_bound_ratio;  // best.cost.comm_words_per_rank / lower_bound
  SearchCounts counts;
  // "exhaustive" (every legal point costed), "exhaustive (cut short by the time budget)"
  // or "evolutionary".
  std::string strategy;
  std::vector<MeasuredCandidate> measurements;  // in model order
  double seconds = 0;                           // wall time of the whole tune
  // Per schedule class (search/schedule_class.h: 1D, 2D, 2.5D, 3D, split-k), the best
  // predicted candidate the search costed, over all meshes (BestPerClass); classes it costed
  // none of are left out. Shows what the model thinks of the families the winner is not of.
  std::vector<ClassBest> class_bests;
  std::optional<ProgramAnswer> program;
};

// What the tuner is doing, for progress displays.
struct SearchProgress {
  std::string stage;  // "space", "search", "measure", "done"
  SearchCounts counts;
  int measured = 0, to_measure = 0;
  std::optional<double> best_predicted_s, best_measured_s;
  double elapsed_s = 0;
  // A program's tune: the statement searched (1-based; 0 once the whole program is
  // chosen or measured) of `statements`; both 0 for one statement's tune.
  int statement = 0, statements = 0;
};

class SearchCallback {
 public:
  virtual ~SearchCallback() = default;
  virtual void OnProgress(const SearchProgress&) {}
  virtual void OnMeasured(const MeasuredCandidate&) {}
};

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_TUNE_TYPES_H_
