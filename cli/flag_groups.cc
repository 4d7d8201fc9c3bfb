#include "cli/flag_groups.h"

#include <iostream>
#include <utility>

#include "base/status_macros.h"
#include "cli/cli_io.h"
#include "cli/remote_backend.h"
#include "engine/cluster.h"
#include "engine/flag_checks.h"
#include "engine/requests.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "ir/trace.h"
#include "storage/tuning_db.h"

namespace meshtune::cli {

CLI::Option* AddProfileFlag(CLI::App* cmd, std::string* profile, const std::string& help) {
  return cmd->add_option("--profile", *profile, help);
}

void AddNoCalibrateFlag(CLI::App* cmd, bool* no_calibrate) {
  cmd->add_flag("--no-calibrate", *no_calibrate,
                "without a hardware profile for the rank count, use built-in machine numbers "
                "instead of calibrating first (a few seconds under mpirun)");
}

void WorkloadFlags::Add(CLI::App* cmd, bool required, const std::string& extents_example) {
  CLI::Option* e = cmd->add_option("--expr", expr,
                                   "statement in index notation, e.g. 'C[m,n] += A[m,k] * B[k,n]' "
                                   "(several, a program: separated by ';' or line breaks)");
  // The file is read as the command line is parsed, so that every use of `expr` sees it.
  CLI::Option* f =
      cmd->add_option_function<std::string>(
             "--expr-file",
             [this](const std::string& path) {
               absl::StatusOr<std::string> text =
                   ReadInput(path, ir::kMaxProgramBytes, "statements file");
               if (!text.ok())
                 throw CLI::ValidationError("--expr-file", std::string(text.status().message()));
               // A binary file is refused as one before it is split into statements.
               if (absl::Status s = CheckText(*text, path, "statements file", ir::kMaxProgramBytes);
                   !s.ok())
                 throw CLI::ValidationError("--expr-file", std::string(s.message()));
               expr = *std::move(text);
             },
             "the statements from this file ('-': stdin) instead of --expr")
          ->excludes(e);
  CLI::Option* x = cmd->add_option("--extents", extents, "index extents, e.g. " + extents_example);
  if (required) {
    // --expr or --expr-file, one of them.
    cmd->parse_complete_callback([e, f] {
      if (e->count() == 0 && f->count() == 0) throw CLI::RequiredError("--expr (or --expr-file)");
    });
    x->required();
  }
  cmd->add_option("--dtype", dtype, "f32 or f64");
}

void WorkloadFlags::AddLayouts(CLI::App* cmd) {
  cmd->add_option(
      "--layout", layouts,
      "TENSOR=SPEC: where the application holds a tensor, block (default), "
      "cyclic(MB,NB) (ScaLAPACK), replicated, root or grid(AXIS or *,...) (repeatable)");
}

void WorkloadFlags::AddResultOnLayer(CLI::App* cmd) {
  cmd->add_flag("--result-on-layer", result_on_layer,
                "an output the schedule copies along a mesh axis ends on the copies at "
                "coordinate 0 of it alone (saves the last step; codegen's header and "
                "NAME_holds say which ranks hold it); by default every copy holds the result");
}

absl::Status WorkloadFlags::Fill(v1::Problem* problem) const {
  problem->set_expr(expr);
  problem->set_extents(extents);
  problem->set_dtype(dtype);
  MT_RETURN_IF_ERROR(engine::SetLayoutFlags(layouts, problem));
  problem->set_result_on_layer(result_on_layer);
  return absl::OkStatus();
}

void MeshFlags::Add(CLI::App* cmd, bool required, const std::string& example) {
  CLI::Option* m = cmd->add_option("--mesh", mesh, "mesh axes, e.g. " + example);
  if (required) m->required();
}

void MeshFlags::AddRanks(CLI::App* cmd, const std::string& help, int64_t min) {
  cmd->add_option("--ranks", ranks, help)->transform(engine::IntegerIn(min, kInt64Max));
}

void MeshFlags::AddMemPerRank(CLI::App* cmd, const std::string& help) {
  cmd->add_option("--mem-per-rank", mem_per_rank, help);
}

void MeshFlags::Fill(v1::Mesh* out) const {
  out->set_axes(mesh);
  out->set_mem_per_rank(mem_per_rank);
}

void MeasurementFlags::Add(CLI::App* cmd, const std::string& reps_help,
                           const std::string& warmup_help) {
  cmd->add_option("--reps", reps, reps_help)->transform(engine::IntegerIn(1, 100000));
  cmd->add_option("--warmup", warmup, warmup_help)->transform(engine::IntegerIn(0, 100000));
}

void MeasurementFlags::AddTimeout(CLI::App* cmd, const std::string& help) {
  cmd->add_option("--timeout", timeout_s, help)
      ->check(engine::NumberIn(0, kMaxTimeoutS, /*min_exclusive=*/true));
}

void MeasurementFlags::AddSeed(CLI::App* cmd) {
  cmd->add_option("--seed", seed, "seed of the input values")->transform(engine::Unsigned64());
}

v1::Cluster LauncherFlags::Cluster() const {
  return engine::ClusterOf(hostfile, launcher, launcher_args);
}

void LauncherFlags::Add(CLI::App* cmd, const std::string& launcher_help) {
  cmd->add_option("--worker", worker, "path of meshtune_worker (default: found beside meshtune)");
  cmd->add_option("--hostfile", hostfile, "MPI hostfile for a cluster");
  cmd->add_option("--launcher", launcher, launcher_help);
  cmd->add_option("--launcher-arg", launcher_args, "extra launcher argument (repeatable)");
}

void OutputFlags::AddJson(CLI::App* cmd, const std::string& help) {
  cmd->add_flag("--json", json, help);
}

void OutputFlags::AddOutput(CLI::App* cmd, const std::string& help, bool required) {
  CLI::Option* o = cmd->add_option("-o,--output", path, help);
  if (required) o->required();
}

TargetFlags::TargetFlags() : db(storage::DefaultDbPath()) {}

void TargetFlags::Add(CLI::App* cmd, TargetUse use) {
  CLI::Option* server_opt = nullptr;
  if (use != TargetUse::kLocalDatabase) {
    server_opt = cmd->add_option("--server", server,
                                 "HOST:PORT of a meshtuned daemon to ask instead of this process")
                     ->check(engine::HostPort(/*allow_port_zero=*/false));
  }
  if (use == TargetUse::kServer) return;
  CLI::Option* db_opt = cmd->add_option("--db", db, "SQLite tuning database (default: " + db + ")");
  if (server_opt != nullptr) db_opt->excludes(server_opt);
  if (use == TargetUse::kStoringDatabase)
    cmd->add_flag("--no-db", no_db, "do not store the winner")->excludes(server_opt);
}

std::unique_ptr<engine::Backend> TargetFlags::Make(engine::LocalTuneSettings settings) const {
  auto warn = [](const std::string& message) { std::cerr << "meshtune: " << message << "\n"; };
  if (!server.empty()) return NewRemoteBackend(server, warn);
  engine::LocalBackendOptions options;
  options.db_path = no_db ? "" : db;
  options.tune = std::move(settings);
  options.warn = warn;
  return engine::NewLocalBackend(std::move(options));
}

void TraceFlags::Add(CLI::App* cmd, bool required) {
  workload.Add(cmd, required);
  mesh.Add(cmd, required);
  mesh.AddMemPerRank(cmd);
  workload.AddLayouts(cmd);
  workload.AddResultOnLayer(cmd);
  CLI::Option* t = cmd->add_option("--trace", trace, "trace file ('-' for stdin)");
  if (required) t->required();
}

absl::Status TraceFlags::Fill(v1::Problem* problem, v1::Mesh* out_mesh, v1::Trace* out) const {
  mesh.Fill(out_mesh);
  MT_RETURN_IF_ERROR(workload.Fill(problem));
  // A program's trace may be longer than a statement's: each part is held to
  // kMaxTraceBytes when parsed, the whole to kMaxProgramTraceBytes (one byte more is read,
  // so that a longer file is refused, never cut).
  absl::StatusOr<std::string> text = ReadInput(trace, ir::kMaxProgramTraceBytes);
  if (!text.ok()) return text.status();
  out->set_text(*text);
  return absl::OkStatus();
}

void RecordWorkloadFlags::Add(CLI::App* cmd, bool required) {
  problem.Add(cmd, required);
  mesh.Add(cmd, /*required=*/false);
  // The range: engine::RequestWorkload.
  mesh.AddRanks(cmd, "rank count (a tune over every mesh of that many ranks)");
  AddProfileFlag(cmd, &profile);
}

absl::Status RecordWorkloadFlags::Check() const {
  if (problem.expr.empty() || problem.extents.empty()) {
    return absl::InvalidArgumentError(
        "give the problem: --expr (e.g. 'C[m,n] += A[m,k] * B[k,n]') and --extents");
  }
  if (mesh.mesh.empty() == (mesh.ranks == 0)) {
    return absl::InvalidArgumentError(
        "give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)");
  }
  return absl::OkStatus();
}

}  // namespace meshtune::cli
