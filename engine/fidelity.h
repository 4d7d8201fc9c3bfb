// Cost-model fidelity: how well the model's ranking of schedules matches measured runs.
//
// A model-only search ranks the candidates of a problem on a mesh; `count` of them, spread
// evenly over that ranking from best to worst, are measured side by side under the given
// Runner (Runner::RunSideBySide: with MPI, one job in rounds, each round one sample of every
// candidate in a fresh random order); every time is as measured. The result holds each
// (trace, mesh, predicted, measured, its samples) and, over the verified runs, Spearman's rho
// and Kendall's tau-b with bootstrap intervals, the share of the pairs that differ beyond the
// noise which the model orders right, the median relative error and its median per transfer
// pattern kind. A spread sample rather than the top: the top holds near-ties that say little
// about the model. `meshtune fidelity` prints it; bench/fidelity_bench repeats it.
//
// A problem is a program of statements (ir::StatementProgram); a statement is a program of
// one, ranked by the explorer over its schedules. A program of several statements is ranked
// as `tune` ranks it (search::Tune, model-only: search/program_search.h): whole programs, one
// schedule per statement with the moves between them, the joint search's best and "separate" (each
// statement's own best) among them; each candidate is a program, measured as one job (every
// statement and every move, verified against the whole program's serial reference), its
// trace a program trace (ir/program_trace.h) and its prediction the program's: the
// statements' plus the moves'.
#ifndef MESHTUNE_ENGINE_FIDELITY_H_
#define MESHTUNE_ENGINE_FIDELITY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "engine/report/scatter_svg.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "proto/meshtune.pb.h"
#include "search/runner.h"
#include "search/space.h"

