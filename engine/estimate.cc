#include "engine/estimate.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "engine/tune_messages.h"
#include "engine/tune_options.h"
#include "search/runner.h"
#include "search/tuner.h"

namespace meshtune::engine {

absl::StatusOr<v1::Record> EstimateWithBuiltinNumbers(const v1::TuneRequest& request) {
  TuneFlags flags = TuneFlagsFromRequest(request);
  if (!flags.mesh.empty() && flags.ranks != 0) {
    return absl::InvalidArgumentError(absl::StrCat("give exactly one of mesh (\"",
                                                   base::Excerpt(flags.mesh), "\") and ranks (",
                                                   flags.ranks, ")"));
  }
  flags.model_only = true;
  flags.params = BuiltinCostParams();
  absl::StatusOr<search::TuneOptions> options = MakeTuneOptions(flags, nullptr);
  if (!options.ok()) return options.status();
  std::unique_ptr<search::Runner> runner = search::NewModelOnlyRunner();
  absl::StatusOr<search::SearchResult> result = search::Tune(*options, *runner, {});
  if (!result.ok()) return result.status();
  v1::Record record;
  *record.mutable_problem() = request.problem();
  record.mutable_problem()->set_dtype(flags.dtype);
  record.set_workload_mesh(flags.ranks != 0 ? absl::StrCat("ranks=", flags.ranks) : flags.mesh);
  record.set_mesh(result->mesh);
  record.mutable_trace()->set_text(result->best.trace);
  record.set_predicted_s(result->best.cost.seconds);
  for (const std::string& p : result->best.patterns) record.add_patterns(p);
  record.set_checked(result->checked);
  record.set_checked_extents(result->checked_extents);
  return record;
}

}  // namespace meshtune::engine
