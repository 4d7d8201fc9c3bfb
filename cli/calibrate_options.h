// The parsed flags of `meshtune calibrate`, shared by the calibration itself
// (cli/calibrate_cmd.h) and the profile edits that run no job (cli/calibrate_runs.h).
#ifndef MESHTUNE_CLI_CALIBRATE_OPTIONS_H_
#define MESHTUNE_CLI_CALIBRATE_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace meshtune::cli {

// The parsed flags of `meshtune calibrate`.
struct CalibrateOptions {
  int64_t ranks = 0;             // MPI ranks of the job, 2 to 65536
  std::string name = "default";  // the profile to store
  std::string dtype = "f32";     // element type of the GEMM: f32 or f64
  double timeout_s = 600;        // the job is killed after this; at most a week
  bool quick = false;            // messages up to 1 MiB, 10 repetitions, n = 512 GEMM: ~1 s
  // MiB each node writes before every timed transfer and memory pass (cold caches, as in a
  // schedule); -1: twice its last-level cache (4 with quick); 0: warm caches. None on a
  // node whose ranks outnumber its cores, whatever this says.
  int64_t flush_mib = -1;
  bool json = false;  // print the profile as JSON instead of a summary
  // Fidelity runs to fit the term scales of profile `name` to, instead of calibrating
  // (cli/calibrate_runs.h); ranks must then be 0.
  std::vector<std::string> from_runs;
  std::string calibrator;  // path of meshtune_calibrate; "" = runtime::FindCalibrator()
  // The link between nodes of profile `name`, given instead of calibrating
  // (RunCalibrateInterNode): "ALPHA_S,BETA_S_PER_BYTE" and the ranks of a node.
  std::string inter_node;
  int64_t node_ranks = 0;
  // The cluster (engine/cluster.h): an MPI hostfile whose nodes hold node_ranks ranks each,
  // a launcher and its arguments. With ranks, the calibration runs there and then, with
  // node_ranks, measures the link between its nodes; without, only that link is measured
  // for profile `name` (RunCalibrateAcrossNodes). Stored as HardwareProfile.cluster.
  std::string hostfile, launcher;
  std::vector<std::string> launcher_args;
};

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CALIBRATE_OPTIONS_H_
