// `meshtune codegen`: the C++ of a schedule — a callable kernel (source and header) or,
// with --main, a standalone MPI benchmark program — written to files or stdout. The
// schedule is a trace (--trace with the problem and mesh), a stored record (--record ID),
// or the workload's best record (--lookup, from the database or a wisdom file) and/or a
// model-only estimate (--estimate; codegen_lookup.h). Answered in this process or by
// meshtuned (--server).
#ifndef MESHTUNE_CLI_CODEGEN_CMD_H_
#define MESHTUNE_CLI_CODEGEN_CMD_H_

#include "CLI/CLI.hpp"
#include "cli/command.h"

namespace meshtune::cli {

// Declares `codegen` and its flags on `app`. Its exit status: 0 when written; 2 on bad
// input (not exactly one of --trace, --record and --lookup/--estimate, a missing problem or
// mesh, an illegal schedule, an output that cannot be opened); 1 for a record that does not
// exist, a lookup that finds nothing, a schedule that cannot be lowered, a failed write or
// an unreachable daemon; the reason on stderr.
Command AddCodegenCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CODEGEN_CMD_H_
