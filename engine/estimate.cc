#include "engine/estimate.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/requests.h"
#include "engine/tune/tune_messages.h"
#include "engine/tune/tune_run.h"
#include "search/runner.h"
#include "search/tuner.h"

namespace meshtune::engine {

absl::StatusOr<v1::Record> EstimateWithBuiltinNumbers(const v1::TuneRequest& request) {
  v1::TuneRequest model_only = request;
  model_only.set_model_only(true);
  MachineNumbers numbers;
  numbers.params = BuiltinCostParams();
  MT_ASSIGN_OR_RETURN(const PreparedTune prepared, PrepareTune(model_only, numbers));
  std::unique_ptr<search::Runner> runner = search::NewModelOnlyRunner();
  MT_ASSIGN_OR_RETURN(const search::SearchResult result,
                      search::Tune(prepared.options, *runner, {}));
  // A program's record as its tune writes it (ResultMessage reads no profile for one).
  if (result.program)
    return ResultMessage(result, model_only, prepared.workload, prepared.options).record();
  v1::Record record;
  *record.mutable_problem() = request.problem();
  if (record.problem().dtype().empty()) record.mutable_problem()->set_dtype("f32");
  // The workload: the rank count asked, else the one mesh tuned.
  record.set_workload_mesh(request.ranks() != 0 ? absl::StrCat("ranks=", request.ranks())
                                                : prepared.options.meshes.front().ToString());
  record.set_workload_ranks(request.ranks());
  record.set_mesh(result.mesh.ToString());
  SetMeshDims(result.mesh, record.mutable_mesh_dims());
  record.mutable_trace()->set_text(result.best.trace);
  record.set_predicted_s(result.best.cost.seconds);
  for (const std::string& p : result.best.patterns) record.add_patterns(p);
  record.set_checked(result.checked);
  record.set_checked_extents(result.checked_extents);
  return record;
}

}  // namespace meshtune::engine
