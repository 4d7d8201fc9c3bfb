#include "cli/explain_cmd.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/flag_groups.h"
#include "engine/backend.h"
#include "engine/exit_codes.h"
#include "engine/explain.h"

namespace meshtune::cli {
namespace {

// explain's flags.
struct ExplainFlags {
  TraceFlags trace;
  OutputFlags output;
  std::string profile;  // costs a legal schedule; "" means "default"
  TargetFlags target;
};

// The ExplainResponse as text, or with --json as one JSON line.
int RunExplain(const ExplainFlags& flags, engine::Backend& backend) {
  v1::ExplainRequest request;
  if (absl::Status read = flags.trace.Fill(request.mutable_problem(), request.mutable_mesh(),
                                           request.mutable_trace());
      !read.ok()) {
    return Fail(read, std::cerr);
  }
  request.set_profile(flags.profile);
  absl::StatusOr<v1::ExplainResponse> response = backend.Explain(request);
  if (!response.ok()) return Fail(response.status(), std::cerr);
  std::cout << (flags.output.json ? base::ToJsonLine(*response) + "\n"
                                  : engine::ExplainText(*response));
  return engine::kExitOk;
}

}  // namespace

Command AddExplainCommand(CLI::App& app) {
  auto flags = std::make_shared<ExplainFlags>();
  CLI::App* cmd = app.add_subcommand("explain", "legality verdict, reasons and maps of a trace");
  flags->trace.Add(cmd, /*required=*/true);
  flags->output.AddJson(cmd, "print JSON");
  AddProfileFlag(cmd, &flags->profile,
                 "hardware profile to cost a legal schedule with (default: default)");
  flags->target.Add(cmd, TargetUse::kServer);
  return {cmd, [flags] { return RunExplain(*flags, *flags->target.Make()); }};
}

}  // namespace meshtune::cli
