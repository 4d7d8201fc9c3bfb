#include "cli/fidelity_cmd.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/flag_groups.h"
#include "engine/fidelity.h"
#include "engine/flag_checks.h"
#include "engine/job.h"
#include "engine/local_backend.h"
#include "engine/report/scatter_svg.h"
#include "engine/requests.h"
#include "engine/runs.h"
#include "engine/tune/machine_profile.h"
#include "engine/tune/tune_options.h"
#include "ir/statement_program.h"
#include "runtime/launch/launcher.h"
#include "search/runner.h"
#include "storage/hardware_profile.h"
#include "storage/machine_fingerprint.h"
#include "storage/tuning_db.h"

namespace meshtune::cli {

namespace {

// The runner of the measurement: its rounds (--rounds at least, --reps at most), warm-ups,
// worker, and where it launches: the flags' cluster, else the cluster `profile` (nullptr:
// none) was calibrated on.
search::MpiRunnerOptions RunnerOptions(const FidelityFlags& flags,
                                       const v1::HardwareProfile* profile) {
  engine::LocalTuneSettings s;
  s.warmup = flags.measure.warmup;
  s.worker = flags.launcher.worker;
  s.cluster = flags.launcher.Cluster();
  search::MpiRunnerOptions mpi = engine::MpiRunnerOptionsOf(s, profile);
  mpi.reps = flags.rounds;
  mpi.max_rounds = std::max(flags.rounds, flags.measure.reps);
  return mpi;
}

std::string Percent(double v) { return absl::StrFormat("%+.1f%%", 100 * v); }

// What the last column says of a program's point: each statement's family, " | " between,
// then the intermediates that move (its family after the mesh): "A Shift(x); B Shift(x) |
// no communication | moved: T".
std::string ProgramColumn(const v1::MeasuredCandidate& p) {
  const size_t colon = p.family().find(": ");
  return colon == std::string::npos ? p.family() : p.family().substr(colon + 2);
}

// One line a point: "   12   0.00123   0.00145  +15.2%  A@ko AllGather(axes=[0])"; for a
// program's point, ProgramColumn last.
std::string PointLine(const v1::MeasuredCandidate& p, int64_t rank, bool program) {
  std::string measured = "-", error;
  if (p.verified() && p.has_measured_s()) {
    measured = absl::StrFormat("%.6g", p.measured_s());
    error = Percent((p.measured_s() - p.predicted_s()) / p.measured_s());
  } else {
    error = absl::StrCat("failed: ", p.error());
  }
  const std::string transfers = program                ? ProgramColumn(p)
                                : p.patterns().empty() ? "none"
                                                       : absl::StrJoin(p.patterns(), "; ");
  return absl::StrFormat("%6d  %12.6g  %12s  %8s  %s\n", rank, p.predicted_s(), measured, error,
                         transfers);
}

// "0.912, 95% interval [0.801, 0.970] (bootstrap)": a statistic and its interval; "-"
// when absent.
std::string WithInterval(bool has, double v, bool has_interval, double low, double high) {
  if (!has) return "-";
  return has_interval
             ? absl::StrFormat("%.3f, 95%% interval [%.3f, %.3f] (bootstrap)", v, low, high)
             : absl::StrFormat("%.3f", v);
}

// "separable pairs: 4 of 5 ordered right by the model (80.0%)", or none.
std::string SeparableLine(const v1::FidelityResult& r) {
  if (r.separable_pairs() == 0) {
    return "separable pairs: none (no two verified times differ beyond the noise; more "
           "--rounds may tell them apart)";
  }
  return absl::StrFormat("separable pairs: %d of %d ordered right by the model (%.1f%%)",
                         r.separable_agree(), r.separable_pairs(), 100 * r.separable_share());
}

// The result of a fidelity run of a program of `statements` statements (1: a statement),
// as text.
void PrintText(const v1::FidelityResult& r, const std::string& svg, int statements,
               std::ostream& out) {
  int rounds = 0;
  for (const v1::MeasuredCandidate& p : r.points()) rounds = std::max(rounds, p.round_s_size());
  const bool program = statements > 1;
  out << "fidelity of " << r.problem() << " on " << r.mesh() << ": " << r.points_size() << " of "
      << r.costed() << (program ? " ranked programs" : " costed candidates") << " measured in "
      << rounds << " round" << (rounds == 1 ? "" : "s") << ", spread over the model's ranking"
      << (program ? " (each program one job: every statement, every move)" : "") << "\n\n";
  std::vector<std::string> columns;
  for (int s = 1; s <= statements; ++s) columns.push_back(absl::StrCat("statement ", s));
  out << absl::StrFormat("%6s  %12s  %12s  %8s  %s\n", "rank", "predicted_s", "measured_s", "error",
                         program ? absl::StrJoin(columns, " | ") : "transfers");
  for (int i = 0; i < r.points_size(); ++i) out << PointLine(r.points(i), r.ranks(i), program);
  out << "\n";
  auto stat = [](bool has, double v) {
    return has ? absl::StrFormat("%.3f", v) : std::string("-");
  };
  out << "Spearman's rho   "
      << WithInterval(r.has_spearman_rho(), r.spearman_rho(), r.has_spearman_rho_ci_low(),
                      r.spearman_rho_ci_low(), r.spearman_rho_ci_high())
      << " over " << r.verified() << " verified\n";
  out << "Kendall's tau    "
      << WithInterval(r.has_kendall_tau(), r.kendall_tau(), r.has_kendall_tau_ci_low(),
                      r.kendall_tau_ci_low(), r.kendall_tau_ci_high())
      << "\n";
  out << SeparableLine(r) << "\n";
  out << "rounds' own rho  " << stat(r.has_round_spearman_rho(), r.round_spearman_rho())
      << "  (one round's times against another's: how far measurement itself repeats)\n";
  out << "median |error|   "
      << (r.has_median_relative_error() ? absl::StrFormat("%.1f%%", 100 * r.median_relative_error())
                                        : std::string("-"))
      << " of the measured time\n";
  std::vector<std::string> kinds;
  for (const v1::PatternError& e : r.patterns()) {
    kinds.push_back(absl::StrCat(e.pattern(), " ", Percent(e.median_relative_error()), " (",
                                 e.candidates(), ")"));
  }
  out << "per pattern      " << (kinds.empty() ? "-" : absl::StrJoin(kinds, "; "))
      << "  (median of (measured - predicted) / measured)\n";
  if (!svg.empty()) out << "scatter          " << svg << "\n";
}

// Keeps the measured points of `result` as runs in the tuning database and refits the
// profile's term scales when enough new runs exist; says on `err` what the refit did, or
// what failed (the fidelity run itself stands).
void KeepRuns(const FidelityFlags& flags, const engine::ChosenProfile& chosen,
              const v1::FidelityResult& result, std::ostream& err) {
  if (flags.db.empty()) return;
  absl::StatusOr<std::unique_ptr<storage::TuningDb>> db = storage::OpenSqliteTuningDb(flags.db);
  v1::Problem problem;
  problem.set_expr(flags.workload.expr);
  problem.set_extents(flags.workload.extents);
  problem.set_dtype(flags.workload.dtype);
  engine::RunNumbers numbers{
      chosen.name, storage::MachineFingerprint(chosen.profile ? &*chosen.profile : nullptr),
      chosen.params};
  absl::Status kept = db.ok() ? engine::KeepRuns(**db, engine::RunsOf("fidelity", problem, false,
                                                                      result.points(), numbers))
                              : db.status();
  if (!kept.ok()) {
    err << "meshtune: the measured runs were not kept in the tuning database: " << kept.message()
        << "\n";
    return;
  }
  if (chosen.name.empty()) return;
  absl::StatusOr<std::optional<engine::Refit>> refit = engine::RefitFromRuns(**db, chosen.name);
  if (!refit.ok()) {
    err << "meshtune: could not refit the cost model of profile \"" << chosen.name
        << "\": " << refit.status().message() << "\n";
  } else if (refit->has_value()) {
    err << "meshtune: " << engine::RefitNote(**refit) << "\n";
  }
}

}  // namespace

int RunFidelity(const FidelityFlags& flags, std::ostream& out, std::ostream& err) {
  // A statement or a program of several, said as every command that takes one says it
  // (engine/job.h: given layouts take one statement).
  v1::Problem stated;
  stated.set_expr(flags.workload.expr);
  stated.set_extents(flags.workload.extents);
  stated.set_dtype(flags.workload.dtype);
  absl::StatusOr<ir::StatementProgram> program = engine::ProgramOf(stated);
  if (!program.ok()) return Fail(program.status(), err);
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(flags.mesh.mesh);
  if (!mesh.ok()) return Fail(mesh.status(), err);
  // A scatter that cannot be written is found before the measurements, not after.
  if (!flags.svg.empty()) {
    if (absl::Status s = CheckWritable(flags.svg); !s.ok()) return Fail(s, err);
  }
  absl::StatusOr<engine::ChosenProfile> chosen = engine::ChooseProfile(
      flags.profile, mesh->Ranks(),
      flags.no_calibrate ? engine::FirstUse::kBuiltin : engine::FirstUse::kCalibrate);
  if (!chosen.ok()) return Fail(chosen.status(), err, engine::NotFoundIs::kBadInput);
  if (!chosen->note.empty()) err << "meshtune: " << chosen->note << "\n";
  const cost::CostParams* params = &chosen->params;
  std::unique_ptr<search::Runner> runner =
      search::NewMpiRunner(RunnerOptions(flags, chosen->profile ? &*chosen->profile : nullptr));
  engine::FidelityOptions options;
  options.count = flags.count;
  // CLI11 checked the name.
  options.round_statistic =
      engine::RoundStatisticNamed(flags.round_statistic).value_or(engine::RoundStatistic::kMedian);
  options.max_evaluations = flags.max_evaluations;
  options.timeout_s = flags.measure.timeout_s;
  options.space.allow_replication = flags.allow_replication;
  options.space.split_distributed = flags.split_distributed;
  options.space.rotation_steps = flags.rotation_steps;
  options.space.all_to_all = flags.all_to_all;
  options.cancelled = [] { return runtime::StopSignal() != 0; };
  if (flags.progress) {
    options.on_measured = [&err](const v1::MeasuredCandidate& p, int64_t rank) {
      err << "meshtune: measured #" << rank << ": "
          << (p.verified() ? absl::StrFormat("%.6g s", p.measured_s()) : "failed: " + p.error())
          << "\n";
    };
  }
  absl::StatusOr<v1::FidelityResult> result =
      engine::RunFidelity(*program, *mesh, *params, options, *runner);
  if (!result.ok()) return Fail(result.status(), err);
  KeepRuns(flags, *chosen, *result, err);
  if (!flags.svg.empty()) {
    const std::string svg = engine::ScatterSvg(
        engine::FidelityScatter(*result),
        {absl::StrCat(program->ToString(), " on ", mesh->ToString()), "predicted s", "measured s"});
    if (absl::Status s = WriteTextFile(flags.svg, svg); !s.ok()) {
      if (flags.output.json) out << base::ToJsonLine(*result) << "\n";
      return Fail(s, err);
    }
  }
  if (flags.output.json) {
    out << base::ToJsonLine(*result) << "\n";
  } else {
    PrintText(*result, flags.svg, static_cast<int>(program->statements.size()), out);
  }
  if (result->verified() < 2) {
    return Fail(
        absl::InternalError(absl::StrCat("only ", result->verified(), " of ", result->points_size(),
                                         " measured candidates verified; no statistics")),
        err);
  }
  return engine::kExitOk;
}

namespace {

// --count, --rounds, --round-statistic, --max-evaluations, --profile: what is measured.
void AddSampleFlags(CLI::App* cmd, FidelityFlags& x) {
  cmd->add_option("--count", x.count, "candidates measured, 2 to 1000 (default 12)")
      ->transform(engine::IntegerIn(2, 1000));
  cmd->add_option("--rounds", x.rounds,
                  "rounds at least of the candidates measured side by side, each round one "
                  "sample of every candidate in a fresh random order (default 10; 6 give a 95% "
                  "interval of a median); they go on until the fastest is faster than the "
                  "second beyond the noise, or --reps rounds")
      ->transform(engine::IntegerIn(1, 1000));
  cmd->add_option("--round-statistic", x.round_statistic,
                  "which of a candidate's samples is its time, as measured: median (default) "
                  "or min (the fastest)")
      ->check(CLI::IsMember({"min", "median"}));
  cmd->add_option("--max-evaluations", x.max_evaluations,
                  "schedules the model ranks first (default 1000)")
      ->transform(engine::IntegerIn(1, 100000000));
  AddProfileFlag(cmd, &x.profile);
  AddNoCalibrateFlag(cmd, &x.no_calibrate);
}

// --allow-replication, --split-distributed, --rotation-steps, --all-to-all: the space ranked.
void AddSpaceFlags(CLI::App* cmd, FidelityFlags& x) {
  cmd->add_flag("--allow-replication", x.allow_replication,
                "rank tune's space with copies (--allow-replication)");
  cmd->add_flag("--split-distributed", x.split_distributed,
                "rank tune's space with distributed indices split further");
  cmd->add_flag("--rotation-steps", x.rotation_steps,
                "rank tune's space with rotations in steps other than 1");
  cmd->add_flag("--all-to-all", x.all_to_all, "rank tune's space with all-to-all transfers");
}

}  // namespace

Command AddFidelityCommand(CLI::App& app) {
  auto flags = std::make_shared<FidelityFlags>();
  FidelityFlags& x = *flags;
  CLI::App* cmd = app.add_subcommand(
      "fidelity",
      "measure candidates spread over the cost model's ranking; rank correlation and errors");
  x.workload.Add(cmd, /*required=*/true, "m=1024,n=1024,k=1024");
  x.mesh.Add(cmd, /*required=*/true, "x=2,y=2");
  AddSampleFlags(cmd, x);
  x.measure.Add(
      cmd, "rounds at most of the candidates measured side by side (default 20; at least --rounds)",
      "untimed repetitions of each candidate first (default 3)");
  x.measure.AddTimeout(
      cmd, absl::StrFormat("seconds before the measurement (one job of every candidate) is "
                           "killed; its rounds stop at %.0f%% of them",
                           100 * engine::kRoundsShareOfTimeout));
  x.launcher.Add(cmd, "launcher program instead of mpirun");
  AddSpaceFlags(cmd, x);
  x.output.AddJson(cmd, "print meshtune.v1.FidelityResult as one JSON line");
  cmd->add_option("--db", x.db, "tuning database that keeps the measured runs");
  cmd->add_flag_callback(
      "--no-db", [&x] { x.db.clear(); }, "keep the measured runs nowhere");
  cmd->add_option("--svg", x.svg, "write the predicted-against-measured scatter here");
  return {cmd, [flags] {
            runtime::InstallStopSignalHandlers();  // a stop kills the running measurement
            flags->progress = isatty(STDERR_FILENO) != 0;
            return RunFidelity(*flags, std::cout, std::cerr);
          }};
}

}  // namespace meshtune::cli
