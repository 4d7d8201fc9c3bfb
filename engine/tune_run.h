// One tune from start to stored record: the tuner's run, its result as a TuneResult
// message, and the winner written to the tuning database. Shared by the daemon's Tune and
// the CLI's in-process `tune` and `batch`, so that all three store the same records.
#ifndef MESHTUNE_ENGINE_TUNE_RUN_H_
#define MESHTUNE_ENGINE_TUNE_RUN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"
#include "search/runner.h"
#include "search/tuner.h"
#include "storage/tuning_db.h"
#include "storage/workload.h"

namespace meshtune::engine {

// Runs search::Tune(options, runner, callbacks) for `request` (whose workload is `w`) and
// returns the result message. The winner is stored in `db` (unless `db` is null) when it
// verified or nothing was measured, with a TuneSummary of the run (engine/tune_summary.h:
// the curve of the tuner's progress reports, counts, measurements) — a schedule whose
// measurements all failed is not
// served from the cache; `stored` tells. A failure to store does not fail the tune: it is
// described in `*store_error` (when non-null) and in the result's warnings, and `stored`
// stays false. Errors are
// search::Tune's (FailedPrecondition when no schedule is legal), and Cancelled when
// `options.cancelled` fires (nothing is stored then).
absl::StatusOr<v1::TuneResult> RunAndStoreTune(
    const search::TuneOptions& options, const storage::Workload& w, const v1::TuneRequest& request,
    search::Runner& runner, const std::vector<search::SearchCallback*>& callbacks,
    storage::TuningDb* db, std::string* store_error);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_RUN_H_
