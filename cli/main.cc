// meshtune: the command-line front end of the engine — the table of its commands.
//
// Each command declares its own flags and action in its own file (cli/command.h): explain
// (legality verdict, maps, transfers and pseudo-code of one trace), run (one trace under MPI),
// codegen (the C++ of a trace or a record), calibrate (this machine's alpha-beta-gamma
// numbers, stored as a hardware profile), fidelity (the cost model's ranking against
// measured runs), tune (search, cost and measure schedules, store the winner), lookup and
// records (the tuning database), report (a record's tuning report as HTML), batch (tunes
// from a JSON-lines file) and serve (runs the daemon meshtuned). tune, lookup, records,
// batch, explain and codegen run in this process (against the tuning database `--db`,
// storage::DefaultDbPath() by default) or, with `--server HOST:PORT`, by a meshtuned daemon;
// their output is the same either way. With --json, each prints one message of
// proto/meshtune.proto in protobuf's JSON mapping (base/json.h): explain an ExplainResponse,
// run a RunResult, calibrate a HardwareProfile, fidelity a FidelityResult, tune a
// TuneResult, batch a BatchLine per request, lookup a Record, records a Record a line. Exit
// status: 0 when the command ran (for run: and verified), 2 on bad input (message on stderr
// naming the offending token), 1 on an internal error, a run that failed, a missing record,
// an unreachable daemon or output that could not be written ("meshtune: cannot write to
// standard output: No space left on device"). A command that fails says why on stderr.
#include <signal.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "cli/batch_cmd.h"
#include "cli/calibrate_cmd.h"
#include "cli/cli_io.h"
#include "cli/codegen_cmd.h"
#include "cli/command.h"
#include "cli/explain_cmd.h"
#include "cli/fidelity_cmd.h"
#include "cli/lookup_cmd.h"
#include "cli/records_cmd.h"
#include "cli/report_cmd.h"
#include "cli/run_cmd.h"
#include "cli/serve_cmd.h"
#include "cli/tune_cmd.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"
#include "runtime/launch/launcher.h"

namespace meshtune::cli {
namespace {

// The commands, in the order `meshtune --help` lists them.
constexpr AddCommandFn kCommands[] = {
    AddExplainCommand,  AddRunCommand,   AddCodegenCommand, AddCalibrateCommand,
    AddFidelityCommand, AddTuneCommand,  AddLookupCommand,  AddRecordsCommand,
    AddReportCommand,   AddBatchCommand, AddServeCommand,
};

// InvalidArgument naming the commands when argv[1] is a word that is none of them (CLI11
// would say "A subcommand is required").
absl::Status CheckCommandName(int argc, char** argv, CLI::App& app) {
  if (argc <= 1 || argv[1][0] == '-') return absl::OkStatus();
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), argv[1]) != names.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("unknown command '", base::Excerpt(argv[1]),
                                                 "'; the commands are ", absl::StrJoin(names, ", "),
                                                 " (meshtune --help)"));
}

// Declares every command, parses `argv` and runs the command given; its exit status.
int Main(int argc, char** argv) {
  CLI::App app{"meshtune: distributed schedules for tensor computations"};
  app.require_subcommand(1);
  std::vector<Command> commands;
  for (AddCommandFn add : kCommands) commands.push_back(add(app));
  app.failure_message(engine::ParseFailureMessage);
  if (absl::Status name = CheckCommandName(argc, argv, app); !name.ok())
    return Fail(name, std::cerr);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? engine::kExitOk : engine::kExitBadInput;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return engine::kExitBadInput;
}

}  // namespace
}  // namespace meshtune::cli

int main(int argc, char** argv) {
  int code = meshtune::engine::kExitFailed;
  try {
    code = meshtune::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "meshtune: internal error: " << e.what() << "\n";
  }
  // What a command printed must have reached its reader (a full disk, a closed pipe): a
  // command that succeeded but whose output was lost failed. (One that failed has said why
  // already; batch also stops at its first lost line and says so.)
  const absl::Status flushed = meshtune::cli::FlushStdout();
  // Stopped by SIGINT/SIGTERM (its jobs killed, temporary files removed): end by the same
  // signal, as a shell expects of Ctrl-C (status 130 or 143 to a shell).
  if (const int sig = meshtune::runtime::StopSignal(); sig != 0) {
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  if (!flushed.ok() && code == meshtune::engine::kExitOk) {
    std::cerr << "meshtune: " << flushed.message() << "\n";
    return meshtune::engine::kExitFailed;
  }
  return code;
}
