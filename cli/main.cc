// meshtune: the command-line front end of the engine.
//
// Subcommands: explain (legality verdict, maps, transfers and pseudo-code of one trace),
// run (one trace under MPI), codegen (the C++ MPI program of a trace), calibrate (this
// machine's alpha-beta-gamma numbers, stored as a hardware profile; cli/calibrate_cmd.h),
// fidelity (the cost model's ranking against measured runs; cli/fidelity_cmd.h),
// tune (search, cost and measure schedules, store the winner; cli/tune_cmd.h), lookup
// and records (the tuning database; cli/record_cmds.h), report (a record's tuning report as
// HTML; cli/report_cmd.h) and batch (tunes from a JSON-lines
// file; cli/batch_cmd.h); serve runs the daemon meshtuned. tune, lookup, records, batch, explain
// and codegen run in this process (against the tuning database `--db`, storage::DefaultDbPath() by
// default) or, with
// `--server HOST:PORT`, by a meshtuned daemon; their output is the same either way.
// With --json, each prints one message of proto/meshtune.proto in protobuf's JSON mapping
// (base/json.h): explain an ExplainResponse, run a RunResult, calibrate a HardwareProfile,
// fidelity a FidelityResult, tune a TuneResult, batch a BatchLine per request, lookup a Record,
// records a Record a line. Exit status: 0 when the command ran (for run: and verified), 2 on bad
// input (message on stderr naming the offending token), 1 on an internal error, a run that failed
// (its result says why), a missing record, an unreachable daemon or output that could not be
// written ("meshtune: cannot write to standard output: No space left on device").
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/json.h"
#include "base/paths.h"
#include "base/status_macros.h"
#include "cli/batch_cmd.h"
#include "cli/calibrate_cmd.h"
#include "cli/cli_io.h"
#include "cli/codegen_lookup.h"
#include "cli/fidelity_cmd.h"
#include "cli/record_cmds.h"
#include "cli/remote_backend.h"
#include "cli/report_cmd.h"
#include "cli/run_output.h"
#include "cli/tune_cmd.h"
#include "cli/wisdom_cmds.h"
#include "engine/backend.h"
#include "engine/exit_codes.h"
#include "engine/explain.h"
#include "engine/flag_checks.h"
#include "engine/local_backend.h"
#include "engine/requests.h"
#include "ir/mesh.h"
#include "ir/trace.h"
#include "runtime/launcher.h"
#include "runtime/memory_fit.h"
#include "runtime/run_result.h"
#include "storage/tuning_db.h"

namespace meshtune::cli {
namespace {

int Fail(const absl::Status& status) { return cli::Fail(status, std::cerr); }

// The longest --timeout, --budget-s: a week.
constexpr double kMaxTimeoutS = 7 * 24 * 3600;
// Integer flags whose range the command checks itself (with its own message) are only
// checked to be integers that fit: CLI11 would saturate 99999999999999999999 to 2^63 - 1.
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMin = std::numeric_limits<int>::min();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();

struct RunFlags {
  int reps = 3, warmup = 1;
  double timeout_s = 300;
  uint64_t seed = 1;
  std::string worker, hostfile, launcher, inject_fault;
  std::vector<std::string> launcher_args;
  bool simulate = false;
  bool json = false;

  void Add(CLI::App* cmd) {
    cmd->add_option("--reps", reps, "timed repetitions")->transform(engine::IntegerIn(1, 100000));
    cmd->add_option("--warmup", warmup, "untimed repetitions first")
        ->transform(engine::IntegerIn(0, 100000));
    cmd->add_option("--timeout", timeout_s, "seconds before the job is killed")
        ->check(engine::NumberIn(0, kMaxTimeoutS, /*min_exclusive=*/true));
    cmd->add_option("--seed", seed, "seed of the input values")->transform(engine::Unsigned64());
    cmd->add_option("--worker", worker, "path of meshtune_worker (default: found beside meshtune)");
    cmd->add_option("--hostfile", hostfile, "MPI hostfile for a cluster");
    cmd->add_option("--launcher", launcher, "launcher program instead of mpirun (e.g. srun)");
    cmd->add_option("--launcher-arg", launcher_args, "extra launcher argument (repeatable)");
    cmd->add_option("--inject-fault", inject_fault, "tests only: crash, hang or wrong")
        ->check(engine::OneOf({"crash", "hang", "wrong"}));
    cmd->add_flag(
        "--simulate", simulate,
        "run every rank in this process (no MPI) and verify against the reference; times are not a "
        "machine's");
    cmd->add_flag("--json", json, "print the result as one JSON line (meshtune.v1.RunResult)");
  }
};

// `--layout TENSOR=SPEC`, repeatable, on tune, explain, run and codegen.
void AddLayoutOption(CLI::App* cmd, std::vector<std::string>* layouts) {
  cmd->add_option(
      "--layout", *layouts,
      "TENSOR=SPEC: where the application holds a tensor, block (default), "
      "cyclic(MB,NB) (ScaLAPACK), replicated, root or grid(AXIS or *,...) (repeatable)");
}

struct ProblemFlags {
  std::string expr, extents, dtype = "f32", mesh, mem_per_rank;
  std::vector<std::string> layouts;
  bool result_on_layer = false;

