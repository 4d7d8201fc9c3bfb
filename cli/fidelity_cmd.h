// `meshtune fidelity`: how well the cost model ranks schedules on this machine. Ranks the
// space of a problem (a statement, or a program of several: whole programs, as tune ranks
// them) on a mesh with a hardware profile's numbers (model only), measures --count
// candidates spread over that ranking side by side under MPI (one job in rounds, each round
// one sample of every candidate in a fresh random order; times as measured), and prints
// each (rank, predicted, measured, error, transfers; a program's: each statement's family
// and the intermediates that move), then Spearman's rho and
// Kendall's tau with their 95% bootstrap intervals, how many of the pairs that differ
// beyond the noise the model orders right, the rounds' own rho, the median relative error
// and the median signed error per transfer pattern kind (engine/fidelity.h). With --json,
// the meshtune.v1.FidelityResult message on one line; with --svg FILE, the scatter of
// predicted against measured time written there.
#ifndef MESHTUNE_CLI_FIDELITY_CMD_H_
#define MESHTUNE_CLI_FIDELITY_CMD_H_

#include <ostream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/flag_groups.h"
#include "storage/tuning_db.h"

namespace meshtune::cli {

// The parsed flags of `meshtune fidelity`.
struct FidelityFlags {
  WorkloadFlags workload;  // --expr, --extents, --dtype
  MeshFlags mesh;          // --mesh
  // "": the profile for the mesh's rank count (engine/tune/machine_profile.h), calibrated on
  // first use unless no_calibrate.
  std::string profile;
  bool no_calibrate = false;
  int count = 12;
  // Rounds at least of the candidates measured side by side (MpiRunnerOptions::reps: also
  // the samples of a candidate measured alone); 6 give a 95% interval of a median.
  int rounds = 10;
  std::string round_statistic = "median";  // which sample counts: "median" or "min"
  int64_t max_evaluations = 1000;
  // measure.reps: rounds at most (MpiRunnerOptions::max_rounds; at least `rounds`). Warm-ups
  // more than tune's: the first repetitions of a fresh job run slow on some machines
  // (caches, clocks), and a fidelity run compares candidates whose times differ by a few
  // percent. The timeout bounds the one job of every candidate.
  MeasurementFlags measure = [] {
    MeasurementFlags m;
    m.reps = 20;
    m.warmup = 3;
    return m;
  }();
  LauncherFlags launcher;  // worker, hostfile, launcher
  OutputFlags output;      // --json
  std::string svg;         // where the scatter goes; "" for none
  // The tuning database its measured runs are kept in (engine/runs.h; "": none, --no-db).
  std::string db = storage::DefaultDbPath();
  bool progress = false;  // a line per measurement on stderr
  // The space ranked, with tune's flags of the same names (search::SpaceOptions).
  bool allow_replication = false, split_distributed = false, rotation_steps = false,
       all_to_all = false;
};

// Runs it; output on `out`, progress, warnings and errors on `err` ("meshtune: MESSAGE").
// Exit status: 0 when at least 2 candidates verified; 2 on bad input (a named profile that
// does not exist included); 1 when the space has fewer than 2 candidates, fewer than 2 runs
// verified (the result is still printed), the SVG cannot be written, or the run was stopped.
int RunFidelity(const FidelityFlags& flags, std::ostream& out, std::ostream& err);

// Declares `fidelity` and its flags on `app`; its action is RunFidelity on stdout and stderr
// (progress when stderr is a terminal), with SIGINT and SIGTERM stopping its jobs.
Command AddFidelityCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_FIDELITY_CMD_H_
