#include "cli/tune_cmd.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/tune_output.h"
#include "engine/exit_codes.h"
#include "engine/report_html.h"
#include "engine/requests.h"
#include "engine/tune_summary.h"

namespace meshtune::cli {

namespace {

// The tuning report of `result` (a tune of `request` that went as `curve` says).
std::string TuneReport(const engine::TuneFlags& flags, const v1::TuneRequest& request,
                       const v1::TuneResult& result, const engine::TuneCurve& curve) {
  engine::ReportInput in;
  in.record = result.record();
  // A record not stored carries no workload fields: the tune's own.
  if (in.record.profile().empty()) in.record.set_profile(flags.profile);
  in.summary = engine::TuneSummaryOf(result, request, curve.points());
  in.origin = result.stored() ? absl::StrCat("record ", result.record().id())
                              : "a tune whose winner was not stored";
  // The tune's own machine numbers (flags included) where this process can tell them.
  std::string warning;
  absl::StatusOr<search::TuneOptions> options = engine::MakeTuneOptions(flags, &warning);
  if (options.ok()) {
    in.params = options->params;
    in.params_note = warning.empty()
                         ? absl::StrCat("Costed with the tune's machine numbers (profile \"",
                                        flags.profile, "\" and the flags).")
                         : absl::StrCat("Cost model: ", warning, ".");
  } else {
    in.params = engine::ReportCostParams(flags.profile, &in.params_note);
  }
  return engine::ReportHtml(in);
}

}  // namespace

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
  r.set_split_distributed(flags.split_distributed);
  r.set_rotation_steps(flags.rotation_steps);
  r.set_all_to_all(flags.all_to_all);
  r.set_allow_idle_ranks(flags.allow_idle_ranks);
  r.set_in_place(flags.in_place);
  // Checked again by RunTune, which says what is wrong with them.
  engine::SetLayoutFlags(flags.layouts, r.mutable_problem()).IgnoreError();
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

int RunTune(const engine::TuneFlags& flags, const std::string& report, engine::Backend& backend,
            std::ostream& out, std::ostream& err) {
  if (flags.mesh.empty() == (flags.ranks == 0)) {
    err << "meshtune: give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)\n";
    return engine::kExitBadInput;
  }
  // A report that cannot be written is found before the tune, not after.
  if (!report.empty() && report != "-") {
    if (absl::Status s = CheckWritable(report); !s.ok()) return Fail(s, err);
  }
  bool drew = false;
  engine::TuneCurve curve;
  engine::TuneProgressFn progress = [&](const v1::TuneProgress& p) {
    curve.Add(p);
    if (!flags.progress) return;
    err << "\r\033[K" << TuneProgressText(p) << std::flush;
    drew = true;
  };
  if (flags.in_place) {  // say what is tuned: the problem the schedule's trace names
    absl::StatusOr<ir::Problem> in_place = engine::InPlaceProblem(flags);
    if (!in_place.ok()) return Fail(in_place.status(), err);
    err << "meshtune: in place: " << in_place->ToString() << " with --layout "
        << absl::StrJoin(in_place->LayoutFlags(), " --layout ")
        << " (indices permuted to process order, each local array a block)\n";
  } else if (!flags.layouts.empty() && !flags.mesh.empty() && engine::InPlaceProblem(flags).ok()) {
    err << "meshtune: these layouts have an in-place form, which redistributes nothing: try "
           "--in-place\n";
  }
  v1::TuneRequest request = TuneRequestFromFlags(flags);
  if (absl::Status s = engine::SetLayoutFlags(flags.layouts, request.mutable_problem()); !s.ok())
    return Fail(s, err);
  absl::StatusOr<v1::TuneResult> result = backend.Tune(request, progress);
  if (drew) err << "\r\033[K" << std::flush;
  if (!result.ok()) {
    // NotFound here is a --profile that does not exist.
    return Fail(result.status(), err, engine::NotFoundIs::kBadInput);
  }
  out << (flags.json ? base::ToJsonLine(*result) + "\n" : TuneResultText(*result));
  if (report == "-") {
    out << TuneReport(flags, request, *result, curve);
  } else if (!report.empty()) {
    if (absl::Status s = WriteTextFile(report, TuneReport(flags, request, *result, curve));
        !s.ok()) {
      return Fail(s, err);
    }
  }
  if (result->measurements_size() > 0 && !result->record().verified()) {
    err << "meshtune: no measured candidate verified; the result is the model's best (see "
           "measurements)\n";
    return engine::kExitFailed;
  }
  return engine::kExitOk;
}

}  // namespace meshtune::cli
