// Cost-model fidelity: how well the model's ranking of schedules matches measured runs.
//
// A model-only search ranks the candidates of a problem on a mesh; `count` of them, spread
// evenly over that ranking from best to worst, run under the given Runner (MPI); the
// result holds each (trace, mesh, predicted, measured) and, over the verified runs,
// Spearman's rho, Kendall's tau-b, the median relative error and its median per transfer
// pattern kind. A spread sample rather than the top: the top holds near-ties that say little
// about the model. `meshtune fidelity` prints it; bench/fidelity_bench repeats it.
#ifndef MESHTUNE_ENGINE_FIDELITY_H_
#define MESHTUNE_ENGINE_FIDELITY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/scatter_svg.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "proto/meshtune.pb.h"
#include "search/cost_params.h"
#include "search/runner.h"
#include "search/space.h"

namespace meshtune::engine {

// Which of a candidate's rounds counts as its time: the median, or the fastest (interference
// on a shared machine only ever slows a run, so for rounds as measured the fastest is the
// least disturbed; rounds read at the machine's pace are off either way, and their median
// ranks better: docs/benchmarks.md).
enum class RoundStatistic { kMin, kMedian };

// "min" or "median".
const char* RoundStatisticName(RoundStatistic s);
// The statistic RoundStatisticName gives `name`; nullopt for any other name.
std::optional<RoundStatistic> RoundStatisticNamed(const std::string& name);

// `result`'s points given the time `s` says of their rounds (round_s; points without them
// keep theirs), FidelityResult::round_statistic set and the statistics recomputed.
void ApplyRoundStatistic(RoundStatistic s, v1::FidelityResult* result);

struct FidelityOptions {
  int count = 12;                  // candidates measured, at least 2
  int64_t max_evaluations = 1000;  // of the model-only search that ranks them (as tune)
  double timeout_s = 300;          // per measurement
  // Every candidate is measured once a round, the rounds alternating best-to-worst and
  // worst-to-best; a point's time is the median of its rounds. A slow spell of a shared
  // machine then lands on one round of several candidates rather than on all of one
  // candidate's repetitions. At least 1.
  int rounds = 1;
  RoundStatistic round_statistic = RoundStatistic::kMedian;
  // The space ranked (as tune's: copies, split distributed indices, rotation steps,
  // all-to-all transfers); the default space when left as is.
  search::SpaceOptions space;
  // Polled between measurements (and by the search); true stops with Cancelled.
  std::function<bool()> cancelled;
  // Called after each measurement with the point and its place in the ranking.
  std::function<void(const v1::MeasuredCandidate&, int64_t rank)> on_measured;
};

// Ranks the space of `problem` on `mesh` with `params` and measures options.count candidates
// spread over the ranking with `runner`, options.rounds times each. InvalidArgument for a
// count below 2, rounds below 1 or a mesh that
// clashes with the problem's names; FailedPrecondition when no candidate could be costed;
// Cancelled when options.cancelled says so.
absl::StatusOr<v1::FidelityResult> RunFidelity(const ir::Problem& problem, const ir::Mesh& mesh,
                                               const search::CostParams& params,
                                               const FidelityOptions& options,
                                               search::Runner& runner);

// `measured` (a fidelity run's result: its problem text "EXPR with EXTENTS", mesh and
// points) with every point's prediction recomputed under `params` (the point's trace
// lowered again and costed), and the statistics with it; the measurements are kept. For
// trying a model or a profile against runs already made, without running them again.
// InvalidArgument when the problem, mesh or a trace does not parse or lower.
absl::StatusOr<v1::FidelityResult> RecostFidelity(const v1::FidelityResult& measured,
                                                  const search::CostParams& params);

// The statistics of `result` (verified, rho, tau, median relative errors overall and per
// pattern kind, the rounds' own rho) recomputed from its points.
void Summarize(v1::FidelityResult* result);

// TermScales fitted to the verified points of fidelity runs (`meshtune fidelity --json`
// lines, of any problems and meshes), and the runs costed again before and after.
struct RunFit {
  search::TermScales scales;
  int schedules = 0;                       // verified points fitted
  std::vector<v1::FidelityResult> before;  // each run recosted under the given params
  std::vector<v1::FidelityResult> after;   // and with the fitted scales
};

// Costs every verified point of `runs` under `params` with its scales set to 1
// (search::FitTermScales's samples: the critical rank's terms) and fits the scales to the
// measured times. InvalidArgument when a run's problem, mesh or a trace does not parse or
// lower (as RecostFidelity), or when the points cannot be fitted (FitTermScales's
// message).
absl::StatusOr<RunFit> FitToRuns(const std::vector<v1::FidelityResult>& runs,
                                 const search::CostParams& params);

// Predicted against measured time of the verified points, one group per schedule family's
// patterns ("A AllGather(x); B Shift(y)"), for `fidelity --svg` and the tuning report.
std::vector<ScatterPoint> FidelityScatter(const v1::FidelityResult& result);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_FIDELITY_H_
