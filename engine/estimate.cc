#include "engine/estimate.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/job.h"
#include "engine/program_tune.h"
#include "engine/requests.h"
#include "engine/tune_messages.h"
#include "engine/tune_options.h"
#include "ir/statement_program.h"
#include "search/runner.h"
#include "search/tuner.h"

namespace meshtune::engine {

absl::StatusOr<v1::Record> EstimateWithBuiltinNumbers(const v1::TuneRequest& request) {
  v1::TuneRequest model_only = request;
  model_only.set_model_only(true);
  MachineNumbers numbers;
  numbers.params = BuiltinCostParams();
  if (absl::StatusOr<ir::StatementProgram> program = ProgramOf(request.problem());
      program.ok() && !program->single()) {  // a program: its joint best
    absl::StatusOr<v1::TuneResult> tuned =
        RunProgramTune(model_only, numbers, search::MpiRunnerOptions{}, nullptr);
    if (!tuned.ok()) return tuned.status();
    v1::Record record = tuned->record();
    record.clear_id();
    return record;
  }
  absl::StatusOr<search::TuneOptions> options =
      TuneOptionsFromRequest(model_only, nullptr, numbers);
  if (!options.ok()) return options.status();
  std::unique_ptr<search::Runner> runner = search::NewModelOnlyRunner();
  absl::StatusOr<search::SearchResult> result = search::Tune(*options, *runner, {});
  if (!result.ok()) return result.status();
  v1::Record record;
  *record.mutable_problem() = request.problem();
  if (record.problem().dtype().empty()) record.mutable_problem()->set_dtype("f32");
  // The workload: the rank count asked, else the one mesh tuned.
  record.set_workload_mesh(request.ranks() != 0 ? absl::StrCat("ranks=", request.ranks())
                                                : options->meshes.front().ToString());
  record.set_workload_ranks(request.ranks());
  record.set_mesh(result->mesh.ToString());
  SetMeshDims(result->mesh, record.mutable_mesh_dims());
  record.mutable_trace()->set_text(result->best.trace);
  record.set_predicted_s(result->best.cost.seconds);
  for (const std::string& p : result->best.patterns) record.add_patterns(p);
  record.set_checked(result->checked);
  record.set_checked_extents(result->checked_extents);
  return record;
}

}  // namespace meshtune::engine
