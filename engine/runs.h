// Measured runs kept, and the cost model refitted from them: every tune and fidelity run
// keeps each schedule it measured in the tuning database (storage::StoredRun, a
// meshtune.v1.MeasuredRun) with its predicted time and its features — the critical rank's
// terms under the profile's numbers with term scales 1. Once enough new runs of a profile
// exist, RefitFromRuns fits the profile's term scales to them (cost::FitTermScales, as
// `meshtune calibrate --from-runs` does by hand) and keeps the fit only when it does not
// make held-out runs worse. Stateless; thread-compatible over a thread-safe database.
#ifndef MESHTUNE_ENGINE_RUNS_H_
#define MESHTUNE_ENGINE_RUNS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"
#include "proto/meshtune.pb.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {

// New runs of a profile (verified, with features, of its machine) after its last refit that
// start the next one; and the least number of groups (tunes, fidelity runs) fitted.
inline constexpr int kRefitAfterRuns = 8;
inline constexpr int kRefitMinGroups = 3;

// The numbers a run was predicted with: a stored profile as it is (`profile` its name,
// `machine` its fingerprint), or anything else ("" and the fingerprint of what was used).
struct RunNumbers {
  std::string profile;
  std::string machine;
  cost::CostParams params;
};

// One run per measured candidate of `candidates` (a tune's or fidelity's measurements) of
// `problem` (with its dtype and layouts; in_place: the stated problem, whose runs get no
// features), from `source` ("tune" or "fidelity"), all in one new group. A measured one
// carries the candidate's sample and timing "measured".
std::vector<v1::MeasuredRun> RunsOf(
    const std::string& source, const v1::Problem& problem, bool in_place,
    const google::protobuf::RepeatedPtrField<v1::MeasuredCandidate>& candidates,
    const RunNumbers& numbers);

// Marks a run kept before meshtune 0.9 — measured_s without timing — "paced" (its time was
// scaled by the machine's pace: not a measurement); leaves any other run as it is.
void MarkPacedRun(v1::MeasuredRun* run);

// Adds `runs` to `db` (their ids are assigned). The database's errors.
absl::Status KeepRuns(storage::TuningDb& db, const std::vector<v1::MeasuredRun>& runs);

// Every kept run of `profile` (of every profile when nullopt), ascending by id, ids set, and
// those kept before meshtune 0.9 marked "paced" (MarkPacedRun). DataLoss for a stored run
// that does not parse; the database's errors.
absl::StatusOr<std::vector<v1::MeasuredRun>> ListMeasuredRuns(
    storage::TuningDb& db, const std::optional<std::string>& profile);

// What a refit did.
struct Refit {
  std::string profile;
  bool accepted = false;     // the profile's term scales were replaced
  int runs = 0, groups = 0;  // fitted
  cost::TermScales scales;   // the fit (stored only when accepted)
  // Over the held-out runs (each group predicted by a fit to the others): the mean over
  // groups of 3 or more runs of Spearman's rho, and the median relative error, with the
  // profile's scales before and with the refit's.
  double rho_before = 0, rho_after = 0, error_before = 0, error_after = 0;
};

// Refits the term scales of the stored profile `profile` when at least `min_new_runs` of
// its runs (verified, with features, of its current machine, timed as measured: paced runs
// never count) are newer than its TermScales.last_run_id, over at least kRefitMinGroups
// groups, each run's raw median weighted by its spread (cost::SpreadWeight): leave-one-group-out,
// each group predicted by a fit to the others, with the profile's scales and with the refit's; the
// fit to all of them is stored (TermScales.automatic) when neither the held-out rho nor the median
// error gets worse. last_run_id moves either way. nullopt when there were too few runs.
// LoadProfile's, SaveProfile's and the database's errors.
absl::StatusOr<std::optional<Refit>> RefitFromRuns(storage::TuningDb& db,
                                                   const std::string& profile,
                                                   int min_new_runs = kRefitAfterRuns);

// One line for the user: "refitted the cost model of profile "auto-4" to 12 measured runs of
// 3 tunes: held-out rho 0.40 -> 0.80, median error 35.0% -> 12.0%" or "kept ...".
std::string RefitNote(const Refit& refit);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_RUNS_H_
