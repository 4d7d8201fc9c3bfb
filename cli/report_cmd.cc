#include "cli/report_cmd.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cli/cli_io.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"
#include "engine/report/report_html.h"
#include "storage/tuning_db.h"

namespace meshtune::cli {

int RunReport(const ReportFlags& flags, std::ostream& out, std::ostream& err) {
  const std::string& output = flags.output.path;
  const bool to_stdout = output == "-";
  if (!to_stdout) {
    if (absl::Status s = CheckWritable(output); !s.ok()) return Fail(s, err);
  }
  absl::StatusOr<std::unique_ptr<storage::TuningDb>> db =
      storage::OpenSqliteTuningDbReadOnly(flags.target.db);
  if (!db.ok()) return Fail(db.status(), err);
  absl::StatusOr<std::string> html = engine::RecordReportHtml(**db, flags.record);
  if (!html.ok()) return Fail(html.status(), err);
  if (to_stdout) {
    out << *html;
    return engine::kExitOk;
  }
  if (absl::Status s = WriteTextFile(output, *html); !s.ok()) return Fail(s, err);
  return engine::kExitOk;
}

Command AddReportCommand(CLI::App& app) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report", "write a record's tuning report: one self-contained HTML file with pictures");
  cmd->add_option("record", flags->record, "record id, as `meshtune records` lists it")
      ->required()
      ->transform(engine::IntegerIn(1, kInt64Max));
  flags->output.AddOutput(cmd, "the HTML file to write ('-': stdout)", /*required=*/true);
  flags->target.Add(cmd, TargetUse::kLocalDatabase);
  return {cmd, [flags] { return RunReport(*flags, std::cout, std::cerr); }};
}

}  // namespace meshtune::cli
