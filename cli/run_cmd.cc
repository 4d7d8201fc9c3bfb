#include "cli/run_cmd.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/excerpt.h"
#include "base/json.h"
#include "base/status_macros.h"
#include "cli/cli_io.h"
#include "cli/flag_groups.h"
#include "cli/run_output.h"
#include "engine/cluster.h"
#include "engine/exit_codes.h"
#include "engine/explain.h"
#include "engine/flag_checks.h"
#include "engine/library_run.h"
#include "engine/prepare.h"
#include "ir/statement_program.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/memory_fit.h"
#include "runtime/launch/run_result.h"
#include "runtime/simulator.h"
#include "storage/hardware_profile.h"

namespace meshtune::cli {
namespace {

// run's flags.
struct RunFlags {
  TraceFlags trace;
  int64_t record = 0;   // --record ID: the record's answer, a schedule or the library
  std::string library;  // --library PxQ,NB: ScaLAPACK's GEMM on that grid (a tune's peer)
  TargetFlags target;
  MeasurementFlags measure;
  LauncherFlags launcher;
  std::string profile;  // --profile: its cluster (engine/cluster.h)
  std::string inject_fault;
  bool simulate = false;
  OutputFlags output;
};

// Why a run that did not verify failed, on one line: its error (the launcher's account may
// span lines), or "the output did not verify" when it has none.
std::string FailureLine(const v1::RunResult& result) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(result.error(), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) lines.emplace_back(line);
  }
  return lines.empty() ? "the output did not verify" : absl::StrJoin(lines, " ");
}

// Prints the RunResult on stdout (text, or with --json one JSON line); the exit status: 0
// when it verified, else 1 with its reason on stderr too.
int Report(const v1::RunResult& result, bool json) {
  std::cout << (json ? base::ToJsonLine(result) + "\n" : RunResultText(result));
  if (result.verified()) return engine::kExitOk;
  std::cerr << "meshtune: " << FailureLine(result) << "\n";
  return engine::kExitFailed;
}

// Every rank in this process, without MPI.
int RunSimulated(const RunFlags& flags, const runtime::RunSpec& spec) {
  runtime::SimOptions sim;
  sim.seed = flags.measure.seed;
  sim.warmup = flags.measure.warmup;
  sim.reps = flags.measure.reps;
  sim.timeout_s = flags.measure.timeout_s;
  if (flags.inject_fault == "wrong") sim.inject_fault = flags.inject_fault;
  runtime::RunStats stats;
  if (spec.later.empty()) {
    stats = runtime::Simulate(spec.problem, spec.program, sim);
  } else {  // a program: its first statement, then the others
    std::vector<runtime::StatementJob> jobs{{spec.problem, spec.program}};
    jobs.insert(jobs.end(), spec.later.begin(), spec.later.end());
    stats = runtime::SimulateStatements(jobs, sim);
  }
  v1::RunResult result = runtime::RunResultOf(stats);
  result.set_checked("simulated");
  return Report(result, flags.output.json);
}

// What to run: the trace of --trace with --expr, --extents and --mesh, or the record --record
// (in the names of --expr and --extents when given). A record whose answer is the library
// comes back with `library` set.
// "2x2,64" as the library run on a 2 x 2 grid with 64 x 64 blocks; InvalidArgument quoting
// the text otherwise.
absl::StatusOr<v1::LibraryRun> LibraryOf(const std::string& text, const std::string& dtype) {
  int prow = 0, pcol = 0, nb = 0;
  char x = 0, comma = 0, rest = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c%d%c", &prow, &x, &pcol, &comma, &nb, &rest) != 5 ||
      x != 'x' || comma != ',' || prow < 1 || pcol < 1 || nb < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--library ", base::Excerpt(text, base::kMaxExcerpt),
        ": give a grid and a block size, e.g. 2x2,64 (PROWSxPCOLS,NB, each at least 1)"));
  }
  v1::LibraryRun l;
  l.set_library(dtype == "f64" ? "PDGEMM" : "PSGEMM");
  l.set_prow(prow);
  l.set_pcol(pcol);
  l.set_nb(nb);
  return l;
}

absl::StatusOr<v1::Record> RunRequestOf(const RunFlags& flags) {
  const TraceFlags& t = flags.trace;
  if (!flags.library.empty()) {
    if (t.workload.expr.empty() || t.workload.extents.empty())
      return absl::InvalidArgumentError("--library needs --expr and --extents");
    v1::Record out;
    MT_RETURN_IF_ERROR(t.workload.Fill(out.mutable_problem()));
    MT_ASSIGN_OR_RETURN(*out.mutable_library(), LibraryOf(flags.library, out.problem().dtype()));
    return out;
  }
  if (t.trace.empty() == (flags.record == 0))
    return absl::InvalidArgumentError(
        "give exactly one of --trace FILE, --record ID and --library PxQ,NB");
  v1::Record out;
  if (flags.record == 0) {
    if (t.workload.expr.empty() || t.workload.extents.empty() || t.mesh.mesh.empty())
      return absl::InvalidArgumentError("--trace needs --expr, --extents and --mesh");
    v1::Mesh mesh;
    MT_RETURN_IF_ERROR(t.Fill(out.mutable_problem(), &mesh, out.mutable_trace()));
    out.set_mesh(mesh.axes());
    return out;
  }
  v1::GetRecordRequest get;
  get.set_id(flags.record);
  if (!t.workload.expr.empty() || !t.workload.extents.empty()) {
    MT_RETURN_IF_ERROR(t.workload.Fill(get.mutable_problem()));
  }
  MT_ASSIGN_OR_RETURN(out, flags.target.Make()->GetRecord(get));
  if (!t.mesh.mesh.empty()) out.set_mesh(t.mesh.mesh);
  return out;
}

