#include "cli/lookup_cmd.h"

#include <iostream>
#include <memory>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/record_output.h"
#include "engine/exit_codes.h"
#include "engine/requests.h"
#include "engine/tune/tune_options.h"

namespace meshtune::cli {

int RunLookup(const LookupFlags& flags, engine::Backend& backend, std::ostream& out,
              std::ostream& err) {
  const RecordWorkloadFlags& w = flags.workload;
  if (absl::Status s = w.Check(); !s.ok()) return Fail(s, err);
  v1::LookupRequest request;
  if (absl::Status s = w.problem.Fill(request.mutable_problem()); !s.ok()) return Fail(s, err);
  w.mesh.Fill(request.mutable_mesh());
  request.set_ranks(w.mesh.ranks);
  request.set_profile(w.profile);
  if (flags.same_machine) {
    int64_t ranks = w.mesh.ranks;
    if (absl::StatusOr<ir::Mesh> mesh = engine::MeshAxesOf(request.mesh()); mesh.ok() && ranks == 0)
      ranks = mesh->Ranks();
    request.set_machine(engine::ProfileMachine(w.profile, ranks));
  }
  request.set_nearest(flags.nearest);
  absl::StatusOr<v1::LookupResponse> response = backend.Lookup(request);
  if (!response.ok()) return Fail(response.status(), err);
  if (flags.nearest && flags.output.json) {
    out << base::ToJsonLine(*response) << "\n";
  } else if (response->transferred()) {
    out << TransferredText(*response);
  } else {
    out << (flags.output.json ? base::ToJsonLine(response->record()) + "\n"
                              : RecordText(response->record()));
  }
  return engine::kExitOk;
}

Command AddLookupCommand(CLI::App& app) {
  struct State {
    LookupFlags flags;
    TargetFlags target;
  };
  auto state = std::make_shared<State>();
  LookupFlags& f = state->flags;
  CLI::App* cmd =
      app.add_subcommand("lookup", "the best tuning record of a problem on a mesh or rank count");
  f.workload.Add(cmd, /*required=*/true);
  f.workload.mesh.AddMemPerRank(cmd, "the best record that fits this budget, e.g. 2GiB");
  cmd->add_flag("--nearest", f.nearest,
                "when never tuned: the best schedule of the problem at other extents that "
                "replays legally at these, re-costed, marked transferred and not stored");
  f.output.AddJson(cmd, "print the record as one JSON line (with --nearest the LookupResponse)");
  cmd->add_flag("--same-machine", f.same_machine,
                "only records tuned with this machine's profile (same machine fingerprint)");
  state->target.Add(cmd, TargetUse::kDatabase);
  return {cmd,
          [state] { return RunLookup(state->flags, *state->target.Make(), std::cout, std::cerr); }};
}

}  // namespace meshtune::cli
