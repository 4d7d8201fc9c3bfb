// `meshtune calibrate`: measures this machine's alpha-beta-gamma numbers with the
// meshtune_calibrate job under mpirun (ping-pong, broadcast, local GEMM) and stores them as
// a named hardware profile (search/hardware_profile.h).
#ifndef MESHTUNE_SERVICE_CALIBRATE_CMD_H_
#define MESHTUNE_SERVICE_CALIBRATE_CMD_H_

#include <cstdint>
#include <ostream>
#include <string>

namespace meshtune::service {

// The parsed flags of `meshtune calibrate`.
struct CalibrateOptions {
  int64_t ranks = 0;             // MPI ranks of the job, at least 2
  std::string name = "default";  // the profile to store
  std::string dtype = "f32";     // element type of the GEMM: f32 or f64
  double timeout_s = 600;        // the job is killed after this
  bool quick = false;            // smaller messages, fewer repetitions, n = 512 GEMM: ~1 s
  bool json = false;             // print the profile as JSON instead of a summary
  std::string calibrator;        // path of meshtune_calibrate; "" = runtime::FindCalibrator()
};

// Runs the calibration job, stores its profile under options.name and prints a summary
// (or the profile's JSON) on `out`; errors go to `err` as "meshtune: MESSAGE". Returns the
// exit status: 0 when the profile was stored, 2 on bad input (a bad name or dtype, fewer
// than 2 ranks), 1 when the job failed or timed out (the launcher's account) or the
// profile could not be written.
int RunCalibrate(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace meshtune::service

#endif  // MESHTUNE_SERVICE_CALIBRATE_CMD_H_
