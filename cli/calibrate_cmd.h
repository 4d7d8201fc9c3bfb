// `meshtune calibrate`: measures this machine's alpha-beta-gamma numbers with the
// meshtune_calibrate job under mpirun (ping-pong, broadcast, local GEMM; runtime/
// calibrate_main.cc), fits them to its samples and stores them as a named hardware profile
// (storage/hardware_profile.h). Thread-compatible: each call runs its own job.
#ifndef MESHTUNE_CLI_CALIBRATE_CMD_H_
#define MESHTUNE_CLI_CALIBRATE_CMD_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"

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
  // An MPI hostfile whose nodes hold node_ranks ranks each: the link between nodes of
  // profile `name` is measured instead of calibrating (RunCalibrateAcrossNodes).
  std::string hostfile;
};

// OK when `options` can be run; otherwise InvalidArgument naming the flag and its value: a
// bad profile name (storage::ValidateProfileName's message, which quotes the bad character),
// ranks outside 2..65536, a dtype other than f32 or f64, a timeout that is not a positive
// number of seconds up to a week, a --flush-mib outside 0..65536, or a --calibrator that is not an
// executable file.
absl::Status ValidateCalibrateOptions(const CalibrateOptions& options);

// Validates `options`, runs the calibration job on options.ranks ranks, fits its samples
// (FitProfile) and stores the profile as options.name (storage::SaveProfile); returns the
// stored profile. InvalidArgument for bad options (ValidateCalibrateOptions); NotFound when
// no meshtune_calibrate is found; DeadlineExceeded when the job ran past the timeout (it
// is killed); Internal when it failed (its exit status or signal and the end of its stderr)
// or reported a rank count other than options.ranks; DataLoss when its output does not
// parse or its samples cannot be fitted; SaveProfile's errors, naming the path.
absl::StatusOr<v1::HardwareProfile> Calibrate(const CalibrateOptions& options);

// The command: with options.from_runs, RunCalibrateFromRuns; else Calibrate, then a summary of the
// profile (or, with options.json, the stored meshtune.v1.HardwareProfile message as one line of
// protobuf's JSON mapping) on `out`. An error goes to `err` as "meshtune: MESSAGE". Returns the
// exit status: 0 when the profile was stored, 2 on bad input (ValidateCalibrateOptions fails), 1
// otherwise (no calibrator, a failed or timed-out job, a profile that could not be fitted or
// written).
int RunCalibrate(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

// `meshtune calibrate --name NAME --hostfile H --node-ranks N [--quick]`: the link between
// nodes of an existing profile, measured. A job of N + 1 ranks under mpirun --hostfile H
// (ranks fill the hostfile's nodes in order, so rank N is the first of the second node)
// times a ping-pong between ranks 0 and N (meshtune_calibrate --link-only --peer N);
// its line is stored as HardwareProfile.inter_node (storage::FitInterNode) with a source
// naming the hostfile, and printed (the stored profile as one JSON line with
// options.json). Exit 0 when stored; 2 for a bad name, a missing profile, a hostfile that
// is not a readable file, --node-ranks outside 1..65535 or missing, or --ranks,
// --inter-node or --from-runs given with it; 1 when the job fails or the profile cannot be
// written.
int RunCalibrateAcrossNodes(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CALIBRATE_CMD_H_
