#include "cli/tune_cmd.h"

#include "absl/status/statusor.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/tune_output.h"
#include "engine/exit_codes.h"

namespace meshtune::cli {

v1::TuneRequest TuneRequestFromFlags(const engine::TuneFlags& flags) {
  v1::TuneRequest r;
  r.mutable_problem()->set_expr(flags.expr);
  r.mutable_problem()->set_extents(flags.extents);
  r.mutable_problem()->set_dtype(flags.dtype);
  r.mutable_mesh()->set_axes(flags.mesh);
  r.mutable_mesh()->set_mem_per_rank(flags.mem_per_rank);
  r.set_ranks(flags.ranks);
  r.set_top_k(flags.top_k);
  r.set_budget_s(flags.budget_s);
  r.set_model_only(flags.model_only);
  if (flags.profile_given) r.set_profile(flags.profile);
  r.set_max_evaluations(flags.max_evaluations);
  r.set_seed(flags.seed);
  r.set_allow_replication(flags.allow_replication);
  r.set_allow_idle_ranks(flags.allow_idle_ranks);
  return r;
}

engine::LocalTuneSettings TuneSettingsFromFlags(const engine::TuneFlags& flags) {
  engine::LocalTuneSettings s;
  s.alpha = flags.alpha;
  s.beta = flags.beta;
  s.gamma = flags.gamma;
  s.reps = flags.reps;
  s.warmup = flags.warmup;
  s.worker = flags.worker;
  s.hostfile = flags.hostfile;
  s.launcher = flags.launcher;
  s.launcher_args = flags.launcher_args;
  return s;
}

int RunTune(const engine::TuneFlags& flags, engine::Backend& backend, std::ostream& out,
            std::ostream& err) {
  if (flags.mesh.empty() == (flags.ranks == 0)) {
    err << "meshtune: give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)\n";
    return engine::kExitBadInput;
  }
  bool drew = false;
  engine::TuneProgressFn progress;
  if (flags.progress) {
    progress = [&](const v1::TuneProgress& p) {
      err << "\r\033[K" << TuneProgressText(p) << std::flush;
      drew = true;
    };
  }
  absl::StatusOr<v1::TuneResult> result = backend.Tune(TuneRequestFromFlags(flags), progress);
  if (drew) err << "\r\033[K" << std::flush;
  if (!result.ok()) {
    // NotFound here is a --profile that does not exist.
    return Fail(result.status(), err, engine::NotFoundIs::kBadInput);
  }
  out << (flags.json ? base::ToJsonLine(*result) + "\n" : TuneResultText(*result));
  if (result->measurements_size() > 0 && !result->record().verified()) {
    err << "meshtune: no measured candidate verified; the result is the model's best (see "
           "measurements)\n";
    return engine::kExitFailed;
  }
  return engine::kExitOk;
}

}  // namespace meshtune::cli
