// One tune from start to stored record: the tuner's run, its result as a TuneResult
// message, and the winner written to the tuning database. Shared by the daemon's Tune and
// the CLI's in-process `tune` and `batch`, so that all three store the same records.
#ifndef MESHTUNE_ENGINE_TUNE_TUNE_RUN_H_
#define MESHTUNE_ENGINE_TUNE_TUNE_RUN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/runs.h"
#include "engine/tune/tune_options.h"
#include "proto/meshtune.pb.h"
#include "search/runner.h"
#include "search/tuner.h"
#include "storage/tuning_db.h"
#include "storage/workload.h"

namespace meshtune::engine {

// A tune request made ready: the tuner's options and the workload its record is stored
// under, and `warning` when the request asks for something it will not get. The one tune
// assembly the CLI's in-process backend, the daemon and the library's measure mode share.
struct PreparedTune {
  search::TuneOptions options;
  storage::Workload workload;
  std::string warning;
  // The numbers the tune predicts with, for the runs it keeps: the profile's name when they
  // are a stored profile's as they are (no --alpha, --beta, --gamma or given params).
  RunNumbers numbers;
  // The hardware profile chosen for the tune's rank count, if any: its cluster is where the
  // measurements launch unless the caller names one (engine/cluster.h).
  std::optional<v1::HardwareProfile> profile;
};

// `request` as a tune: TuneOptionsFromRequest (with `numbers`) and the workload of its
// problem, mesh or rank count and profile. InvalidArgument naming the bad part.
absl::StatusOr<PreparedTune> PrepareTune(const v1::TuneRequest& request,
                                         const MachineNumbers& numbers = {});

// Runs search::Tune(options, runner, callbacks) for `request` (whose workload is `w`) and
// returns the result message. The winner is stored in `db` (unless `db` is null) when it
// verified or nothing was measured, with a TuneSummary of the run (engine/tune/tune_summary.h:
// the curve of the tuner's progress reports, counts, measurements) — a schedule whose
// measurements all failed is not
// served from the cache; `stored` tells. A failure to store does not fail the tune: it is
// described in `*store_error` (when non-null) and in the result's warnings, and `stored`
// stays false. Errors are
// search::Tune's (FailedPrecondition when no schedule is legal), and Cancelled when
// `options.cancelled` fires (nothing is stored then). With `numbers` (and `db`), every
// measured candidate is kept as a run (engine/runs.h) and, for a stored profile, the
// profile's term scales are refitted when enough new runs exist; what the refit did is a
// line of the result's warnings. Keeping or refitting failing is a warning too.
absl::StatusOr<v1::TuneResult> RunAndStoreTune(
    const search::TuneOptions& options, const storage::Workload& w, const v1::TuneRequest& request,
    search::Runner& runner, const std::vector<search::SearchCallback*>& callbacks,
    storage::TuningDb* db, std::string* store_error, const RunNumbers* numbers = nullptr);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_TUNE_RUN_H_
