// The tuner: from a problem and a mesh (or a rank count) to the fastest verified schedule.
//
//   problem + meshes ─▶ Explorer::Create ── per mesh a Space; per (nest, rotation) every
//        │              tensor option judged (closed forms, isl outside them)
//        │              ──▶ enumerated / legal / pruned{reason}
//        ▼
//   SearchStrategy (exhaustive if the legal points fit, else evolutionary)
//        │   Explorer::Evaluate: assemble ─▶ closed-form Program (isl outside the forms)
//        │                       ─▶ cost::EstimateCost  (dedup by Program)
//        ▼
//   K to measure + the library ──▶ Runner::RunSideBySide (mpirun: one job in rounds,
//        │   verify + time; model-only: nothing) (Explorer::ToMeasure: each mesh's best,
//        │   each family's best near the top, then the model's order); a run below the
//        │   machine's floor measured again, then refused (search/plausibility.h)
//        ▼
//   winner: by search/decision.h (the fastest schedule, a tie within noise said so; the
//   library unless that schedule beats it beyond the noise); with no runner or no verified run, the
//   model's best that the Checker verifies in the mesh simulator (measured_s empty,
//   verified false, checked "simulated" or "simulated-scaled"); a candidate the checker
//   refuses is counted and never returned
//
// Side effects hang off the loop as TuneCallbacks (progress display, logging, storing), so
// the loop does not change when one is added. Tune runs on the calling thread.
#ifndef MESHTUNE_SEARCH_TUNER_H_
#define MESHTUNE_SEARCH_TUNER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "search/checker.h"
#include "search/decision.h"
#include "search/evaluator.h"
#include "search/explorer.h"
#include "search/runner.h"
#include "search/schedule_class.h"
#include "search/space.h"
#include "search/strategy.h"

namespace meshtune::search {

struct TuneOptions {
  ir::Problem problem;
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
  std::optional<double> lower_bound;        // words: matmul lower bound (search/lower_bound.h)
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

// InvalidArgument "no mesh to tune for", "top-k must be >= 0, got K" or "the budget must be
// a positive number of seconds, got B" — what a tune of a statement or a program refuses.
absl::Status CheckTuneLimits(size_t meshes, int top_k, double budget_s);

// FailedPrecondition for a space with no legal point: "no legal schedule among N
// candidates (pruned: REASON: K, ...)", or, when no candidate could be made at all because
// every way to spread the work leaves a rank an empty block, "no schedule spreads PROBLEM
// (EXTENTS) over the R ranks of MESH without leaving a rank empty (every split of an index over an
// axis leaves a block past its end); a smaller mesh, or --ranks R --allow-idle-ranks,
// leaves ranks idle instead" (on 2 ranks, where idle ones add no mesh: "...; one rank
// (--ranks 1, or a mesh of one rank) leaves the other idle instead"). When the meshes are of
// several rank counts, idle ranks were allowed: "no schedule spreads PROBLEM (EXTENTS) over
// F to R ranks (MESH or MESH ...), idle ranks allowed, without leaving a rank empty (...);
// fewer than F ranks (a smaller --ranks or mesh) leave more ranks idle".
absl::Status NoLegalSchedule(const Explorer& explorer, const ir::Problem& problem);

// Tunes `options.problem`. InvalidArgument for bad options (no mesh, top_k < 0, a mesh
// that clashes with the problem's names); FailedPrecondition "no legal schedule ..." when
// the space has no legal point (the message gives the prune counts), or when no candidate
// measured or passed the checker (the message gives the first refusal); Cancelled when
// `cancelled` fired before a result. Measurement failures are in the measurements.
absl::StatusOr<SearchResult> Tune(const TuneOptions& options, Runner& runner,
                                  const std::vector<SearchCallback*>& callbacks = {});

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_TUNER_H_
