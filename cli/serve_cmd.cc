#include "cli/serve_cmd.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/paths.h"
#include "cli/cli_io.h"

namespace meshtune::cli {
namespace {

// Replaces this process with meshtuned `args`...; returns only when it cannot be started.
int RunServe(const std::vector<std::string>& args) {
  const std::string path = base::FindCompanion("MESHTUNED", {"daemon/meshtuned"});
  if (path.empty()) {
    return Fail(absl::FailedPreconditionError(
                    "cannot find meshtuned beside meshtune (build it: bazel build -c opt "
                    "//daemon:meshtuned)"),
                std::cerr);
  }
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  return Fail(absl::InternalError(absl::StrCat("cannot start ", path, ": ", std::strerror(errno))),
              std::cerr);
}

}  // namespace

Command AddServeCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "run the daemon meshtuned (its flags follow; see meshtuned --help)");
  cmd->prefix_command();
  cmd->set_help_flag();  // `meshtune serve --help` is meshtuned's help
  return {cmd, [cmd] { return RunServe(cmd->remaining()); }};
}

}  // namespace meshtune::cli
