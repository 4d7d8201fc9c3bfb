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

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/calibrate_options.h"
#include "cli/command.h"
#include "proto/meshtune.pb.h"

namespace meshtune::cli {

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

// Declares `calibrate` and its flags on `app`; its action is RunCalibrate on stdout and
// stderr, with SIGINT and SIGTERM stopping its job (runtime::InstallStopSignalHandlers).
Command AddCalibrateCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CALIBRATE_CMD_H_