namespace meshtune::engine {

// Which of a candidate's samples (one a round, as measured) counts as its time: the median,
// or the fastest (interference on a shared machine only ever slows a run, so the fastest is
// the least disturbed, but one lucky sample decides it).
enum class RoundStatistic { kMin, kMedian };

// "min" or "median".
const char* RoundStatisticName(RoundStatistic s);
// The statistic RoundStatisticName gives `name`; nullopt for any other name.
std::optional<RoundStatistic> RoundStatisticNamed(const std::string& name);

// `result`'s verified points given the time `s` says of their samples (round_s; points
// without them keep theirs), FidelityResult::round_statistic set and the statistics
// recomputed.
void ApplyRoundStatistic(RoundStatistic s, v1::FidelityResult* result);

// The share of FidelityOptions::timeout_s the rounds of a fidelity run may take.
inline constexpr double kRoundsShareOfTimeout = 0.8;

struct FidelityOptions {
  int count = 12;                  // candidates measured, at least 2
  int64_t max_evaluations = 1000;  // of the model-only search that ranks them (as tune)
  // The measurement's bound: the side-by-side job is killed after this, and its rounds
  // stop at kRoundsShareOfTimeout of it (the rest is for set-up and the output checks).
  double timeout_s = 300;
  // The candidates are measured side by side, every one once a round in a fresh random
  // order, so that a slow spell of a shared machine lands on one round of several
  // candidates rather than on all of one candidate's samples. How many rounds is the
  // runner's to say (the MPI runner's: MpiRunnerOptions::reps at least, max_rounds at most).
  // Which of a point's samples is its time:
  RoundStatistic round_statistic = RoundStatistic::kMedian;
  // The space ranked (as tune's: copies, split distributed indices, rotation steps,
  // all-to-all transfers); the default space when left as is.
  search::SpaceOptions space;
  // Polled by the search and by the measurement (which kills its job); true stops with
  // Cancelled.
  std::function<bool()> cancelled;
  // Called after the measurement with each point, in the model's order, and its place in
  // the ranking.
  std::function<void(const v1::MeasuredCandidate&, int64_t rank)> on_measured;
};

// Ranks the space of `program` on `mesh` with `params` and measures options.count
// candidates spread over the ranking with one runner.RunSideBySide call. For one statement
// the ranking is every schedule the explorer costed (FidelityResult::costed of them), each
// item a MeasureInput; for several it is the model-only tune's best programs
// (search::ProgramAnswer::ranked, its top_k max(64, 4 * count), with `separate` in its
// place when it is not one of them), each item a ProgramMeasureInput of every statement
// through the pipeline (one that refuses a statement is not run: "not run: statement N:
// ..."). The result's problem is "EXPR with EXTENTS" (StatementProgram::ToString, ';'
// between statements, and ExtentsString). Each point's trace is its schedule's (a
// program's: ir::ProgramTraceText), predicted_s the model's seconds (a program's:
// ProgramCandidate::seconds, its statements' and its moves'), patterns its transfers (a
// program's: every statement's, in order), family search::FamilyOf (a program's: the mesh,
// each statement's family after it between " | ", then " | moved: T, ..." for the
// intermediates that move); round_s its run's samples, `sample` their TimeSample,
// measured_s their median (or fastest, as options.round_statistic says) when it verified (a
// run with seconds but no samples: those seconds). InvalidArgument for a count below 2, a
// program of no statement or a mesh that clashes with the problem's names; FailedPrecondition
// when fewer than 2 candidates could be costed (for a program also search::Tune's: a
// statement without a legal schedule, "statement N: ..."); Cancelled when options.cancelled
// says so.
absl::StatusOr<v1::FidelityResult> RunFidelity(const ir::StatementProgram& program,
                                               const ir::Mesh& mesh, const cost::CostParams& params,
                                               const FidelityOptions& options,
                                               search::Runner& runner);

// `measured` (a fidelity run's result: its problem text "EXPR with EXTENTS", mesh and
// points) with every point's prediction recomputed under `params` (the point's trace
// lowered again and costed; a program's: every statement of its program trace lowered
// again (PrepareRun) and costed, plus each move between statements as a tune of the program
// costs it, search::CostMove of the boxes the two statements hold the tensor in), and the
// statistics with it; the measurements are kept. For trying a model or a profile against
// runs already made, without running them again. The problem is read in f32 (the result
// does not say its dtype). InvalidArgument when the problem, mesh or a trace does not parse
// or lower ("cannot lower a point's trace again: ..."), or a move cannot be planned.
absl::StatusOr<v1::FidelityResult> RecostFidelity(const v1::FidelityResult& measured,
                                                  const cost::CostParams& params);

// The statistics of `result` (verified; rho and tau with their bootstrap intervals; the
// separable pairs, those ordered right and their share; median relative errors overall and
// per pattern kind; the rounds' own rho) recomputed from its points: their predicted_s,
// measured_s and round_s.
void Summarize(v1::FidelityResult* result);

// TermScales fitted to the verified points of fidelity runs (`meshtune fidelity --json`
// lines, of any problems and meshes), and the runs costed again before and after.
struct RunFit {
  cost::TermScales scales;
  int schedules = 0;                       // verified points fitted
  std::vector<v1::FidelityResult> before;  // each run recosted under the given params
  std::vector<v1::FidelityResult> after;   // and with the fitted scales
};

// Costs every verified point of `runs` under `params` with its scales set to 1
// (cost::FitTermScales's samples: the critical rank's terms; a program's: its statements'
// critical ranks' terms summed, fitted to its measured time less its moves' predicted
// seconds, which no scale multiplies) and fits the scales to the measured times.
// InvalidArgument when a run's problem, mesh or a trace does not parse or lower (as
// RecostFidelity), when a program's point measured no more than its moves' predicted
// seconds, or when the points cannot be fitted (FitTermScales's message).
absl::StatusOr<RunFit> FitToRuns(const std::vector<v1::FidelityResult>& runs,
                                 const cost::CostParams& params);

// Predicted against measured time of the verified points, one group per schedule family's
// patterns ("A AllGather(x); B Shift(y)"), for `fidelity --svg` and the tuning report.
std::vector<ScatterPoint> FidelityScatter(const v1::FidelityResult& result);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_FIDELITY_H_
