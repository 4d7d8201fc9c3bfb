// `meshtune explain`: the legality verdict, reasons, maps, transfers and pseudo-code of one
// trace of a problem on a mesh (engine/explain.h), answered in this process or by meshtuned
// (--server); as text, or with --json the meshtune.v1.ExplainResponse message as one line
// of protobuf's JSON mapping.
#ifndef MESHTUNE_CLI_EXPLAIN_CMD_H_
#define MESHTUNE_CLI_EXPLAIN_CMD_H_

#include "CLI/CLI.hpp"
#include "cli/command.h"

namespace meshtune::cli {

// Declares `explain` and its flags on `app`. Its exit status: 0 when explained (an illegal
// schedule included: the response says why); 2 on bad input (a trace that does not parse or
// cannot be read, a bad flag); 1 for a named profile that does not exist or a daemon that
// cannot be reached; the reason on stderr.
Command AddExplainCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_EXPLAIN_CMD_H_
