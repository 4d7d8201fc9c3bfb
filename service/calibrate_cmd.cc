#include "service/calibrate_cmd.h"

#include <unistd.h>

#include <chrono>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "proto/meshtune.pb.h"
#include "runtime/launcher.h"
#include "search/hardware_profile.h"
#include "service/cli_io.h"

namespace meshtune::service {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int64_t kMaxRanks = 65536;

// "8.36 GB/s" for an inverse bandwidth in s/byte.
std::string Bandwidth(double s_per_byte) {
  return s_per_byte > 0 ? absl::StrFormat("%.3g GB/s", 1e-9 / s_per_byte) : std::string("unbounded");
}

std::string Summary(const v1::HardwareProfile& p) {
  return absl::StrFormat(
      "hardware profile \"%s\" saved to %s\n"
      "  measured on %s with %d ranks, %s, %s\n"
      "  point-to-point  alpha %.3g us, beta %s\n"
      "  broadcast       alpha %.3g us per tree level, beta %s\n"
      "  local GEMM      gamma %.3g GFLOP/s per rank (n = %d, every rank busy)\n",
      p.name(), search::ProfilePath(p.name()), p.host(), p.ranks(), p.dtype(), p.created(), p.alpha_s() * 1e6,
      Bandwidth(p.beta_s_per_byte()), p.alpha_coll_s() * 1e6, Bandwidth(p.beta_coll_s_per_byte()),
      p.gamma_s_per_flop() > 0 ? 1e-9 / p.gamma_s_per_flop() : 0.0, p.gemm_n());
}

// A string found only on this job's command lines, by which the launcher finds its ranks.
std::string JobId() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return absl::StrCat("meshtune-calibrate-", getpid(), "-",
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

}  // namespace

int RunCalibrate(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  auto fail = [&err](int code, absl::string_view message) {
    err << "meshtune: " << message << "\n";
    return code;
  };
  if (absl::Status s = search::ValidateProfileName(options.name); !s.ok()) return fail(kExitBadInput, s.message());
  if (options.ranks < 2) {
    return fail(kExitBadInput, absl::StrCat("calibrate needs at least 2 ranks (it times messages between two of "
                                            "them); got --ranks ",
                                            options.ranks));
  }
  if (options.ranks > kMaxRanks) {
    return fail(kExitBadInput, absl::StrCat("--ranks ", options.ranks, " is over the limit of ", kMaxRanks));
  }
  if (options.dtype != "f32" && options.dtype != "f64") {
    return fail(kExitBadInput, absl::StrCat("--dtype must be f32 or f64, not \"", options.dtype, "\""));
  }
  if (!(options.timeout_s > 0)) {
    return fail(kExitBadInput, absl::StrCat("--timeout-s must be positive, not ", options.timeout_s));
  }
  const std::string calibrator = options.calibrator.empty() ? runtime::FindCalibrator() : options.calibrator;
  if (calibrator.empty() || access(calibrator.c_str(), X_OK) != 0) {
    return fail(kExitFailed, absl::StrCat("cannot find the calibration binary meshtune_calibrate (looked for '",
                                          calibrator, "'); set MESHTUNE_CALIBRATOR"));
  }

  const std::string job_id = JobId();
  std::vector<std::string> command = {calibrator, "--dtype", options.dtype, "--job-id", job_id};
  if (options.quick) {
    command.insert(command.end(), {"--max-bytes", "1048576", "--reps", "10", "--gemm-n", "512", "--gemm-reps", "3"});
  }
  runtime::LaunchOptions launch;
  launch.timeout_s = options.timeout_s;
  const absl::StatusOr<runtime::CommandResult> job = runtime::LaunchCommand(options.ranks, command, launch, job_id);
  if (!job.ok()) return fail(kExitFailed, absl::StrCat("calibration failed: ", job.status().message()));

  std::string json;
  for (absl::string_view line : absl::StrSplit(job->out, '\n')) {
    if (!line.empty() && line[0] == '{') json = std::string(line);
  }
  v1::HardwareProfile profile;
  if (json.empty() || !google::protobuf::util::JsonStringToMessage(json, &profile).ok()) {
    return fail(kExitFailed, absl::StrCat("calibration failed: ", runtime::JobFailure(*job)));
  }
  if (job->signal != 0 || job->exit_code != 0) {
    const std::string how = job->signal != 0 ? absl::StrCat("died of signal ", job->signal)
                                             : absl::StrCat("exited with status ", job->exit_code);
    const std::string& tail = job->err_tail;
    return fail(kExitFailed, absl::StrCat("calibration failed: the job ", how, " after printing its profile: ",
                                          tail.size() > 600 ? tail.substr(tail.size() - 600) : tail));
  }
  profile.set_name(options.name);
  if (absl::Status s = search::SaveProfile(profile); !s.ok()) {
    return fail(kExitFailed, absl::StrCat("cannot store the hardware profile: ", s.message()));
  }
  out << (options.json ? ToJson(profile) + "\n" : Summary(profile));
  return kExitOk;
}

}  // namespace meshtune::service
