#include "engine/tune/tune_run.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/job.h"
#include "engine/records.h"
#include "engine/requests.h"
#include "engine/tune/tune_messages.h"
#include "engine/tune/tune_summary.h"
#include "storage/machine_fingerprint.h"

namespace meshtune::engine {

namespace {

// Keeps the tuner's progress reports as the tuning curve.
class CurveCallback : public search::SearchCallback {
 public:
  void OnProgress(const search::SearchProgress& p) override { curve.Add(ProgressMessage(p)); }
  TuneCurve curve;
};

// Keeps the measured candidates of `out` as runs, and refits a stored profile's term scales
// from them when enough new ones exist; what went wrong or what the refit did goes to the
// result's warnings.
void KeepAndRefit(storage::TuningDb& db, const v1::TuneRequest& request, const RunNumbers& numbers,
                  v1::TuneResult* out) {
  const std::vector<v1::MeasuredRun> runs =
      RunsOf("tune", request.problem(), request.in_place(), out->measurements(), numbers);
  if (absl::Status kept = KeepRuns(db, runs); !kept.ok()) {
    out->add_warnings(
        absl::StrCat("the measured runs were not kept in the tuning database: ", kept.message()));
    return;
  }
  if (numbers.profile.empty()) return;
  absl::StatusOr<std::optional<Refit>> refit = RefitFromRuns(db, numbers.profile);
  if (!refit.ok()) {
    out->add_warnings(absl::StrCat("could not refit the cost model of profile \"", numbers.profile,
                                   "\": ", refit.status().message()));
  } else if (refit->has_value()) {
    out->add_warnings(RefitNote(**refit));
  }
}

}  // namespace

absl::StatusOr<v1::TuneResult> RunAndStoreTune(
    const search::TuneOptions& options, const storage::Workload& w, const v1::TuneRequest& request,
    search::Runner& runner, const std::vector<search::SearchCallback*>& callbacks,
    storage::TuningDb* db, std::string* store_error, const RunNumbers* numbers) {
  CurveCallback curve;
  std::vector<search::SearchCallback*> all = callbacks;
  all.push_back(&curve);
  absl::StatusOr<search::SearchResult> result = search::Tune(options, runner, all);
  if (!result.ok()) return result.status();
  if (options.cancelled && options.cancelled())
    return absl::CancelledError("the tune was cancelled");
  v1::TuneResult out = ResultMessage(*result, request, w, options);
  if (db != nullptr && (result->verified || result->measurements.empty())) {
    // A program's record holds its program trace (no summary: its report draws the program).
    const v1::TuneSummary summary = TuneSummaryOf(out, request, curve.curve.points());
    const absl::Status stored =
        result->program ? StoreTuneResult(*db, w, &out)
                        : StoreTuneResult(*db, w, &out, &summary, &result->best.schedule);
    if (!stored.ok()) {
      out.set_stored(false);
      out.add_warnings(
          absl::StrCat("the result was not stored in the tuning database: ", stored.message()));
      if (store_error != nullptr) *store_error = std::string(stored.message());
    }
  }
  if (db != nullptr && numbers != nullptr && out.measurements_size() > 0) {
    KeepAndRefit(*db, request, *numbers, &out);
  }
  return out;
}

absl::StatusOr<PreparedTune> PrepareTune(const v1::TuneRequest& request,
                                         const MachineNumbers& numbers) {
  // The request read once: the problem as stated, then the tuner's options, and the
  // workload from the same values (the one mesh, or the rank count).
  MT_ASSIGN_OR_RETURN(const ir::StatementProgram stated, ProgramOf(request.problem()));
  std::string warning;
  MT_ASSIGN_OR_RETURN(search::TuneOptions options,
                      TuneOptionsFor(stated, request, &warning, numbers));
  const std::string profile = RequestedProfile(request.profile());
  absl::StatusOr<storage::Workload> workload =
      request.ranks() != 0 ? storage::MakeWorkload(stated, request.ranks(), profile)
                           : storage::MakeWorkload(stated, options.meshes.front(), profile);
  if (!workload.ok()) return workload.status();
  RunNumbers used;
  used.params = options.params;
  int64_t ranks = request.ranks();
  for (const ir::Mesh& m : options.meshes) ranks = std::max(ranks, m.Ranks());
  // The tune's own choice, made (and calibrated, if need be) by TuneOptionsFor above.
  absl::StatusOr<ChosenProfile> chosen =
      ChooseProfile(request.profile(), ranks, FirstUse::kBuiltin);
  std::optional<v1::HardwareProfile> chosen_profile;
  if (chosen.ok()) chosen_profile = chosen->profile;
  if (chosen.ok() && !numbers.params && !numbers.alpha && !numbers.beta && !numbers.gamma) {
    used.profile = chosen->name;
    used.machine = storage::MachineFingerprint(chosen->profile ? &*chosen->profile : nullptr);
  }
  return PreparedTune{std::move(options), *std::move(workload), std::move(warning), std::move(used),
                      std::move(chosen_profile)};
}

}  // namespace meshtune::engine
