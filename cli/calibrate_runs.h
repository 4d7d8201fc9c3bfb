// Edits of an existing hardware profile that run no calibration job: `meshtune calibrate
// --name NAME --from-runs FILE ...` fits its term scales to measured schedules
// (engine::FitToRuns); `--node-ranks N --inter-node ALPHA,BETA` gives its link between nodes.
#ifndef MESHTUNE_CLI_CALIBRATE_RUNS_H_
#define MESHTUNE_CLI_CALIBRATE_RUNS_H_

#include <ostream>

#include "cli/calibrate_options.h"

namespace meshtune::cli {

// Loads profile options.name, reads the fidelity runs of options.from_runs (files of
// `meshtune fidelity --json` lines, meshtune.v1.FidelityResult; "-" for stdin), fits the
// cost model's term scales to their verified points, stores them in the profile
// (HardwareProfile.term_scales) and prints the scales and each run's rho and median error
// before and after (the stored profile as one JSON line with options.json). Exit 0 when
// stored; 2 for a bad name, a missing profile, --ranks given, a file that cannot be read
// or holds a line that is not a FidelityResult, or runs that cannot be fitted (the message
// says why); 1 when the profile cannot be written.
int RunCalibrateFromRuns(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

// `meshtune calibrate --name NAME --node-ranks N --inter-node ALPHA,BETA`: the link between
// nodes of an existing profile, given (a run on one node cannot measure it), stored as
// HardwareProfile.inter_node with source "given"; prints it (the stored profile as one
// JSON line with options.json). Exit 0 when stored; 2 for a bad name, a missing profile,
// --ranks or --from-runs given with it, --node-ranks outside 1..65536 or missing, or
// numbers that are not two finite non-negative seconds and seconds per byte; 1 when the
// profile cannot be written.
int RunCalibrateInterNode(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CALIBRATE_RUNS_H_
