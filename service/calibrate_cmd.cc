#include "service/calibrate_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "ir/status_macros.h"
#include "runtime/launcher.h"
#include "search/hardware_profile.h"
#include "service/cli_io.h"
#include "service/exit_codes.h"

namespace meshtune::service {
namespace {

constexpr int64_t kMaxRanks = 65536;
constexpr double kMaxTimeoutS = 7 * 24 * 3600;

struct Line {
  double intercept = 0, slope = 0;
};

// Least-squares fit of t = intercept + slope * x weighted by 1 / t^2, with non-negative
// coefficients (FitProfile's contract). For two coefficients the clamped solutions below
// are exactly the constrained optimum: the free fit's intercept is negative precisely when
// the intercept-0 fit satisfies the optimality condition, and likewise for the slope.
Line FitNonNegative(const std::vector<double>& x, const std::vector<double>& t) {
  double s = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = 1 / (t[i] * t[i]);
    s += w;
    sx += w * x[i];
    sxx += w * x[i] * x[i];
    st += w * t[i];
    sxt += w * x[i] * t[i];
  }
  Line line;
  const double det = s * sxx - sx * sx;
  if (det > 0) {
    line.intercept = (sxx * st - sx * sxt) / det;
    line.slope = (s * sxt - sx * st) / det;
  }
  if (det <= 0 || line.slope < 0) {  // one size only, or a negative slope: the weighted mean
    line.slope = 0;
    line.intercept = st / s;
  } else if (line.intercept < 0) {  // a line through the origin
    line.intercept = 0;
    line.slope = sxt / sxx;
  }
  return line;
}

// "1.45 GB/s" for an inverse bandwidth in s/byte.
std::string Bandwidth(double s_per_byte) {
  return s_per_byte > 0 ? absl::StrFormat("%.3g GB/s", 1e-9 / s_per_byte)
                        : std::string("unbounded");
}

std::string Summary(const v1::HardwareProfile& p) {
  return absl::StrFormat(
      "hardware profile \"%s\" saved to %s\n"
      "  measured on %s with %d ranks, %s, %s\n"
      "  point-to-point  alpha %.3g us, beta %.3g s/B (%s)\n"
      "  broadcast       alpha_coll %.3g us per tree level, beta_coll %.3g s/B (%s)\n"
      "  local GEMM      gamma %.3g s/flop (%.3g GFLOP/s per rank, n = %d, every rank busy)\n",
      p.name(), search::ProfilePath(p.name()), p.host(), p.ranks(), p.dtype(), p.created(),
      p.alpha_s() * 1e6, p.beta_s_per_byte(), Bandwidth(p.beta_s_per_byte()),
      p.alpha_coll_s() * 1e6, p.beta_coll_s_per_byte(), Bandwidth(p.beta_coll_s_per_byte()),
      p.gamma_s_per_flop(), 1e-9 / p.gamma_s_per_flop(), p.gemm_n());
}

// A string found only on this job's command lines, by which the launcher finds its ranks.
std::string JobId() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return absl::StrCat("meshtune-calibrate-", getpid(), "-",
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

// The calibration job's profile: the last line of its stdout that starts with '{'. Internal
// when the job failed, DataLoss when that line does not parse.
absl::StatusOr<v1::HardwareProfile> ParseJobOutput(const runtime::CommandResult& job) {
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
  if (const auto status = google::protobuf::util::JsonStringToMessage(json, &measured);
      !status.ok()) {
    return absl::DataLossError(absl::StrCat("calibration failed: cannot parse the job's samples: ",
                                            status.message().ToString()));
  }
  return measured;
}

}  // namespace

absl::Status ValidateCalibrateOptions(const CalibrateOptions& options) {
  MT_RETURN_IF_ERROR(search::ValidateProfileName(options.name));
  if (options.ranks < 2 || options.ranks > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ranks ", options.ranks, " is out of range: calibrate needs 2 to ",
                     kMaxRanks, " ranks (it times messages between two of them)"));
  }
  if (options.dtype != "f32" && options.dtype != "f64") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype must be f32 or f64, not \"", options.dtype, "\""));
  }
  if (!(options.timeout_s > 0 && options.timeout_s <= kMaxTimeoutS)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--timeout ", options.timeout_s, " is out of range: it must be positive and at most ",
        kMaxTimeoutS, " s (a week)"));
  }
  if (!options.calibrator.empty()) {
    struct stat st;
    if (stat(options.calibrator.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        access(options.calibrator.c_str(), X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--calibrator '", options.calibrator, "' is not an executable file"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::HardwareProfile> FitProfile(const v1::HardwareProfile& measured) {
  if (measured.ranks() < 2) {
    return absl::DataLossError(
        absl::StrCat("the calibration ran on ", measured.ranks(), " ranks; at least 2 are needed"));
  }
  if (measured.gemm_n() < 1) {
    return absl::DataLossError(
        absl::StrCat("the calibration's GEMM size gemm_n is ", measured.gemm_n()));
  }
  std::vector<double> pp_bytes, pp_s, sh_bytes, sh_s, bc_bytes, bc_s, gemm_s;
  for (int i = 0; i < measured.samples_size(); ++i) {
    const v1::CalibrationSample& s = measured.samples(i);
    const std::string what =
        absl::StrCat("calibration sample ", i, " (", s.kind(), ", ", s.bytes(), " bytes)");
    if (s.bytes() <= 0 || !(s.seconds() > 0) || !std::isfinite(s.seconds())) {
      return absl::DataLossError(absl::StrCat(what, ": seconds is ", s.seconds(),
                                              "; bytes and seconds must be positive and finite"));
    }
    if (s.kind() == "pingpong") {
      pp_bytes.push_back(s.bytes());
      pp_s.push_back(s.seconds());
    } else if (s.kind() == "shift") {
      sh_bytes.push_back(s.bytes());
      sh_s.push_back(s.seconds());
    } else if (s.kind() == "bcast") {
      bc_bytes.push_back(s.bytes());
      bc_s.push_back(s.seconds());
    } else if (s.kind() == "gemm") {
      gemm_s.push_back(s.seconds());
    } else {
      return absl::DataLossError(absl::StrCat(what, ": unknown kind \"", s.kind(), "\""));
    }
  }
  for (const auto& [kind, n] :
       {std::pair<const char*, size_t>{"pingpong", pp_s.size()}, {"bcast", bc_s.size()}}) {
    if (n == 0)
      return absl::DataLossError(absl::StrCat("the calibration has no \"", kind, "\" sample"));
  }
  if (gemm_s.size() != 1) {
    return absl::DataLossError(
        absl::StrCat("the calibration has ", gemm_s.size(), " \"gemm\" samples; one is needed"));
  }

  v1::HardwareProfile profile = measured;
  // Point-to-point transfers of a schedule run on every rank at once: the ring exchange
  // (profiles from before it existed have the ping-pong alone).
  const Line p2p = sh_s.empty() ? FitNonNegative(pp_bytes, pp_s) : FitNonNegative(sh_bytes, sh_s);
  const Line coll = FitNonNegative(bc_bytes, bc_s);
  const double n = measured.gemm_n();
  profile.set_alpha_s(p2p.intercept);
  profile.set_beta_s_per_byte(p2p.slope);
  profile.set_alpha_coll_s(coll.intercept / std::log2(static_cast<double>(measured.ranks())));
  profile.set_beta_coll_s_per_byte(coll.slope);
  profile.set_gamma_s_per_flop(gemm_s[0] / (2 * n * n * n));
  return profile;
}

absl::StatusOr<v1::HardwareProfile> Calibrate(const CalibrateOptions& options) {
  MT_RETURN_IF_ERROR(ValidateCalibrateOptions(options));
  const std::string calibrator =
      options.calibrator.empty() ? runtime::FindCalibrator() : options.calibrator;
  if (calibrator.empty()) {
    return absl::NotFoundError(
        "cannot find the calibration binary meshtune_calibrate beside meshtune or in its runfiles; "
        "set MESHTUNE_CALIBRATOR or pass --calibrator");
  }

  const std::string job_id = JobId();
  std::vector<std::string> command = {calibrator, "--dtype", options.dtype, "--job-id", job_id};
  if (options.quick) {
    command.insert(command.end(), {"--max-bytes", "1048576", "--reps", "10", "--gemm-n", "512",
                                   "--gemm-reps", "3"});
  }
  runtime::LaunchOptions launch;
  launch.timeout_s = options.timeout_s;
  const absl::StatusOr<runtime::CommandResult> job =
      runtime::LaunchCommand(options.ranks, command, launch, job_id);
  if (!job.ok()) {
    return absl::Status(job.status().code(),
                        absl::StrCat("calibration failed: ", job.status().message()));
  }
  MT_ASSIGN_OR_RETURN(const v1::HardwareProfile measured, ParseJobOutput(*job));
  if (measured.ranks() != options.ranks) {
    return absl::InternalError(absl::StrCat("calibration failed: the job ran on ", measured.ranks(),
                                            " ranks instead of --ranks ", options.ranks));
  }
  MT_ASSIGN_OR_RETURN(v1::HardwareProfile profile, FitProfile(measured));
  profile.set_name(options.name);
  if (absl::Status s = search::SaveProfile(profile); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("cannot store the hardware profile: ", s.message()));
  }
  return profile;
}

int RunCalibrate(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  // Only the flags are bad input: a file-system error from storing the profile may be
  // InvalidArgument too (ENAMETOOLONG), and is still a failure of the command.
  if (absl::Status s = ValidateCalibrateOptions(options); !s.ok()) {
    err << "meshtune: " << s.message() << "\n";
    return kExitBadInput;
  }
  const absl::StatusOr<v1::HardwareProfile> profile = Calibrate(options);
  if (!profile.ok()) {
    err << "meshtune: " << profile.status().message() << "\n";
    return kExitFailed;
  }
  out << (options.json ? ToJson(*profile) + "\n" : Summary(*profile));
  return kExitOk;
}

}  // namespace meshtune::service
