// `meshtune records export` and `meshtune records import`: wisdom files (engine/wisdom.h)
// out of and into a tuning database. (records_cmd.h declares them, as subcommands of
// `records`.)
#ifndef MESHTUNE_CLI_WISDOM_CMDS_H_
#define MESHTUNE_CLI_WISDOM_CMDS_H_

#include <ostream>
#include <string>

#include "cli/flag_groups.h"
#include "engine/backend.h"

namespace meshtune::cli {

// `records export [--expr ... --extents ... --mesh|--ranks ... --profile ...]`: every
// record of the database (of that workload when --expr or --extents is given) as a wisdom
// file on `out`, each with its trace lowered here (engine::AddProgram; a record that does
// not lower goes out without a program, with a warning on `err`); then, without a workload
// filter and with `runs_db` (the local database; "" with --server), every measured run kept
// in it (engine/runs.h). Exit status 0 (an empty file when there are none); 1 when the
// database cannot be read or the daemon reached; 2 for bad workload flags.
int RunExport(const RecordWorkloadFlags& filter, engine::Backend& backend,
              const std::string& runs_db, std::ostream& out, std::ostream& err);

// `records runs [--profile P] [--json]`: the measured runs kept in the SQLite database
// `db_path` (of profile P's numbers when given; "builtin" for the built-in numbers), one a
// line: id, source, profile, mesh, predicted and measured seconds, the error, the problem;
// with `json`, one meshtune.v1.MeasuredRun a line. Exit status 0; 1 for database errors.
int RunListRuns(const std::string& db_path, const std::string& profile, bool json,
                std::ostream& out, std::ostream& err);

// `records import FILE` ('-' for stdin): merges the wisdom file into the SQLite database
// `db_path` (created when missing) and says on `out` what it added and which record is each
// workload's best afterwards:
//   imported 3 records (1 already present) into PATH
//     T0[i0,i1] += ... (i0=64,..., f32) on x=2,y=2, profile default: 2 added, 1 present;
//       best: record 7 from the file, verified, measured 0.0931 s
// and, when the file holds measured runs, "imported 12 measured runs (0 already present)".
// Exit status 0; 2 for a file that cannot be read or a bad line (nothing is added then);
// 1 for database errors.
int RunImport(const std::string& path, const std::string& db_path, std::ostream& out,
              std::ostream& err);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_WISDOM_CMDS_H_
