// `meshtune lookup`: the best tuning record of a workload, from the database of this
// process or from meshtuned (a Backend), as text (record_output.h) or protobuf JSON.
#ifndef MESHTUNE_CLI_LOOKUP_CMD_H_
#define MESHTUNE_CLI_LOOKUP_CMD_H_

#include <ostream>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/flag_groups.h"
#include "engine/backend.h"

namespace meshtune::cli {

// The parsed flags of `meshtune lookup` (--server and --db aside: the Backend is given).
struct LookupFlags {
  RecordWorkloadFlags workload;  // mesh.mem_per_rank: the best record that fits this budget
  bool nearest = false;          // else a schedule transferred from other extents
  bool same_machine = false;     // only records with this machine's fingerprint
  OutputFlags output;            // --json
};

// The best record of the workload, in its names. Prints the record (RecordText, or with
// --json the meshtune.v1.Record message as one line of protobuf's JSON mapping) on `out`.
// With `flags.nearest`, a schedule transferred from other extents when the workload has no
// record (TransferredText), and --json prints the whole meshtune.v1.LookupResponse (so that
// `transferred` shows) rather than the Record. Exit status: 0 when found; 1 with "meshtune:
// no tuning record for PROBLEM on MESH with profile P; tune it first" on `err` when not (or
// when the daemon cannot be reached); 2 on bad input (the message names the token).
int RunLookup(const LookupFlags& flags, engine::Backend& backend, std::ostream& out,
              std::ostream& err);

// Declares `lookup` and its flags on `app`; its action is RunLookup on stdout and stderr.
Command AddLookupCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_LOOKUP_CMD_H_
