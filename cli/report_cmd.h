// `meshtune report RECORD -o FILE`: the tuning report (engine/report/report_html.h) of a stored
// record, as one self-contained HTML file.
#ifndef MESHTUNE_CLI_REPORT_CMD_H_
#define MESHTUNE_CLI_REPORT_CMD_H_

#include <cstdint>
#include <ostream>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/flag_groups.h"

namespace meshtune::cli {

// The parsed flags of `meshtune report`.
struct ReportFlags {
  int64_t record = 0;  // the record id, as `meshtune records` lists it
  OutputFlags output;  // output.path: the HTML file; "-" for standard output
  TargetFlags target;  // target.db: the tuning database, opened read-only
};

// Writes the report of `flags.record` from the database to the output file (to `out` for
// "-"). The output path is checked for writing before the database is read. Exit status: 0
// when written; 2 for an output that cannot be written; 1 for an unknown record ("no tuning
// record with id N"), a missing database, or a failed write ("meshtune: MESSAGE" on `err`).
int RunReport(const ReportFlags& flags, std::ostream& out, std::ostream& err);

// Declares `report` and its flags on `app`; its action is RunReport on stdout and stderr.
Command AddReportCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_REPORT_CMD_H_