  // `required`: --expr, --extents and --mesh must be given (codegen checks them itself).
  void Add(CLI::App* cmd, bool required = true) {
    CLI::Option* e = cmd->add_option(
        "--expr", expr, "statement in index notation, e.g. 'C[m,n] += A[m,k] * B[k,n]'");
    CLI::Option* x =
        cmd->add_option("--extents", extents, "index extents, e.g. m=512,n=1024,k=2048");
    cmd->add_option("--dtype", dtype, "f32 or f64");
    CLI::Option* m = cmd->add_option("--mesh", mesh, "mesh axes, e.g. x=8,y=8");
    if (required) {
      e->required();
      x->required();
      m->required();
    }
    cmd->add_option("--mem-per-rank", mem_per_rank, "memory budget per rank, e.g. 2GiB");
    AddLayoutOption(cmd, &layouts);
    cmd->add_flag("--result-on-layer", result_on_layer,
                  "an output the schedule copies along a mesh axis ends on the copies at "
                  "coordinate 0 of it alone (saves the last step; codegen's header and "
                  "NAME_holds say which ranks hold it); by default every copy holds the result");
  }
  // `request`'s problem and mesh from the flags, and its trace read from `trace_path`
  // ("-": stdin). The reader's error (naming the path) when it cannot be read.
  template <typename Request>
  absl::Status Fill(const std::string& trace_path, Request& request) const {
    request.mutable_problem()->set_expr(expr);
    request.mutable_problem()->set_extents(extents);
    request.mutable_problem()->set_dtype(dtype);
    request.mutable_mesh()->set_axes(mesh);
    request.mutable_mesh()->set_mem_per_rank(mem_per_rank);
    MT_RETURN_IF_ERROR(engine::SetLayoutFlags(layouts, request.mutable_problem()));
    request.mutable_problem()->set_result_on_layer(result_on_layer);
    absl::StatusOr<std::string> text = ReadInput(trace_path, ir::kMaxTraceBytes);
    if (!text.ok()) return text.status();
    request.mutable_trace()->set_text(*text);
    return absl::OkStatus();
  }
};

// Where a command is answered: this process (with a tuning database) or meshtuned.
struct TargetFlags {
  std::string db = storage::DefaultDbPath();
  std::string server;
  bool no_db = false;

  // `db`: whether the command uses the tuning database (--db, and --no-db for tune).
  void Add(CLI::App* cmd, bool db_flag, bool no_db_flag) {
    CLI::Option* server_opt =
        cmd->add_option("--server", server,
                        "HOST:PORT of a meshtuned daemon to ask instead of this process")
            ->check(engine::HostPort(/*allow_port_zero=*/false));
    if (db_flag) {
      cmd->add_option("--db", db, "SQLite tuning database (default: " + db + ")")
          ->excludes(server_opt);
    }
    if (no_db_flag)
      cmd->add_flag("--no-db", no_db, "do not store the winner")->excludes(server_opt);
  }

