// `meshtune records`: the tuning records of the database, from this process or from
// meshtuned (a Backend): a list, one record, or with its subcommands `records export` and
// `records import` a wisdom file out of or into the database (wisdom_cmds.h).
#ifndef MESHTUNE_CLI_RECORDS_CMD_H_
#define MESHTUNE_CLI_RECORDS_CMD_H_

#include <cstdint>
#include <ostream>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/flag_groups.h"
#include "engine/backend.h"

namespace meshtune::cli {

// The parsed flags of `meshtune records` (--server and --db aside: the Backend is given).
struct RecordsFlags {
  RecordWorkloadFlags workload;  // a filter when workload.problem.expr is set
  int limit = 50;                // 1..1000
  int64_t after = 0;             // list records with larger ids
  int64_t id = 0;      // when set: that one record (in the filter problem's names if given)
  OutputFlags output;  // --json
};

// One line a record in the order of ids (RecordLine, or with --json one meshtune.v1.Record a
// line in protobuf's JSON mapping), at most `limit`, telling on `err` how to go on when more
// follow; or with `id` the one record as `lookup` prints it. Exit status: 0 when listed (an
// empty list included); 1 for an unknown id or an unreachable daemon; 2 on bad input.
int RunRecords(const RecordsFlags& flags, engine::Backend& backend, std::ostream& out,
               std::ostream& err);

// Declares `records` with its subcommands `export` and `import` on `app` (the workload
// flags, --db and --server of `records` serve its subcommands too); its action runs the one
// given: RunExport, RunImport (which refuses --server) or RunRecords, on stdout and stderr.
Command AddRecordsCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_RECORDS_CMD_H_
