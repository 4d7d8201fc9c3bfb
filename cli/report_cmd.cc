#include "cli/report_cmd.h"

#include <memory>

#include "absl/status/statusor.h"
#include "cli/cli_io.h"
#include "engine/exit_codes.h"
#include "engine/report_html.h"
#include "storage/tuning_db.h"

namespace meshtune::cli {

int RunReport(const ReportFlags& flags, std::ostream& out, std::ostream& err) {
  const bool to_stdout = flags.output == "-";
  if (!to_stdout) {
    if (absl::Status s = CheckWritable(flags.output); !s.ok()) return Fail(s, err);
  }
  absl::StatusOr<std::unique_ptr<storage::TuningDb>> db =
      storage::OpenSqliteTuningDbReadOnly(flags.db);
  if (!db.ok()) return Fail(db.status(), err);
  absl::StatusOr<std::string> html = engine::RecordReportHtml(**db, flags.record);
  if (!html.ok()) return Fail(html.status(), err);
  if (to_stdout) {
    out << *html;
    return engine::kExitOk;
  }
  if (absl::Status s = WriteTextFile(flags.output, *html); !s.ok()) return Fail(s, err);
  return engine::kExitOk;
}

}  // namespace meshtune::cli