// Legality first (an illegal trace is bad input here), then one MPI run, or with --simulate
// one run of every rank in this process. A record whose answer is the library runs
// ScaLAPACK's GEMM on its grid instead.
int RunRun(const RunFlags& flags) {
  absl::StatusOr<v1::Record> what = RunRequestOf(flags);
  if (!what.ok()) return Fail(what.status(), std::cerr);
  v1::ExplainRequest request;
  *request.mutable_problem() = what->problem();
  request.mutable_mesh()->set_axes(what->mesh());
  request.mutable_mesh()->set_mem_per_rank(flags.trace.mesh.mem_per_rank);
  *request.mutable_trace() = what->trace();
  absl::StatusOr<engine::PreparedRun> prepared =
      what->has_library() ? engine::PrepareLibraryRun(request.problem(), what->library())
                          : engine::PrepareRun(request);
  if (!prepared.ok()) return Fail(prepared.status(), std::cerr);
  if (what->has_library() && flags.simulate) {
    return Fail(absl::InvalidArgumentError(
                    "--simulate runs schedules; the record's answer is the library, which runs "
                    "under MPI only"),
                std::cerr);
  }
  runtime::RunSpec& spec = prepared->spec;
  spec.reps = flags.measure.reps;
  spec.warmup = flags.measure.warmup;
  spec.seed = flags.measure.seed;
  spec.inject_fault = flags.inject_fault;
  std::optional<v1::HardwareProfile> profile;
  if (!flags.profile.empty()) {
    absl::StatusOr<v1::HardwareProfile> loaded = storage::LoadProfile(flags.profile);
    if (!loaded.ok()) return Fail(loaded.status(), std::cerr, engine::NotFoundIs::kBadInput);
    profile = *std::move(loaded);
  }
  runtime::LaunchOptions options = engine::ClusterLaunch(
      engine::LaunchCluster(flags.launcher.Cluster(), profile ? &*profile : nullptr));
  options.worker = flags.launcher.worker;
  options.timeout_s = flags.measure.timeout_s;
  // --mem-per-rank was checked with the legality (over_memory_budget); the machine's own
  // memory is checked here, before any worker can die of std::bad_alloc.
  if (absl::Status fits = runtime::CheckRunFitsMemory(prepared->footprint, spec.ranks, options);
      !fits.ok()) {
    return Fail(fits, std::cerr);
  }
  // Every rank in this process (the memory check above counted them all).
  if (flags.simulate) return RunSimulated(flags, spec);
  runtime::InstallStopSignalHandlers();
  const runtime::LaunchResult r = runtime::Launch(spec, options);
  // Interrupted: the job, its ranks and the job file are gone; main() ends by the signal.
  if (runtime::StopSignal() != 0)
    return Fail(absl::CancelledError(r.error.value_or("interrupted")), std::cerr);
  return Report(RunResultOfLaunch(r), flags.output.json);
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "run a trace under MPI, verify it and time it");
  flags->trace.Add(cmd, /*required=*/false);
  cmd->add_option("--record", flags->record,
                  "run this tuning record's answer (a schedule, or the library) instead of --trace")
      ->transform(engine::IntegerIn(1, kInt64Max))
      ->excludes("--trace");
  cmd->add_option("--library", flags->library,
                  "run ScaLAPACK's GEMM (PSGEMM, PDGEMM for f64) for --expr and --extents on "
                  "this grid and block size, e.g. 2x2,64, as a tune measures it")
      ->excludes("--trace")
      ->excludes("--record");
  flags->target.Add(cmd, TargetUse::kDatabase);
  flags->measure.Add(cmd);
  flags->measure.AddTimeout(cmd);
  flags->measure.AddSeed(cmd);
  flags->launcher.Add(cmd);
  cmd->add_option("--profile", flags->profile,
                  "launch on the cluster this hardware profile was calibrated on "
                  "(`meshtune calibrate --hostfile`), unless --hostfile, --launcher or "
                  "--launcher-arg say otherwise");
  cmd->add_option("--inject-fault", flags->inject_fault, "tests only: crash, hang or wrong")
      ->check(engine::OneOf({"crash", "hang", "wrong"}));
  cmd->add_flag(
      "--simulate", flags->simulate,
      "run every rank in this process (no MPI) and verify against the reference; times are not a "
      "machine's");
  flags->output.AddJson(cmd, "print the result as one JSON line (meshtune.v1.RunResult)");
  return {cmd, [flags] { return RunRun(*flags); }};
}

}  // namespace meshtune::cli
