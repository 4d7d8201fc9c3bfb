// `meshtune tune`: the tuner from the command line — the problem and the mesh (or a rank
// count) from flags (tune_options.h), run in this process or by meshtuned (a Backend),
// progress on a terminal, the result as text (tune_output.h) or, with --json, as the
// meshtune.v1.TuneResult message in protobuf's JSON mapping (one line; the winner, as
// stored, in its `record`: trace.text, mesh, predicted_s, measured_s, verified, checked,
// patterns, id), the winner stored as a tuning record.
#ifndef MESHTUNE_CLI_TUNE_CMD_H_
#define MESHTUNE_CLI_TUNE_CMD_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/flag_groups.h"
#include "engine/backend.h"
#include "engine/local_backend.h"
#include "engine/tune/tune_options.h"
#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// The parsed flags of `meshtune tune`.
struct TuneFlags {
  WorkloadFlags workload;  // --expr, --extents, --dtype, --layout
  MeshFlags mesh;          // --mesh or --ranks (exactly one), --mem-per-rank
  MeasurementFlags measure;
  LauncherFlags launcher;
  OutputFlags output;  // --json
  int top_k = 4;
  int max_rounds = 30;  // --max-rounds: of the candidates measured side by side
  double budget_s = 600;
  bool model_only = false;
  std::string profile = "default";  // hardware profile (storage/hardware_profile.h)
  bool profile_given = false;       // --profile was on the command line
  // --no-calibrate: no profile for the rank count keeps the built-in numbers instead of a
  // calibration on first use (engine/tune/machine_profile.h).
  bool no_calibrate = false;
  // --alpha, --beta, --gamma when given: override the profile.
  engine::MachineNumbers numbers;
  int64_t max_evaluations = 1000;
  uint64_t seed = 1;
  bool allow_replication = false;
  bool split_distributed = false;  // SpaceOptions::split_distributed
  bool rotation_steps = false;     // SpaceOptions::rotation_steps
  bool all_to_all = false;         // SpaceOptions::all_to_all
  bool allow_idle_ranks = false;   // with ranks: meshes of ceil(ranks/2) .. ranks ranks
  // --in-place: tune the in-place form of the cyclic layouts (ir::InPlaceForm) instead.
  bool in_place = false;
  bool progress = false;  // draw progress on stderr (set when stderr is a terminal)
};

// The Tune request the flags ask for (problem, mesh or ranks, budget, top-k, evaluations,
// seed, replication, profile when given): what the engine parses, once
// (engine::TuneOptionsFromRequest). Layouts that SetLayoutFlags refuses are left out.
v1::TuneRequest TuneRequestFromFlags(const TuneFlags& flags);

// What the flags set that a Tune request cannot carry (machine numbers, measurement
// settings): an in-process tune applies them.
engine::LocalTuneSettings TuneSettingsFromFlags(const TuneFlags& flags);

// Runs the tune on `backend` and prints the result on `out` (text, or the TuneResult
// JSON line); progress (when flags.progress) and errors go to `err` ("meshtune: MESSAGE").
// Exit status: 0 when a schedule was found (and, when measuring, verified); 2 on bad input (a
// missing named profile included); 1 when there is no legal schedule, the tune failed, the daemon
// cannot be reached, or no measured candidate verified (the result is then still printed,
// with each measurement's error). With `report` (a path, or "-" for `out` after the
// result), the tuning report (engine/report/report_html.h) of the winner is written there too: the
// path is checked for writing before the tune (exit status 2 when it cannot be), and the
// curve is the progress this process received.
int RunTune(const TuneFlags& flags, const std::string& report, engine::Backend& backend,
            std::ostream& out, std::ostream& err);

// Declares `tune` and its flags on `app`; its action is RunTune (with --report) on stdout and
// stderr, progress drawn when stderr is a terminal, in this process (SIGINT and SIGTERM
// stopping its jobs) or by meshtuned with --server.
Command AddTuneCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_TUNE_CMD_H_
