// The shape of every meshtune command: a function `Command AddXxxCommand(CLI::App& app)`
// declares the subcommand and its flags on `app` and returns the subcommand with its
// action; main.cc keeps the table of them, parses, and runs the action of the one given.
#ifndef MESHTUNE_CLI_COMMAND_H_
#define MESHTUNE_CLI_COMMAND_H_

#include <functional>

#include "CLI/CLI.hpp"

namespace meshtune::cli {

// A subcommand of meshtune once declared.
struct Command {
  // The subcommand, owned by the app it was added to: parsed() tells, after a parse,
  // whether it was given.
  CLI::App* app = nullptr;
  // Runs the command with the flags the parse filled in; returns its exit status
  // (engine/exit_codes.h). A command that fails says why on stderr ("meshtune: WHY").
  std::function<int()> run;
};

// Declares a command on the top-level app.
using AddCommandFn = Command (*)(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_COMMAND_H_