  std::unique_ptr<engine::Backend> Make(engine::LocalTuneSettings settings = {}) const {
    auto warn = [](const std::string& message) { std::cerr << "meshtune: " << message << "\n"; };
    if (!server.empty()) return NewRemoteBackend(server, warn);
    engine::LocalBackendOptions options;
    options.db_path = no_db ? "" : db;
    options.tune = std::move(settings);
    options.warn = warn;
    return engine::NewLocalBackend(std::move(options));
  }
};

// Workload flags for lookup and records.
void AddWorkloadFlags(CLI::App* cmd, WorkloadFlags* w, bool required) {
  CLI::Option* expr = cmd->add_option(
      "--expr", w->expr, "statement in index notation, e.g. 'C[m,n] += A[m,k] * B[k,n]'");
  CLI::Option* extents =
      cmd->add_option("--extents", w->extents, "index extents, e.g. m=512,n=1024,k=2048");
  if (required) {
    expr->required();
    extents->required();
  }
  cmd->add_option("--dtype", w->dtype, "f32 or f64");
  cmd->add_option("--mesh", w->mesh, "mesh axes, e.g. x=8,y=8");
  cmd->add_option("--ranks", w->ranks, "rank count (a tune over every mesh of that many ranks)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: engine::RequestWorkload
  cmd->add_option("--profile", w->profile, "hardware profile (default: default)");
}

// `meshtune explain`: the ExplainResponse as text, or with --json as one JSON line.
int RunExplain(const ProblemFlags& flags, const std::string& trace_path, const std::string& profile,
               bool json, engine::Backend& backend) {
  v1::ExplainRequest request;
  if (absl::Status read = flags.Fill(trace_path, request); !read.ok()) return Fail(read);
  request.set_profile(profile);
  absl::StatusOr<v1::ExplainResponse> response = backend.Explain(request);
  if (!response.ok()) return Fail(response.status());
  std::cout << (json ? base::ToJsonLine(*response) + "\n" : engine::ExplainText(*response));
  return engine::kExitOk;
}

// `meshtune run`'s answer: the RunResult as text, or with --json as one JSON line.
void PrintRunResult(const v1::RunResult& result, bool json) {
  std::cout << (json ? base::ToJsonLine(result) + "\n" : RunResultText(result));
}

// `meshtune run`: legality first (an illegal trace is bad input here), then one MPI run,
// or with --simulate one run of every rank in this process. Prints the meshtune.v1.RunResult
// (checked "measured" or "simulated"): text, or with --json one JSON line.
int RunRun(const ProblemFlags& flags, const std::string& trace_path, const RunFlags& rf) {
  v1::ExplainRequest request;
  if (absl::Status read = flags.Fill(trace_path, request); !read.ok()) return Fail(read);
  absl::StatusOr<engine::PreparedRun> prepared = engine::PrepareRun(request);
  if (!prepared.ok()) return Fail(prepared.status());
  runtime::RunSpec& spec = prepared->spec;
  spec.reps = rf.reps;
  spec.warmup = rf.warmup;
  spec.seed = rf.seed;
  spec.inject_fault = rf.inject_fault;
  runtime::LaunchOptions options;
  options.worker = rf.worker;
  options.timeout_s = rf.timeout_s;
  options.hostfile = rf.hostfile;
  options.extra_args = rf.launcher_args;
  if (!rf.launcher.empty()) options.launcher = {rf.launcher};
  // --mem-per-rank was checked with the legality (over_memory_budget); the machine's own
  // memory is checked here, before any worker can die of std::bad_alloc.
  if (absl::Status fits = runtime::CheckRunFitsMemory(prepared->footprint, spec.ranks, options);
      !fits.ok()) {
    return Fail(fits);
  }
  // Every rank in this process (the memory check above counted them all).
  if (rf.simulate) {
    runtime::SimOptions sim;
    sim.seed = rf.seed;
    sim.warmup = rf.warmup;
    sim.reps = rf.reps;
    sim.timeout_s = rf.timeout_s;
    if (rf.inject_fault == "wrong") sim.inject_fault = rf.inject_fault;
    const runtime::RunStats m = runtime::Simulate(spec.problem, spec.program, sim);
    v1::RunResult result = runtime::RunResultOf(m);
    result.set_checked("simulated");
    PrintRunResult(result, rf.json);
    return m.verified ? engine::kExitOk : engine::kExitFailed;
  }
  runtime::InstallStopSignalHandlers();
  const runtime::LaunchResult r = runtime::Launch(spec, options);
  // Interrupted: the job, its ranks and the job file are gone; main() ends by the signal.
  if (runtime::StopSignal() != 0)
    return Fail(absl::CancelledError(r.error.value_or("interrupted")));
  PrintRunResult(RunResultOfLaunch(r), rf.json);
  return r.verified ? engine::kExitOk : engine::kExitFailed;
}

// Where codegen's trace comes from besides --trace.
struct CodegenSource {
  bool main = false;        // --main: a standalone benchmark program
  std::string name;         // --name: the callable kernel's name
  std::string header;       // --header: where the callable kernel's header goes
  int64_t record = 0;       // --record ID
  ScheduleSource schedule;  // --lookup [--wisdom FILE] [--estimate], or --estimate alone
  int64_t ranks = 0;        // with --lookup or --estimate, instead of --mesh
  std::string profile;      // with --lookup
};

// codegen's request: from --trace (with --expr, --extents, --mesh), --record ID (in the
// names of --expr/--extents when given; its mesh unless --mesh) or --lookup (the
// workload's best record, in its names, from the database or --wisdom FILE) and/or
// --estimate (cli/codegen_lookup.h). InvalidArgument naming what is missing.
absl::StatusOr<v1::CodegenRequest> CodegenRequestOf(const ProblemFlags& flags,
                                                    const std::string& trace_path,
                                                    const CodegenSource& source,
                                                    engine::Backend& backend) {
  const bool lookup = source.schedule.lookup || source.schedule.estimate;
  if ((!trace_path.empty()) + (source.record != 0) + lookup != 1) {
    return absl::InvalidArgumentError(
        "give exactly one of --trace FILE, --record ID and --lookup or --estimate (with --expr, "
        "--extents and --mesh or --ranks)");
  }
  if (!source.schedule.wisdom.empty() && !source.schedule.lookup)
    return absl::InvalidArgumentError("--wisdom FILE needs --lookup");
  v1::CodegenRequest request;
  request.set_main(source.main);
  request.set_name(source.name);
  if (!trace_path.empty()) {
    if (flags.expr.empty() || flags.extents.empty() || flags.mesh.empty())
      return absl::InvalidArgumentError("--trace needs --expr, --extents and --mesh");
    MT_RETURN_IF_ERROR(flags.Fill(trace_path, request));
    return request;
  }
  if (!flags.expr.empty() || !flags.extents.empty() || lookup) {
    if (flags.expr.empty() || flags.extents.empty()) {
      return absl::InvalidArgumentError(
          "give the problem: --expr (e.g. 'C[m,n] += A[m,k] * B[k,n]') and --extents");
    }
    request.mutable_problem()->set_expr(flags.expr);
    request.mutable_problem()->set_extents(flags.extents);
    request.mutable_problem()->set_dtype(flags.dtype);
    MT_RETURN_IF_ERROR(engine::SetLayoutFlags(flags.layouts, request.mutable_problem()));
  }
  request.mutable_mesh()->set_mem_per_rank(flags.mem_per_rank);
  if (source.record != 0) {
    request.set_record_id(source.record);
    request.mutable_mesh()->set_axes(flags.mesh);
    return request;
  }
  v1::LookupRequest workload;
  *workload.mutable_problem() = request.problem();
  workload.mutable_mesh()->set_axes(flags.mesh);
  workload.set_ranks(source.ranks);
  workload.set_profile(source.profile);
  workload.mutable_mesh()->set_mem_per_rank(flags.mem_per_rank);
  auto warn = [](const std::string& message) { std::cerr << "meshtune: " << message << "\n"; };
  MT_ASSIGN_OR_RETURN(v1::Record found, FindSchedule(workload, source.schedule, backend, warn));
  request.mutable_mesh()->set_axes(found.mesh());
  *request.mutable_trace() = found.trace();
  return request;
}

// Where a callable kernel's header goes: --header, or beside `output` with the extension
// .h; "" when the source goes to stdout without --header (one self-contained file).
std::string HeaderPath(const std::string& output, const CodegenSource& source) {
  if (!source.header.empty() || source.main) return source.header;
  if (output.empty() || output == "-") return "";
  return std::filesystem::path(output).replace_extension(".h").string();
}

// `meshtune codegen`: a callable kernel (source and header) or, with --main, a standalone
// C++ MPI program, of a trace or a record, to files or stdout.
int RunCodegen(const ProblemFlags& flags, const std::string& trace_path,
               const CodegenSource& source, const std::string& output, engine::Backend& backend) {
  absl::StatusOr<v1::CodegenRequest> request = CodegenRequestOf(flags, trace_path, source, backend);
  if (!request.ok()) return Fail(request.status());
  if (flags.result_on_layer) request->mutable_problem()->set_result_on_layer(true);
  const std::string header = HeaderPath(output, source);
  if (!header.empty()) request->set_header_name(std::filesystem::path(header).filename().string());
  absl::StatusOr<v1::CodegenResponse> response = backend.Codegen(*request);
  if (!response.ok()) return Fail(response.status());
  if (!header.empty() && !source.main) {
    if (absl::Status s = WriteTextFile(header, response->header()); !s.ok()) return Fail(s);
  }
  if (output.empty() || output == "-") {
    // A source larger than stdout's buffer is written here, not at the final flush: keep the
    // reason of a failed write.
    errno = 0;
    std::cout << response->source();
    if (!std::cout) {
      const int error = errno;
      return Fail(absl::UnavailableError(
          absl::StrCat("cannot write to standard output: ",
                       error != 0 ? std::strerror(error) : "a write failed")));
    }
    return engine::kExitOk;
  }
  if (absl::Status s = WriteTextFile(output, response->source()); !s.ok()) return Fail(s);
  return engine::kExitOk;
}

// `meshtune serve ARGS...`: replaces this process with meshtuned ARGS..., found as Bazel
// builds it (daemon/meshtuned beside cli/) or installed beside meshtune. Returns only when
// it cannot be started.
int RunServe(const std::vector<std::string>& args) {
  const std::string path = base::FindCompanion("MESHTUNED", {"daemon/meshtuned"});
  if (path.empty()) {
    return Fail(absl::FailedPreconditionError(
        "cannot find meshtuned beside meshtune (build it: bazel build -c opt //daemon:meshtuned)"));
  }
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  return Fail(absl::InternalError(absl::StrCat("cannot start ", path, ": ", std::strerror(errno))));
}

// Every subcommand's flags, filled in by CLI11 as it parses.
struct AllFlags {
  ProblemFlags explain, run, codegen;
  std::string explain_trace, explain_profile, run_trace, codegen_trace, codegen_out;
  CodegenSource codegen_source;
  bool explain_json = false;
  RunFlags run_opts;
  TargetFlags explain_target, codegen_target, tune_target, lookup_target, records_target,
      batch_target;
  CalibrateOptions calibrate;
  FidelityFlags fidelity;
  engine::TuneFlags tune;
  double tune_alpha = 0, tune_beta = 0, tune_gamma = 0;
  CLI::Option* profile_opt = nullptr;
  CLI::Option* alpha_opt = nullptr;
  CLI::Option* beta_opt = nullptr;
  CLI::Option* gamma_opt = nullptr;
  WorkloadFlags lookup;
  bool lookup_json = false;
  RecordsFlags records;
  std::string import_path;
  std::string tune_report;
  ReportFlags report;
  BatchFlags batch;
};

// The subcommands, to tell which one was given.
struct Subcommands {
  CLI::App* explain = nullptr;
  CLI::App* run = nullptr;
  CLI::App* gen = nullptr;
  CLI::App* calibrate = nullptr;
  CLI::App* fidelity = nullptr;
  CLI::App* tune = nullptr;
  CLI::App* lookup = nullptr;
  CLI::App* records = nullptr;
  CLI::App* records_export = nullptr;
  CLI::App* records_import = nullptr;
  CLI::App* report = nullptr;
  CLI::App* batch = nullptr;
  CLI::App* serve = nullptr;
};

// explain, run and codegen: one trace on a problem and a mesh.
void AddTraceCommands(CLI::App& app, AllFlags& f, Subcommands& s) {
  s.explain = app.add_subcommand("explain", "legality verdict, reasons and maps of a trace");
  f.explain.Add(s.explain);
  s.explain->add_option("--trace", f.explain_trace, "trace file ('-' for stdin)")->required();
  s.explain->add_flag("--json", f.explain_json, "print JSON");
  s.explain->add_option("--profile", f.explain_profile,
                        "hardware profile to cost a legal schedule with (default: default)");
  f.explain_target.Add(s.explain, false, false);

  s.run = app.add_subcommand("run", "run a trace under MPI, verify it and time it");
  f.run.Add(s.run);
  s.run->add_option("--trace", f.run_trace, "trace file ('-' for stdin)")->required();
  f.run_opts.Add(s.run);

  s.gen = app.add_subcommand(
      "codegen", "write the C++ kernel (or --main program) of a trace, a record or a best record");
  f.codegen.Add(s.gen, /*required=*/false);
  s.gen->add_option("--trace", f.codegen_trace, "trace file ('-' for stdin)");
  s.gen->add_option("--record", f.codegen_source.record, "the trace of this tuning record")
      ->transform(engine::IntegerIn(1, kInt64Max));
  s.gen->add_flag("--lookup", f.codegen_source.schedule.lookup,
                  "the best record of the workload (--expr, --extents, --mesh or --ranks)");
  CLI::Option* wisdom = s.gen->add_option(
      "--wisdom", f.codegen_source.schedule.wisdom,
      "with --lookup: look up in this wisdom file (records export), not the database");
  CLI::Option* estimate = s.gen->add_flag(
      "--estimate", f.codegen_source.schedule.estimate,
      "on a --lookup miss, or alone instead: the cost model's best with built-in machine "
      "numbers (deterministic; reads no profile)");
  s.gen
      ->add_option("--ranks", f.codegen_source.ranks,
                   "with --lookup or --estimate: the workload's rank count")
      ->transform(engine::IntegerIn(1, kInt64Max));
  s.gen->add_option("--profile", f.codegen_source.profile,
                    "with --lookup: the workload's hardware profile (default: default)");
  s.gen->add_flag("--main", f.codegen_source.main,
                  "a standalone benchmark program instead of a callable kernel");
  s.gen->add_option("--name", f.codegen_source.name,
                    "the callable kernel's name (default: meshtune_kernel)");
  s.gen->add_option("--header", f.codegen_source.header,
                    "where the kernel's header goes (default: beside -o FILE, as .h)");
  s.gen->add_option("-o,--output", f.codegen_out, "output file (default: stdout)");
  f.codegen_target.Add(s.gen, true, false);
  wisdom->excludes("--server")->excludes("--db");
  estimate->excludes("--server");
}

// calibrate.
void AddCalibrateCommand(CLI::App& app, AllFlags& f, Subcommands& s) {
  s.calibrate =
      app.add_subcommand("calibrate", "measure alpha, beta and gamma under MPI; store a profile");
  s.calibrate
      ->add_option("--ranks", f.calibrate.ranks,
                   "MPI ranks, at least 2 (required unless --from-runs)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: RunCalibrate
  s.calibrate->add_option("--name", f.calibrate.name, "hardware profile name (default: default)");
  s.calibrate->add_option("--dtype", f.calibrate.dtype, "GEMM element type: f32 or f64");
  s.calibrate
      ->add_option("--timeout", f.calibrate.timeout_s,
                   "seconds before the job is killed (default: 600)")
      ->check(engine::NumberIn(0, kMaxTimeoutS, /*min_exclusive=*/true));
  s.calibrate->add_flag("--quick", f.calibrate.quick, "fewer sizes and repetitions (~1 s)");
  s.calibrate
      ->add_option("--flush-mib", f.calibrate.flush_mib,
                   "MiB each node writes before every timed transfer, to time it from cold "
                   "caches as schedules run it (default: twice the last-level cache; none where "
                   "ranks outnumber cores)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: RunCalibrate
  s.calibrate->add_flag("--json", f.calibrate.json, "print the profile as JSON");
  s.calibrate
      ->add_option("--from-runs", f.calibrate.from_runs,
                   "instead of calibrating: fit the cost model's term scales of profile --name "
                   "to measured runs (files of `meshtune fidelity --json` lines)")
      ->expected(1, -1);
  s.calibrate->add_option("--inter-node", f.calibrate.inter_node,
                          "instead of calibrating: ALPHA,BETA, seconds per message and per byte "
                          "between nodes, stored in profile --name (with --node-ranks)");
  s.calibrate
      ->add_option("--node-ranks", f.calibrate.node_ranks,
                   "with --inter-node: the ranks of one node (ranks fill nodes in order)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: RunCalibrateInterNode
  s.calibrate->add_option("--hostfile", f.calibrate.hostfile,
                          "instead of calibrating: measure the link between nodes of profile "
                          "--name with an MPI hostfile whose nodes hold --node-ranks ranks each");
  s.calibrate->add_option("--calibrator", f.calibrate.calibrator,
                          "path of meshtune_calibrate (default: found beside meshtune)");
}

// fidelity.
void AddFidelityCommand(CLI::App& app, AllFlags& f, Subcommands& s) {
  FidelityFlags& x = f.fidelity;
  s.fidelity = app.add_subcommand(
      "fidelity",
      "measure candidates spread over the cost model's ranking; rank correlation and errors");
  s.fidelity
      ->add_option("--expr", x.expr,
                   "statement in index notation, e.g. 'C[m,n] += A[m,k] * B[k,n]'")
      ->required();
  s.fidelity->add_option("--extents", x.extents, "index extents, e.g. m=1024,n=1024,k=1024")
      ->required();
  s.fidelity->add_option("--dtype", x.dtype, "f32 or f64");
  s.fidelity->add_option("--mesh", x.mesh, "mesh axes, e.g. x=2,y=2")->required();
  s.fidelity->add_option("--count", x.count, "candidates measured, 2 to 1000 (default 12)")
      ->transform(engine::IntegerIn(2, 1000));
  s.fidelity
      ->add_option("--rounds", x.rounds,
                   "measurements of each candidate, in rounds of alternating order (default 3)")
      ->transform(engine::IntegerIn(1, 1000));
  s.fidelity
      ->add_option("--round-statistic", x.round_statistic,
                   "which round is a candidate's time: min (the fastest, the least disturbed; "
                   "default) or median")
      ->check(CLI::IsMember({"min", "median"}));
  s.fidelity
      ->add_option("--max-evaluations", x.max_evaluations,
                   "schedules the model ranks first (default 1000)")
      ->transform(engine::IntegerIn(1, 100000000));
  s.fidelity->add_option("--profile", x.profile, "hardware profile (default: default)");
  s.fidelity->add_option("--reps", x.run.reps, "timed repetitions per measurement (default 5)")
      ->transform(engine::IntegerIn(1, 100000));
  s.fidelity->add_option("--warmup", x.run.warmup, "untimed repetitions first (default 3)")
      ->transform(engine::IntegerIn(0, 100000));
  s.fidelity->add_option("--timeout", x.timeout_s, "seconds before a measurement is killed")
      ->check(engine::NumberIn(0, kMaxTimeoutS, /*min_exclusive=*/true));
  s.fidelity->add_option("--worker", x.run.worker,
                         "path of meshtune_worker (default: found beside meshtune)");
  s.fidelity->add_option("--hostfile", x.run.hostfile, "MPI hostfile for a cluster");
  s.fidelity->add_option("--launcher", x.run.launcher, "launcher program instead of mpirun");
  s.fidelity->add_option("--launcher-arg", x.run.launcher_args,
                         "extra launcher argument (repeatable)");
  s.fidelity->add_flag("--allow-replication", x.allow_replication,
                       "rank tune's space with copies (--allow-replication)");
  s.fidelity->add_flag("--split-distributed", x.split_distributed,
                       "rank tune's space with distributed indices split further");
  s.fidelity->add_flag("--rotation-steps", x.rotation_steps,
                       "rank tune's space with rotations in steps other than 1");
  s.fidelity->add_flag("--all-to-all", x.all_to_all, "rank tune's space with all-to-all transfers");
  s.fidelity->add_flag("--json", x.json, "print meshtune.v1.FidelityResult as one JSON line");
  s.fidelity->add_option("--svg", x.svg, "write the predicted-against-measured scatter here");
}

// tune.
void AddTuneCommand(CLI::App& app, AllFlags& f, Subcommands& s) {
  s.tune = app.add_subcommand("tune", "search, cost and measure schedules; print the best");
  s.tune
      ->add_option("--expr", f.tune.expr,
                   "statement in index notation, e.g. 'C[m,n] += A[m,k] * B[k,n]'")
      ->required();
  s.tune->add_option("--extents", f.tune.extents, "index extents, e.g. m=512,n=1024,k=2048")
      ->required();
  s.tune->add_option("--dtype", f.tune.dtype, "f32 or f64");
  s.tune->add_option("--mesh", f.tune.mesh, "mesh axes, e.g. x=8,y=8");
  s.tune->add_option("--ranks", f.tune.ranks, "rank count: try every mesh of 1 to 3 axes")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: engine::MakeTuneOptions
  s.tune->add_option("--mem-per-rank", f.tune.mem_per_rank, "memory budget per rank, e.g. 2GiB");
  s.tune->add_option("--top-k", f.tune.top_k, "candidates measured under MPI (default 4)")
      ->transform(engine::IntegerIn(kIntMin, kIntMax));  // the range: engine::MakeTuneOptions
  s.tune->add_option("--budget-s", f.tune.budget_s, "seconds for the whole tune (default 600)")
      ->check(engine::NumberIn(0, kMaxTimeoutS, /*min_exclusive=*/true));
  s.tune->add_flag("--model-only", f.tune.model_only, "measure nothing: the cost model's best");
  s.tune->add_flag("--json", f.tune.json, "print the result as one JSON line");
  s.tune->add_option("--report", f.tune_report,
                     "also write the winner's tuning report here, one HTML file ('-': stdout)");
  f.profile_opt =
      s.tune->add_option("--profile", f.tune.profile, "hardware profile (default: default)");
  // Machine numbers: seconds per message, byte and flop; a second for any of them is absurd
  // already.
  f.alpha_opt =
      s.tune->add_option("--alpha", f.tune_alpha, "latency per message, s (overrides the profile)")
          ->check(engine::NumberIn(0, 1));
  f.beta_opt = s.tune->add_option("--beta", f.tune_beta, "seconds per byte (overrides the profile)")
                   ->check(engine::NumberIn(0, 1));
  f.gamma_opt =
      s.tune->add_option("--gamma", f.tune_gamma, "seconds per flop (overrides the profile)")
          ->check(engine::NumberIn(0, 1));
  s.tune
      ->add_option("--max-evaluations", f.tune.max_evaluations,
                   "schedules lowered and costed (default 1000)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: engine::MakeTuneOptions
  s.tune->add_option("--seed", f.tune.seed, "seed of the evolutionary search")
      ->transform(engine::Unsigned64());
  s.tune->add_flag(
      "--allow-replication", f.tune.allow_replication,
      "let tensors be replicated along mesh axes (2.5D-style; bound it with --mem-per-rank)");
  s.tune->add_flag("--split-distributed", f.tune.split_distributed,
                   "also split distributed indices: an index over two mesh axes, a distributed "
                   "index in steps, rotations by two of three axes (Tesseract, 2.5D with steps, "
                   "2.5D Cannon); a larger space");
  s.tune->add_flag("--rotation-steps", f.tune.rotation_steps,
                   "also rotate in steps other than 1: a time loop of E steps turned by a "
                   "distributed loop over s ranks in steps of E/s (each rank starts at its own "
                   "block)");
  s.tune->add_flag("--all-to-all", f.tune.all_to_all,
                   "also make transfers from several ranks' shards, as an all-to-all exchange "
                   "(steps that straddle a layout's blocks)");
  AddLayoutOption(s.tune, &f.tune.layouts);
  s.tune->add_flag("--in-place", f.tune.in_place,
                   "with cyclic layouts for every tensor and --mesh: tune the form in which the "
                   "application's local arrays are the shards (nothing redistributed)");
  s.tune->add_flag("--allow-idle-ranks", f.tune.allow_idle_ranks,
                   "with --ranks P: also try meshes of fewer ranks, down to half of P, the other "
                   "ranks idle");
  s.tune->add_option("--reps", f.tune.reps, "timed repetitions per measurement")
      ->transform(engine::IntegerIn(1, 100000));
  s.tune->add_option("--warmup", f.tune.warmup, "untimed repetitions first")
      ->transform(engine::IntegerIn(0, 100000));
  s.tune->add_option("--worker", f.tune.worker,
                     "path of meshtune_worker (default: found beside meshtune)");
  s.tune->add_option("--hostfile", f.tune.hostfile, "MPI hostfile for a cluster");
  s.tune->add_option("--launcher", f.tune.launcher,
                     "launcher program instead of mpirun (e.g. srun)");
  s.tune->add_option("--launcher-arg", f.tune.launcher_args,
                     "extra launcher argument (repeatable)");
  f.tune_target.Add(s.tune, true, true);
  // A daemon costs with its own profile and measures with its own launcher.
  for (const char* local_only : {"--alpha", "--beta", "--gamma", "--reps", "--warmup", "--worker",
                                 "--hostfile", "--launcher", "--launcher-arg"}) {
    s.tune->get_option(local_only)->excludes("--server");
  }
}

// lookup and records: the tuning database.
void AddRecordCommands(CLI::App& app, AllFlags& f, Subcommands& s) {
  s.lookup =
      app.add_subcommand("lookup", "the best tuning record of a problem on a mesh or rank count");
  AddWorkloadFlags(s.lookup, &f.lookup, true);
  s.lookup->add_option("--mem-per-rank", f.lookup.mem_per_rank,
                       "the best record that fits this budget, e.g. 2GiB");
  s.lookup->add_flag("--nearest", f.lookup.nearest,
                     "when never tuned: the best schedule of the problem at other extents that "
                     "replays legally at these, re-costed, marked transferred and not stored");
  s.lookup->add_flag("--json", f.lookup_json,
                     "print the record as one JSON line (with --nearest the LookupResponse)");
  s.lookup->add_flag("--same-machine", f.lookup.same_machine,
                     "only records tuned with this machine's profile (same machine fingerprint)");
  f.lookup_target.Add(s.lookup, true, false);

  s.records = app.add_subcommand(
      "records", "list, export and import tuning records (of one workload with --expr ...)");
  AddWorkloadFlags(s.records, &f.records.workload, false);
  s.records->add_option("--limit", f.records.limit, "records to list, 1 to 1000 (default 50)")
      ->transform(engine::IntegerIn(kIntMin, kIntMax));  // the range: RunRecords
  s.records->add_option("--after", f.records.after, "list records with ids above this one")
      ->transform(engine::IntegerIn(0, kInt64Max));
  s.records->add_option("--id", f.records.id, "print this one record")
      ->transform(engine::IntegerIn(1, kInt64Max));
  s.records->add_flag("--json", f.records.json, "print each record as one JSON line");
  f.records_target.Add(s.records, true, false);
  // The workload flags, --db and --server of `records` serve its subcommands too.
  s.records_export = s.records->add_subcommand(
      "export", "write the records (of one workload with --expr ...) as a wisdom file on stdout");
  s.records_export->fallthrough();
  s.records_import = s.records->add_subcommand(
      "import",
      "merge a wisdom file into the database (--db); the verified faster record stays best");
  s.records_import->add_option("file", f.import_path, "wisdom file ('-' for stdin)")->required();
  s.records_import->fallthrough();

  s.report = app.add_subcommand(
      "report", "write a record's tuning report: one self-contained HTML file with pictures");
  s.report->add_option("record", f.report.record, "record id, as `meshtune records` lists it")
      ->required()
      ->transform(engine::IntegerIn(1, kInt64Max));
  s.report->add_option("-o,--output", f.report.output, "the HTML file to write ('-': stdout)")
      ->required();
  f.report.db = storage::DefaultDbPath();
  s.report->add_option("--db", f.report.db,
                       "SQLite tuning database (default: " + f.report.db + ")");
}

// batch, and serve (meshtuned's flags follow it).
void AddBatchAndServeCommands(CLI::App& app, AllFlags& f, Subcommands& s) {
  s.batch =
      app.add_subcommand("batch", "run the tunes of a JSON-lines file of meshtune.v1.TuneRequest");
  s.batch->add_option("file", f.batch.path, "JSON-lines file ('-' for stdin)")->required();
  s.batch->add_flag("--model-only", f.batch.model_only,
                    "measure nothing in any request: the cost model's best");
  f.batch_target.Add(s.batch, true, false);

  s.serve = app.add_subcommand("serve",
                               "run the daemon meshtuned (its flags follow; see meshtuned --help)");
  s.serve->prefix_command();
  s.serve->set_help_flag();  // `meshtune serve --help` is meshtuned's help
}

// Runs the subcommand that was given.
int Dispatch(AllFlags& f, const Subcommands& s) {
  if (s.explain->parsed())
    return RunExplain(f.explain, f.explain_trace, f.explain_profile, f.explain_json,
                      *f.explain_target.Make());
  if (s.run->parsed()) return RunRun(f.run, f.run_trace, f.run_opts);
  if (s.gen->parsed())
    return RunCodegen(f.codegen, f.codegen_trace, f.codegen_source, f.codegen_out,
                      *f.codegen_target.Make());
  if (s.serve->parsed()) return RunServe(s.serve->remaining());
  if (s.lookup->parsed())
    return RunLookup(f.lookup, f.lookup_json, *f.lookup_target.Make(), std::cout, std::cerr);
  if (s.records_export->parsed())
    return RunExport(f.records.workload, *f.records_target.Make(), std::cout, std::cerr);
  if (s.records_import->parsed()) {
    if (!f.records_target.server.empty()) {
      return Fail(absl::InvalidArgumentError(
          "records import writes a local database (--db), not a daemon's (--server)"));
    }
    return RunImport(f.import_path, f.records_target.db, std::cout, std::cerr);
  }
  if (s.records->parsed())
    return RunRecords(f.records, *f.records_target.Make(), std::cout, std::cerr);
  if (s.report->parsed()) return RunReport(f.report, std::cout, std::cerr);
  if (s.batch->parsed()) {
    f.batch.progress = isatty(STDERR_FILENO) != 0;
    return RunBatch(f.batch, *f.batch_target.Make(), std::cout, std::cerr);
  }
  if (s.calibrate->parsed()) return RunCalibrate(f.calibrate, std::cout, std::cerr);
  if (s.fidelity->parsed()) {
    f.fidelity.progress = isatty(STDERR_FILENO) != 0;
    return RunFidelity(f.fidelity, std::cout, std::cerr);
  }
  if (s.tune->parsed()) {
    f.tune.profile_given = f.profile_opt->count() > 0;
    if (f.alpha_opt->count() > 0) f.tune.alpha = f.tune_alpha;
    if (f.beta_opt->count() > 0) f.tune.beta = f.tune_beta;
    if (f.gamma_opt->count() > 0) f.tune.gamma = f.tune_gamma;
    f.tune.progress = isatty(STDERR_FILENO) != 0;
    return RunTune(f.tune, f.tune_report, *f.tune_target.Make(TuneSettingsFromFlags(f.tune)),
                   std::cout, std::cerr);
  }
  return engine::kExitBadInput;
}

// InvalidArgument naming the commands when argv[1] is a word that is none of them (CLI11
// would say "A subcommand is required").
absl::Status CheckCommandName(int argc, char** argv, CLI::App& app) {
  if (argc <= 1 || argv[1][0] == '-') return absl::OkStatus();
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), argv[1]) != names.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("unknown command '", base::Excerpt(argv[1]),
                                                 "'; the commands are ", absl::StrJoin(names, ", "),
                                                 " (meshtune --help)"));
}

int Main(int argc, char** argv) {
  CLI::App app{"meshtune: distributed schedules for tensor computations"};
  app.require_subcommand(1);
  AllFlags f;
  Subcommands s;
  AddTraceCommands(app, f, s);
  AddCalibrateCommand(app, f, s);
  AddFidelityCommand(app, f, s);
  AddTuneCommand(app, f, s);
  AddRecordCommands(app, f, s);
  AddBatchAndServeCommands(app, f, s);
  app.failure_message(engine::ParseFailureMessage);
  if (absl::Status name = CheckCommandName(argc, argv, app); !name.ok()) return Fail(name);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? engine::kExitOk : engine::kExitBadInput;
  }
  // Commands that run MPI jobs here stop them on SIGINT/SIGTERM (see RunRun for `run`);
  // main() then ends by that signal.
  if (s.calibrate->parsed() || s.fidelity->parsed() ||
      (s.tune->parsed() && f.tune_target.server.empty()) ||
      (s.batch->parsed() && f.batch_target.server.empty())) {
    runtime::InstallStopSignalHandlers();
  }
  return Dispatch(f, s);
}

}  // namespace
}  // namespace meshtune::cli

int main(int argc, char** argv) {
  int code = meshtune::engine::kExitFailed;
  try {
    code = meshtune::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "meshtune: internal error: " << e.what() << "\n";
  }
  // What a command printed must have reached its reader (a full disk, a closed pipe): a
  // command that succeeded but whose output was lost failed. (One that failed has said why
  // already; batch also stops at its first lost line and says so.)
  const absl::Status flushed = meshtune::cli::FlushStdout();
  // Stopped by SIGINT/SIGTERM (its jobs killed, temporary files removed): end by the same
  // signal, as a shell expects of Ctrl-C (status 130 or 143 to a shell).
  if (const int sig = meshtune::runtime::StopSignal(); sig != 0) {
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  if (!flushed.ok() && code == meshtune::engine::kExitOk) {
    std::cerr << "meshtune: " << flushed.message() << "\n";
    return meshtune::engine::kExitFailed;
  }
  return code;
}
