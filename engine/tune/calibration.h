// Calibration jobs: meshtune_calibrate run under mpirun (ping-pong, broadcast, collectives,
// GEMM tiles and memory passes; runtime/launch/calibrate_main.cc), its samples fitted into a
// hardware profile (storage/calibration_fit.h) and stored (storage/hardware_profile.h).
// `meshtune calibrate` runs one as asked; tunes run the quick form on first use
// (engine/tune/machine_profile.h). Thread-compatible: each call runs its own job.
#ifndef MESHTUNE_ENGINE_TUNE_CALIBRATION_H_
#define MESHTUNE_ENGINE_TUNE_CALIBRATION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"
#include "runtime/launch/launcher.h"

namespace meshtune::engine {

// At most this long (a week) for a calibration job's timeout.
inline constexpr double kMaxCalibrationTimeoutS = 7 * 24 * 3600;

// What a calibration job measures and where its profile goes.
struct CalibrationJob {
  int64_t ranks = 0;             // MPI ranks of the job, 2 to 65536
  std::string name = "default";  // the profile to store
  std::string dtype = "f32";     // element type of the GEMM: f32 or f64
  double timeout_s = 600;        // the job is killed after this; at most a week
  bool quick = false;            // messages up to 1 MiB, 10 repetitions, n = 512 GEMM: seconds
  // MiB each node writes before every timed transfer and memory pass (cold caches, as in a
  // schedule); -1: twice its last-level cache (4 with quick); 0: warm caches.
  int64_t flush_mib = -1;
  std::string calibrator;  // path of meshtune_calibrate; "" = runtime::FindCalibrator()
  bool automatic = false;  // stored as HardwareProfile.automatic (made on first use)
  // Where the job runs: empty, this node; else the cluster's hostfile and launcher, stored
  // as HardwareProfile.cluster so that runs with the profile launch there too.
  v1::Cluster cluster;
};

// OK when `job` can be run; otherwise InvalidArgument naming the flag and its value: a bad
// profile name (storage::ValidateProfileName's message), ranks outside 2..65536, a dtype
// other than f32 or f64, a timeout that is not a positive number of seconds up to a week, a
// --flush-mib outside 0..65536, or a --calibrator that is not an executable file.
absl::Status ValidateCalibrationJob(const CalibrationJob& job);

// Validates `job`, runs it, fits its samples (storage::FitProfile) and stores the profile as
// job.name; when job.name is "default", the automatic profile of job.ranks ranks
// (AutomaticProfileName) is removed: the default now answers for that rank count. Returns
// the stored profile. InvalidArgument for a bad job (ValidateCalibrationJob); NotFound when
// no meshtune_calibrate is found; DeadlineExceeded when the job ran past the timeout (it is
// killed); Internal when it failed (its exit status or signal and the end of its stderr) or
// reported a rank count other than job.ranks; DataLoss when its output does not parse or its
// samples cannot be fitted; SaveProfile's errors, naming the path.
absl::StatusOr<v1::HardwareProfile> Calibrate(const CalibrationJob& job);

// A string found only on this job's command lines, by which the launcher finds its ranks.
std::string CalibrationJobId();

// The calibration binary: `given` when set (--calibrator), else runtime::FindCalibrator's;
// NotFound saying how to point at one when there is none.
absl::StatusOr<std::string> CalibratorPath(const std::string& given);

// The calibration job's measurements: the last line of its stdout that starts with '{'.
// Internal when the job failed, DataLoss when that line does not parse.
absl::StatusOr<v1::HardwareProfile> ParseCalibrationOutput(const runtime::CommandResult& job);

// The name of the profile a tune on `ranks` ranks makes on first use: "auto-RANKS".
std::string AutomaticProfileName(int64_t ranks);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_CALIBRATION_H_
