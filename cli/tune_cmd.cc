#include "cli/tune_cmd.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/flag_groups.h"
#include "cli/tune_output.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"
#include "engine/report/report_html.h"
#include "engine/requests.h"
#include "engine/tune/tune_summary.h"
#include "ir/statement_program.h"
#include "runtime/launch/launcher.h"

namespace meshtune::cli {

namespace {

// The tuning report of `result` (a tune of `request` that went as `curve` says).
std::string TuneReport(const TuneFlags& flags, const v1::TuneRequest& request,
                       const v1::TuneResult& result, const engine::TuneCurve& curve) {
  engine::ReportInput in;
  in.record = result.record();
  // A record not stored carries no workload fields: the tune's own.
  if (in.record.profile().empty()) in.record.set_profile(flags.profile);
  if (result.has_program()) {  // a program's: its schedules and the moves between
    in.program = result.program();
  } else {
    in.summary = engine::TuneSummaryOf(result, request, curve.points());
  }
  in.origin = result.stored() ? absl::StrCat("record ", result.record().id())
                              : "a tune whose winner was not stored";
  // The tune's own machine numbers (flags included) where this process can tell them.
  std::string warning;
  absl::StatusOr<search::TuneOptions> options =
      engine::TuneOptionsFromRequest(request, &warning, flags.numbers);
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

v1::TuneRequest TuneRequestFromFlags(const TuneFlags& flags) {
  v1::TuneRequest r;
  // Layouts are checked again by RunTune, which says what is wrong with them.
  flags.workload.Fill(r.mutable_problem()).IgnoreError();
  flags.mesh.Fill(r.mutable_mesh());
  r.set_ranks(flags.mesh.ranks);
  r.set_top_k(flags.top_k);
  r.set_budget_s(flags.budget_s);
  r.set_model_only(flags.model_only);
  if (flags.profile_given) r.set_profile(flags.profile);
  r.set_no_calibrate(flags.no_calibrate);
  r.set_max_evaluations(flags.max_evaluations);
  r.set_seed(flags.seed);
  r.set_allow_replication(flags.allow_replication);
  r.set_split_distributed(flags.split_distributed);
  r.set_rotation_steps(flags.rotation_steps);
  r.set_all_to_all(flags.all_to_all);
  r.set_allow_idle_ranks(flags.allow_idle_ranks);
  r.set_in_place(flags.in_place);
  return r;
}

engine::LocalTuneSettings TuneSettingsFromFlags(const TuneFlags& flags) {
  engine::LocalTuneSettings s;
  s.alpha = flags.numbers.alpha;
  s.beta = flags.numbers.beta;
  s.gamma = flags.numbers.gamma;
  s.reps = flags.measure.reps;
  s.warmup = flags.measure.warmup;
  s.max_rounds = flags.max_rounds;
  s.worker = flags.launcher.worker;
  s.cluster = flags.launcher.Cluster();
  return s;
}

int RunTune(const TuneFlags& flags, const std::string& report, engine::Backend& backend,
            std::ostream& out, std::ostream& err) {
  if (flags.mesh.mesh.empty() == (flags.mesh.ranks == 0)) {
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
  v1::TuneRequest request = TuneRequestFromFlags(flags);
  if (absl::Status s = engine::SetLayoutFlags(flags.workload.layouts, request.mutable_problem());
      !s.ok())
    return Fail(s, err);
  if (flags.in_place) {  // say what is tuned: the problem the schedule's trace names
    absl::StatusOr<ir::Problem> in_place = engine::InPlaceProblem(request);
    if (!in_place.ok()) return Fail(in_place.status(), err);
    err << "meshtune: in place: " << in_place->ToString() << " with --layout "
        << absl::StrJoin(in_place->LayoutFlags(), " --layout ")
        << " (indices permuted to process order, each local array a block)\n";
  } else if (!flags.workload.layouts.empty() && !flags.mesh.mesh.empty() &&
             engine::InPlaceProblem(request).ok()) {
    err << "meshtune: these layouts have an in-place form, which redistributes nothing: try "
           "--in-place\n";
  }
  absl::StatusOr<v1::TuneResult> result = backend.Tune(request, progress);
  if (drew) err << "\r\033[K" << std::flush;
  if (!result.ok()) {
    // NotFound here is a --profile that does not exist.
    return Fail(result.status(), err, engine::NotFoundIs::kBadInput);
  }
  out << (flags.output.json ? base::ToJsonLine(*result) + "\n" : TuneResultText(*result));
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

namespace {

// tune's flags, and what only the command line can tell of them.
struct TuneCommandFlags {
  TuneFlags tune;  // the groups and the search's and the cost model's flags
  TargetFlags target;
  std::string report;  // --report FILE
  double alpha = 0, beta = 0, gamma = 0;
  CLI::Option* profile_opt = nullptr;
  CLI::Option* alpha_opt = nullptr;
  CLI::Option* beta_opt = nullptr;
  CLI::Option* gamma_opt = nullptr;

  // TuneFlags with what the parse tells: machine numbers only when given, --profile when
  // given, progress on a terminal.
  TuneFlags Resolved() const {
    TuneFlags t = tune;
    t.profile_given = profile_opt->count() > 0;
    if (alpha_opt->count() > 0) t.numbers.alpha = alpha;
    if (beta_opt->count() > 0) t.numbers.beta = beta;
    if (gamma_opt->count() > 0) t.numbers.gamma = gamma;
    t.progress = isatty(STDERR_FILENO) != 0;
    return t;
  }
};

// --top-k, --budget-s, --model-only, --json, --report: how far the tune goes, what it prints.
void AddBudgetFlags(CLI::App* cmd, TuneCommandFlags& f) {
  // The range: engine::TuneOptionsFromRequest.
  cmd->add_option("--top-k", f.tune.top_k, "candidates measured under MPI (default 4)")
      ->transform(engine::IntegerIn(kIntMin, kIntMax));
  cmd->add_option("--budget-s", f.tune.budget_s, "seconds for the whole tune (default 600)")
      ->check(engine::NumberIn(0, kMaxTimeoutS, /*min_exclusive=*/true));
  cmd->add_flag("--model-only", f.tune.model_only, "measure nothing: the cost model's best");
  f.tune.output.AddJson(cmd, "print the result as one JSON line");
  cmd->add_option("--report", f.report,
                  "also write the winner's tuning report here, one HTML file ('-': stdout)");
}

// --profile, --no-calibrate, --alpha, --beta, --gamma: the cost model's machine numbers. A
// second for any of them (seconds per message, byte and flop) is absurd already.
void AddMachineFlags(CLI::App* cmd, TuneCommandFlags& f) {
  f.profile_opt = AddProfileFlag(cmd, &f.tune.profile);
  AddNoCalibrateFlag(cmd, &f.tune.no_calibrate);
  f.alpha_opt =
      cmd->add_option("--alpha", f.alpha, "latency per message, s (overrides the profile)")
          ->check(engine::NumberIn(0, 1));
  f.beta_opt = cmd->add_option("--beta", f.beta, "seconds per byte (overrides the profile)")
                   ->check(engine::NumberIn(0, 1));
  f.gamma_opt = cmd->add_option("--gamma", f.gamma, "seconds per flop (overrides the profile)")
                    ->check(engine::NumberIn(0, 1));
}

// --max-evaluations, --seed and the flags that widen the space searched.
void AddSearchFlags(CLI::App* cmd, TuneCommandFlags& f) {
  // The range: engine::TuneOptionsFromRequest.
  cmd->add_option("--max-evaluations", f.tune.max_evaluations,
                  "schedules lowered and costed (default 1000)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));
  cmd->add_option("--seed", f.tune.seed, "seed of the evolutionary search")
      ->transform(engine::Unsigned64());
  cmd->add_flag(
      "--allow-replication", f.tune.allow_replication,
      "let tensors be replicated along mesh axes (2.5D-style; bound it with --mem-per-rank)");
  cmd->add_flag("--split-distributed", f.tune.split_distributed,
                "also split distributed indices: an index over two mesh axes, a distributed "
                "index in steps, rotations by two of three axes (Tesseract, 2.5D with steps, "
                "2.5D Cannon); a larger space");
  cmd->add_flag("--rotation-steps", f.tune.rotation_steps,
                "also rotate in steps other than 1: a time loop of E steps turned by a "
                "distributed loop over s ranks in steps of E/s (each rank starts at its own "
                "block)");
  cmd->add_flag("--all-to-all", f.tune.all_to_all,
                "also make transfers from several ranks' shards, as an all-to-all exchange "
                "(steps that straddle a layout's blocks)");
}

// --layout, --in-place, --allow-idle-ranks: where the tensors are, which ranks may idle.
void AddPlacementFlags(CLI::App* cmd, TuneCommandFlags& f) {
  f.tune.workload.AddLayouts(cmd);
  cmd->add_flag("--in-place", f.tune.in_place,
                "with cyclic layouts for every tensor and --mesh: tune the form in which the "
                "application's local arrays are the shards (nothing redistributed)");
  cmd->add_flag("--allow-idle-ranks", f.tune.allow_idle_ranks,
                "with --ranks P: also try meshes of fewer ranks, down to half of P, the other "
                "ranks idle");
}

// In this process: the job of a measurement is stopped by SIGINT and SIGTERM.
int RunTuneCommand(const TuneCommandFlags& f) {
  if (f.target.server.empty()) runtime::InstallStopSignalHandlers();
  const TuneFlags flags = f.Resolved();
  return RunTune(flags, f.report, *f.target.Make(TuneSettingsFromFlags(flags)), std::cout,
                 std::cerr);
}

}  // namespace

Command AddTuneCommand(CLI::App& app) {
  auto flags = std::make_shared<TuneCommandFlags>();
  TuneCommandFlags& f = *flags;
  CLI::App* cmd = app.add_subcommand("tune", "search, cost and measure schedules; print the best");
  f.tune.workload.Add(cmd, /*required=*/true);
  f.tune.mesh.Add(cmd, /*required=*/false);
  // The range: engine::TuneOptionsFromRequest.
  f.tune.mesh.AddRanks(cmd, "rank count: try every mesh of 1 to 3 axes");
  f.tune.mesh.AddMemPerRank(cmd);
  AddBudgetFlags(cmd, f);
  AddMachineFlags(cmd, f);
  AddSearchFlags(cmd, f);
  AddPlacementFlags(cmd, f);
  f.tune.measure.reps = 6;
  f.tune.measure.Add(cmd,
                     "rounds at least of the candidates measured side by side (each round one "
                     "sample of every candidate, a batch of repetitions of at least 1 ms; 6 "
                     "give a 95% interval of a median); rounds go on until the fastest is "
                     "faster than the second beyond the noise, or --max-rounds");
  cmd->add_option("--max-rounds", f.tune.max_rounds,
                  "rounds at most of the candidates measured side by side")
      ->transform(engine::IntegerIn(1, 100000));
  f.tune.launcher.Add(cmd);
  f.target.Add(cmd, TargetUse::kStoringDatabase);
  // A daemon costs with its own profile and measures with its own launcher.
  for (const char* local_only :
       {"--alpha", "--beta", "--gamma", "--reps", "--warmup", "--max-rounds", "--worker",
        "--hostfile", "--launcher", "--launcher-arg"}) {
    cmd->get_option(local_only)->excludes("--server");
  }
  return {cmd, [flags] { return RunTuneCommand(*flags); }};
}

}  // namespace meshtune::cli
