// `meshtune serve ARGS...`: runs the daemon meshtuned (daemon/) in this process's place,
// with ARGS as its flags (`meshtune serve --help` is meshtuned's help).
#ifndef MESHTUNE_CLI_SERVE_CMD_H_
#define MESHTUNE_CLI_SERVE_CMD_H_

#include "CLI/CLI.hpp"
#include "cli/command.h"

namespace meshtune::cli {

// Declares `serve` on `app`, every argument after it left for meshtuned. Its action replaces
// this process with meshtuned ARGS..., found as Bazel builds it (daemon/meshtuned beside
// cli/), installed beside meshtune, or at $MESHTUNED; it returns only when meshtuned cannot
// be found (exit status 1, "meshtune: cannot find meshtuned beside meshtune ...") or started.
Command AddServeCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_SERVE_CMD_H_
