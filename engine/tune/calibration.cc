#include "engine/tune/calibration.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/json.h"
#include "base/status_macros.h"
#include "engine/cluster.h"
#include "runtime/launch/machine_bench_settings.h"
#include "storage/calibration_fit.h"
#include "storage/hardware_profile.h"

namespace meshtune::engine {

namespace {
constexpr int64_t kMaxRanks = 65536;
}  // namespace

std::string CalibrationJobId() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return absl::StrCat("meshtune-calibrate-", getpid(), "-",
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

std::string AutomaticProfileName(int64_t ranks) { return absl::StrCat("auto-", ranks); }

absl::StatusOr<v1::HardwareProfile> ParseCalibrationOutput(const runtime::CommandResult& job) {
  std::string json;
  for (absl::string_view line : absl::StrSplit(job.out, '\n')) {
    if (!line.empty() && line[0] == '{') json = std::string(line);
  }
  if (json.empty()) {
    return absl::InternalError(absl::StrCat("calibration failed: ", runtime::JobFailure(job)));
  }
  if (job.signal != 0 || job.exit_code != 0) {
    const std::string how = job.signal != 0 ? absl::StrCat("died of signal ", job.signal)
                                            : absl::StrCat("exited with status ", job.exit_code);
    const std::string& tail = job.err_tail;
    return absl::InternalError(
        absl::StrCat("calibration failed: the job ", how, " after printing its samples: ",
                     tail.size() > 600 ? tail.substr(tail.size() - 600) : tail));
  }
  v1::HardwareProfile measured;
  if (const absl::Status status = base::FromJson(json, &measured); !status.ok()) {
    return absl::DataLossError(
        absl::StrCat("calibration failed: cannot parse the job's samples: ", status.message()));
  }
  return measured;
}

absl::Status ValidateCalibrationJob(const CalibrationJob& job) {
  MT_RETURN_IF_ERROR(storage::ValidateProfileName(job.name));
  if (job.ranks == 0) {
    return absl::InvalidArgumentError(
        "--ranks is required: the MPI ranks to calibrate on (or --from-runs FILE to fit an "
        "existing profile to measured runs)");
  }
  if (job.ranks < 2 || job.ranks > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ranks ", job.ranks, " is out of range: calibrate needs 2 to ", kMaxRanks,
                     " ranks (it times messages between two of them)"));
  }
  if (job.dtype != "f32" && job.dtype != "f64") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype must be f32 or f64, not \"", job.dtype, "\""));
  }
  if (job.flush_mib != -1 && (job.flush_mib < 0 || job.flush_mib > 65536)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--flush-mib ", job.flush_mib, " is out of range: it must be 0 to 65536 MiB"));
  }
  if (!(job.timeout_s > 0 && job.timeout_s <= kMaxCalibrationTimeoutS)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--timeout ", job.timeout_s, " is out of range: it must be positive and at most ",
        kMaxCalibrationTimeoutS, " s (a week)"));
  }
  if (!job.calibrator.empty()) {
    struct stat st;
    if (stat(job.calibrator.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        access(job.calibrator.c_str(), X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--calibrator '", job.calibrator, "' is not an executable file"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CalibratorPath(const std::string& given) {
  const std::string path = given.empty() ? runtime::FindCalibrator() : given;
  if (path.empty()) {
    return absl::NotFoundError(
        "cannot find the calibration binary meshtune_calibrate beside meshtune or in its runfiles; "
        "set MESHTUNE_CALIBRATOR or pass --calibrator");
  }
  return path;
}

absl::StatusOr<v1::HardwareProfile> Calibrate(const CalibrationJob& job) {
  MT_RETURN_IF_ERROR(ValidateCalibrationJob(job));
  MT_ASSIGN_OR_RETURN(const std::string calibrator, CalibratorPath(job.calibrator));
  const std::string job_id = CalibrationJobId();
  runtime::MachineBenchSettings settings =
      job.quick ? runtime::QuickMachineBench() : runtime::MachineBenchSettings();
  settings.dtype = job.dtype;
  if (job.flush_mib >= 0) settings.flush_mib = static_cast<int>(job.flush_mib);
  std::vector<std::string> command = {calibrator, "--job-id", job_id};
  for (std::string& arg : runtime::MachineBenchArgs(settings)) command.push_back(std::move(arg));
  runtime::LaunchOptions launch = ClusterLaunch(job.cluster);
  launch.timeout_s = job.timeout_s;
  const absl::StatusOr<runtime::CommandResult> ran =
      runtime::LaunchCommand(job.ranks, command, launch, job_id);
  if (!ran.ok()) {
    return absl::Status(ran.status().code(),
                        absl::StrCat("calibration failed: ", ran.status().message()));
  }
  MT_ASSIGN_OR_RETURN(const v1::HardwareProfile measured, ParseCalibrationOutput(*ran));
  if (measured.ranks() != job.ranks) {
    return absl::InternalError(absl::StrCat("calibration failed: the job ran on ", measured.ranks(),
                                            " ranks instead of --ranks ", job.ranks));
  }
  MT_ASSIGN_OR_RETURN(v1::HardwareProfile profile, storage::FitProfile(measured));
  profile.set_name(job.name);
  profile.set_automatic(job.automatic);
  if (IsCluster(job.cluster)) *profile.mutable_cluster() = job.cluster;
  if (absl::Status s = storage::SaveProfile(profile); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("cannot store the hardware profile: ", s.message()));
  }
  if (job.name == "default") {
    // Best effort: a stale automatic profile is only ever read after the default.
    storage::RemoveProfile(AutomaticProfileName(job.ranks)).IgnoreError();
  }
  return profile;
}

}  // namespace meshtune::engine
