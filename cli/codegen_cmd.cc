#include "cli/codegen_cmd.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/cli_io.h"
#include "cli/codegen_lookup.h"
#include "cli/flag_groups.h"
#include "engine/backend.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"
#include "engine/requests.h"

namespace meshtune::cli {
namespace {

// codegen's flags.
struct CodegenFlags {
  TraceFlags trace;         // with --trace; else the problem, --mesh or --ranks of the schedule
  int64_t record = 0;       // --record ID
  ScheduleSource schedule;  // --lookup [--wisdom FILE] [--estimate], or --estimate alone
  std::string profile;      // with --lookup
  bool main = false;        // --main: a standalone benchmark program
  std::string name;         // --name: the callable kernel's name
  std::string header;       // --header: where the callable kernel's header goes
  OutputFlags output;       // -o FILE; "" or "-" for stdout
  TargetFlags target;
};

// codegen's request from --record ID (in the names of --expr/--extents when given; its mesh
// unless --mesh) or --lookup (the workload's best record, in its names, from the database
// or --wisdom FILE) and/or --estimate (cli/codegen_lookup.h).
absl::StatusOr<v1::CodegenRequest> StoredScheduleRequest(const CodegenFlags& flags,
                                                         v1::CodegenRequest request,
                                                         engine::Backend& backend) {
  const WorkloadFlags& w = flags.trace.workload;
  const MeshFlags& m = flags.trace.mesh;
  const bool lookup = flags.schedule.lookup || flags.schedule.estimate;
  if (!w.expr.empty() || !w.extents.empty() || lookup) {
    if (w.expr.empty() || w.extents.empty()) {
      return absl::InvalidArgumentError(
          "give the problem: --expr (e.g. 'C[m,n] += A[m,k] * B[k,n]') and --extents");
    }
    request.mutable_problem()->set_expr(w.expr);
    request.mutable_problem()->set_extents(w.extents);
    request.mutable_problem()->set_dtype(w.dtype);
    MT_RETURN_IF_ERROR(engine::SetLayoutFlags(w.layouts, request.mutable_problem()));
  }
  request.mutable_mesh()->set_mem_per_rank(m.mem_per_rank);
  if (flags.record != 0) {
    request.set_record_id(flags.record);
    request.mutable_mesh()->set_axes(m.mesh);
    return request;
  }
  v1::LookupRequest workload;
  *workload.mutable_problem() = request.problem();
  workload.mutable_mesh()->set_axes(m.mesh);
  workload.set_ranks(m.ranks);
  workload.set_profile(flags.profile);
  workload.mutable_mesh()->set_mem_per_rank(m.mem_per_rank);
  auto warn = [](const std::string& message) { std::cerr << "meshtune: " << message << "\n"; };
  MT_ASSIGN_OR_RETURN(v1::Record found, FindSchedule(workload, flags.schedule, backend, warn));
  request.mutable_mesh()->set_axes(found.mesh());
  *request.mutable_trace() = found.trace();
  if (found.has_library()) *request.mutable_library() = found.library();
  return request;
}

// codegen's request: from --trace (with --expr, --extents, --mesh), or a stored schedule
// (StoredScheduleRequest). InvalidArgument naming what is missing.
absl::StatusOr<v1::CodegenRequest> CodegenRequestOf(const CodegenFlags& flags,
                                                    engine::Backend& backend) {
  const bool lookup = flags.schedule.lookup || flags.schedule.estimate;
  const TraceFlags& t = flags.trace;
  if ((!t.trace.empty()) + (flags.record != 0) + lookup != 1) {
    return absl::InvalidArgumentError(
        "give exactly one of --trace FILE, --record ID and --lookup or --estimate (with --expr, "
        "--extents and --mesh or --ranks)");
  }
  if (!flags.schedule.wisdom.empty() && !flags.schedule.lookup)
    return absl::InvalidArgumentError("--wisdom FILE needs --lookup");
  v1::CodegenRequest request;
  request.set_main(flags.main);
  request.set_name(flags.name);
  if (t.trace.empty()) return StoredScheduleRequest(flags, std::move(request), backend);
  if (t.workload.expr.empty() || t.workload.extents.empty() || t.mesh.mesh.empty())
    return absl::InvalidArgumentError("--trace needs --expr, --extents and --mesh");
  MT_RETURN_IF_ERROR(
      t.Fill(request.mutable_problem(), request.mutable_mesh(), request.mutable_trace()));
  return request;
}

// Where a callable kernel's header goes: --header, or beside the output with the extension
// .h; "" when the source goes to stdout without --header (one self-contained file).
std::string HeaderPath(const CodegenFlags& flags) {
  const std::string& output = flags.output.path;
  if (!flags.header.empty() || flags.main) return flags.header;
  if (output.empty() || output == "-") return "";
  return std::filesystem::path(output).replace_extension(".h").string();
}

// Writes the source to stdout. A source larger than stdout's buffer is written here, not at
// the final flush: keep the reason of a failed write.
int PrintSource(const std::string& source) {
  errno = 0;
  std::cout << source;
  if (!std::cout) {
    const int error = errno;
    return Fail(
        absl::UnavailableError(absl::StrCat("cannot write to standard output: ",
                                            error != 0 ? std::strerror(error) : "a write failed")),
        std::cerr);
  }
  return engine::kExitOk;
}

// A callable kernel (source and header) or, with --main, a standalone C++ MPI program, of a
// trace or a record, to files or stdout.
int RunCodegen(const CodegenFlags& flags, engine::Backend& backend) {
  absl::StatusOr<v1::CodegenRequest> request = CodegenRequestOf(flags, backend);
  if (!request.ok()) return Fail(request.status(), std::cerr);
  if (flags.trace.workload.result_on_layer) request->mutable_problem()->set_result_on_layer(true);
  const std::string header = HeaderPath(flags);
  if (!header.empty()) request->set_header_name(std::filesystem::path(header).filename().string());
  absl::StatusOr<v1::CodegenResponse> response = backend.Codegen(*request);
  if (!response.ok()) return Fail(response.status(), std::cerr);
  if (!header.empty() && !flags.main) {
    if (absl::Status s = WriteTextFile(header, response->header()); !s.ok())
      return Fail(s, std::cerr);
  }
  const std::string& output = flags.output.path;
  if (output.empty() || output == "-") return PrintSource(response->source());
  if (absl::Status s = WriteTextFile(output, response->source()); !s.ok())
    return Fail(s, std::cerr);
  return engine::kExitOk;
}

// --record, --lookup, --wisdom, --estimate, --ranks, --profile: where the schedule comes from
// when not from --trace.
void AddScheduleSourceFlags(CLI::App* cmd, CodegenFlags& f) {
  cmd->add_option("--record", f.record, "the trace of this tuning record")
      ->transform(engine::IntegerIn(1, kInt64Max));
  cmd->add_flag("--lookup", f.schedule.lookup,
                "the best record of the workload (--expr, --extents, --mesh or --ranks)");
  cmd->add_option("--wisdom", f.schedule.wisdom,
                  "with --lookup: look up in this wisdom file (records export), not the database");
  cmd->add_flag("--estimate", f.schedule.estimate,
                "on a --lookup miss, or alone instead: the cost model's best with built-in "
                "machine numbers (deterministic; reads no profile)");
  f.trace.mesh.AddRanks(cmd, "with --lookup or --estimate: the workload's rank count", 1);
  AddProfileFlag(cmd, &f.profile,
                 "with --lookup: the workload's hardware profile (default: default)");
}

}  // namespace

Command AddCodegenCommand(CLI::App& app) {
  auto flags = std::make_shared<CodegenFlags>();
  CLI::App* cmd = app.add_subcommand(
      "codegen", "write the C++ kernel (or --main program) of a trace, a record or a best record");
  flags->trace.Add(cmd, /*required=*/false);
  AddScheduleSourceFlags(cmd, *flags);
  cmd->add_flag("--main", flags->main,
                "a standalone benchmark program instead of a callable kernel");
  cmd->add_option("--name", flags->name, "the callable kernel's name (default: meshtune_kernel)");
  cmd->add_option("--header", flags->header,
                  "where the kernel's header goes (default: beside -o FILE, as .h)");
  flags->output.AddOutput(cmd, "output file (default: stdout)", /*required=*/false);
  flags->target.Add(cmd, TargetUse::kDatabase);
  cmd->get_option("--wisdom")->excludes("--server")->excludes("--db");
  cmd->get_option("--estimate")->excludes("--server");
  return {cmd, [flags] { return RunCodegen(*flags, *flags->target.Make()); }};
}

}  // namespace meshtune::cli
