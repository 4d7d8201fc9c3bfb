#include "cli/records_cmd.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/record_output.h"
#include "cli/wisdom_cmds.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"

namespace meshtune::cli {
namespace {

constexpr int kMaxLimit = 1000;

// `records --id ID`: that one record, in the names of the filter's problem when given.
int PrintOneRecord(const RecordsFlags& flags, engine::Backend& backend, std::ostream& out,
                   std::ostream& err) {
  const WorkloadFlags& w = flags.workload.problem;
  if (flags.id < 0)
    return Fail(absl::InvalidArgumentError(absl::StrCat("--id ", flags.id, " is not a record id")),
                err);
  v1::GetRecordRequest request;
  request.set_id(flags.id);
  if (!w.expr.empty() || !w.extents.empty()) {
    if (w.expr.empty() || w.extents.empty()) {
      return Fail(
          absl::InvalidArgumentError("give both --expr and --extents to name the record's problem"),
          err);
    }
    if (absl::Status s = w.Fill(request.mutable_problem()); !s.ok()) return Fail(s, err);
  }
  absl::StatusOr<v1::Record> record = backend.GetRecord(request);
  if (!record.ok()) return Fail(record.status(), err);
  out << (flags.output.json ? base::ToJsonLine(*record) + "\n" : RecordText(*record));
  return engine::kExitOk;
}

}  // namespace

int RunRecords(const RecordsFlags& flags, engine::Backend& backend, std::ostream& out,
               std::ostream& err) {
  if (flags.id != 0) return PrintOneRecord(flags, backend, out, err);
  if (flags.limit < 1 || flags.limit > kMaxLimit) {
    return Fail(absl::InvalidArgumentError(
                    absl::StrCat("--limit ", flags.limit, " is out of range: 1 to ", kMaxLimit)),
                err);
  }
  if (flags.after < 0) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("--after ", flags.after, " is not a record id")),
        err);
  }
  const RecordWorkloadFlags& w = flags.workload;
  v1::ListRecordsRequest request;
  if (!w.problem.expr.empty() || !w.problem.extents.empty()) {
    if (absl::Status s = w.Check(); !s.ok()) return Fail(s, err);
    if (absl::Status s = w.problem.Fill(request.mutable_problem()); !s.ok()) return Fail(s, err);
    request.mutable_mesh()->set_axes(w.mesh.mesh);
    request.set_ranks(w.mesh.ranks);
    request.set_profile(w.profile);
  }
  request.set_page_size(flags.limit);
  // ListRecords' page tokens are record ids (records.h): a page starts after that id.
  if (flags.after > 0) request.set_page_token(absl::StrCat(flags.after));
  absl::StatusOr<v1::ListRecordsResponse> page = backend.ListRecords(request);
  if (!page.ok()) return Fail(page.status(), err);
  for (const v1::Record& r : page->records())
    out << (flags.output.json ? base::ToJsonLine(r) : RecordLine(r)) << "\n";
  if (!page->next_page_token().empty()) {
    err << "meshtune: more records follow: add --after " << page->next_page_token() << "\n";
  }
  return engine::kExitOk;
}

namespace {

// The flags of `records` and of its subcommands.
struct RecordsState {
  RecordsFlags flags;
  TargetFlags target;
  std::string import_path;  // records import FILE
  CLI::App* export_cmd = nullptr;
  CLI::App* import_cmd = nullptr;
  CLI::App* runs_cmd = nullptr;
};

// Runs the subcommand given, or the list.
int RunRecordsCommand(const RecordsState& s) {
  if (s.export_cmd->parsed()) {
    return RunExport(s.flags.workload, *s.target.Make(), s.target.server.empty() ? s.target.db : "",
                     std::cout, std::cerr);
  }
  if (s.runs_cmd->parsed()) {
    if (!s.target.server.empty()) {
      return Fail(absl::InvalidArgumentError(
                      "records runs reads a local database (--db), not a daemon's (--server)"),
                  std::cerr);
    }
    return RunListRuns(s.target.db, s.flags.workload.profile, s.flags.output.json, std::cout,
                       std::cerr);
  }
  if (s.import_cmd->parsed()) {
    if (!s.target.server.empty()) {
      return Fail(absl::InvalidArgumentError(
                      "records import writes a local database (--db), not a daemon's (--server)"),
                  std::cerr);
    }
    return RunImport(s.import_path, s.target.db, std::cout, std::cerr);
  }
  return RunRecords(s.flags, *s.target.Make(), std::cout, std::cerr);
}

}  // namespace

Command AddRecordsCommand(CLI::App& app) {
  auto state = std::make_shared<RecordsState>();
  RecordsFlags& f = state->flags;
  CLI::App* cmd = app.add_subcommand(
      "records", "list, export and import tuning records (of one workload with --expr ...)");
  f.workload.Add(cmd, /*required=*/false);
  cmd->add_option("--limit", f.limit, "records to list, 1 to 1000 (default 50)")
      ->transform(engine::IntegerIn(kIntMin, kIntMax));  // the range: RunRecords
  cmd->add_option("--after", f.after, "list records with ids above this one")
      ->transform(engine::IntegerIn(0, kInt64Max));
  cmd->add_option("--id", f.id, "print this one record")
      ->transform(engine::IntegerIn(1, kInt64Max));
  f.output.AddJson(cmd, "print each record as one JSON line");
  state->target.Add(cmd, TargetUse::kDatabase);
  state->export_cmd = cmd->add_subcommand(
      "export", "write the records (of one workload with --expr ...) as a wisdom file on stdout");
  state->export_cmd->fallthrough();
  state->import_cmd = cmd->add_subcommand(
      "import",
      "merge a wisdom file into the database (--db); the verified faster record stays best");
  state->import_cmd->add_option("file", state->import_path, "wisdom file ('-' for stdin)")
      ->required();
  state->import_cmd->fallthrough();
  state->runs_cmd = cmd->add_subcommand(
      "runs",
      "list the measured runs every tune and fidelity run keeps (of one profile with --profile; "
      "builtin: the built-in numbers), from which the cost model is refitted");
  state->runs_cmd->fallthrough();
  return {cmd, [state] { return RunRecordsCommand(*state); }};
}

}  // namespace meshtune::cli
