#include "cli/calibrate_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/excerpt.h"
#include "base/json.h"
#include "base/status_macros.h"
#include "cli/calibrate_runs.h"
#include "cli/cli_io.h"
#include "cli/flag_groups.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"
#include "runtime/launcher.h"
#include "storage/calibration_fit.h"
#include "storage/hardware_profile.h"

namespace meshtune::cli {
namespace {

constexpr int64_t kMaxRanks = 65536;

// "1.45 GB/s" for an inverse bandwidth in s/byte.
std::string Bandwidth(double s_per_byte) {
  return s_per_byte > 0 ? absl::StrFormat("%.3g GB/s", 1e-9 / s_per_byte)
                        : std::string("unbounded");
}

// "0.933 us, 3.9 GB/s" for a collective's fit, or "-" when there is none.
std::string FitText(const v1::CollectiveFit* f) {
  return f == nullptr
             ? std::string("-")
             : absl::StrFormat("%.3g us, %s", f->alpha_s() * 1e6, Bandwidth(f->beta_s_per_byte()));
}

// The collectives (each at the largest group measured, blocking and nonblocking), the GEMM
// tiles and the memory passes measured as such; "" for a profile without them.
std::string TableSummary(const v1::HardwareProfile& p) {
  std::string out;
  int group = 0;
  for (const v1::CollectiveFit& c : p.collectives()) group = std::max(group, c.group());
  if (group > 0) {
    absl::StrAppendFormat(&out, "  collectives     over %d ranks, blocking | nonblocking:\n",
                          group);
    for (const char* kind : {"bcast", "reduce", "allgather", "reduce_scatter", "allreduce"}) {
      const v1::CollectiveFit* fit[2] = {nullptr, nullptr};
      for (const v1::CollectiveFit& c : p.collectives()) {
        if (c.group() != group) continue;
        if (c.kind() == kind) fit[0] = &c;
        if (c.kind() == absl::StrCat("i", kind)) fit[1] = &c;
      }
      absl::StrAppendFormat(&out, "    %-15s %s | %s\n", kind, FitText(fit[0]), FitText(fit[1]));
    }
  }
  if (p.gemm_rates_size() > 0) {
    const v1::GemmRate* lo = &p.gemm_rates(0);
    const v1::GemmRate* hi = lo;
    for (const v1::GemmRate& r : p.gemm_rates()) {
      if (r.flops_per_s() < lo->flops_per_s()) lo = &r;
      if (r.flops_per_s() > hi->flops_per_s()) hi = &r;
    }
    absl::StrAppendFormat(&out,
                          "  GEMM tiles      %d shapes, %.3g GFLOP/s (%dx%dx%d) to %.3g GFLOP/s "
                          "(%dx%dx%d) with a core to each rank\n",
                          p.gemm_rates_size(), lo->flops_per_s() * 1e-9, lo->m(), lo->n(), lo->k(),
                          hi->flops_per_s() * 1e-9, hi->m(), hi->n(), hi->k());
  }
  if (p.cache_flush_bytes() > 0) {
    absl::StrAppendFormat(&out,
                          "  cold caches     %d MiB written on each node before every timed "
                          "transfer and memory pass\n",
                          p.cache_flush_bytes() >> 20);
  }
  if (p.copy_s_per_byte() > 0 || p.add_s_per_byte() > 0) {
    absl::StrAppendFormat(&out, "  memory passes   pack %s, add %s%s per rank\n",
                          Bandwidth(p.copy_s_per_byte()), Bandwidth(p.add_s_per_byte()),
                          p.gather_s_per_byte() > 0
                              ? ", strided " + Bandwidth(p.gather_s_per_byte())
                              : std::string());
  }
  return out;
}

std::string Summary(const v1::HardwareProfile& p) {
  return absl::StrFormat(
             "hardware profile \"%s\" saved to %s\n"
             "  measured on %s with %d ranks (%d on a node of %d cores), %s, %s\n"
             "  point-to-point  alpha %.3g us, beta %.3g s/B (%s)\n"
             "  broadcast       alpha_coll %.3g us per tree level, beta_coll %.3g s/B (%s)\n"
             "  local GEMM      gamma %.3g s/flop (%.3g GFLOP/s per rank, n = %d, every rank "
             "busy)\n"
             "  overlap         %.2f of the shorter of a GEMM and a transfer in flight with it "
             "hidden\n",
             p.name(), storage::ProfilePath(p.name()), p.host(), p.ranks(), p.ranks_per_node(),
             p.cores(), p.dtype(), p.created(), p.alpha_s() * 1e6, p.beta_s_per_byte(),
             Bandwidth(p.beta_s_per_byte()), p.alpha_coll_s() * 1e6, p.beta_coll_s_per_byte(),
             Bandwidth(p.beta_coll_s_per_byte()), p.gamma_s_per_flop(), 1e-9 / p.gamma_s_per_flop(),
             p.gemm_n(), p.overlap()) +
         TableSummary(p);
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
  if (const absl::Status status = base::FromJson(json, &measured); !status.ok()) {
    return absl::DataLossError(
        absl::StrCat("calibration failed: cannot parse the job's samples: ", status.message()));
  }
  return measured;
}

}  // namespace

absl::Status ValidateCalibrateOptions(const CalibrateOptions& options) {
  MT_RETURN_IF_ERROR(storage::ValidateProfileName(options.name));
  if (options.ranks == 0) {
    return absl::InvalidArgumentError(
        "--ranks is required: the MPI ranks to calibrate on (or --from-runs FILE to fit an "
        "existing profile to measured runs)");
  }
  if (options.ranks < 2 || options.ranks > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ranks ", options.ranks, " is out of range: calibrate needs 2 to ",
                     kMaxRanks, " ranks (it times messages between two of them)"));
  }
  if (options.dtype != "f32" && options.dtype != "f64") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype must be f32 or f64, not \"", options.dtype, "\""));
  }
  if (options.flush_mib != -1 && (options.flush_mib < 0 || options.flush_mib > 65536)) {
    return absl::InvalidArgumentError(absl::StrCat("--flush-mib ", options.flush_mib,
                                                   " is out of range: it must be 0 to 65536 MiB"));
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
    command.insert(command.end(),
                   {"--max-bytes", "1048576", "--reps", "10", "--gemm-n", "512", "--gemm-reps", "3",
                    "--tile-grid", "1,64,512", "--tile-ms", "1"});
  }
  const int64_t flush_mib = options.flush_mib < 0 && options.quick ? 4 : options.flush_mib;
  if (flush_mib >= 0) command.insert(command.end(), {"--flush-mib", absl::StrCat(flush_mib)});
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
  MT_ASSIGN_OR_RETURN(v1::HardwareProfile profile, storage::FitProfile(measured));
  profile.set_name(options.name);
  if (absl::Status s = storage::SaveProfile(profile); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("cannot store the hardware profile: ", s.message()));
  }
  return profile;
}

int RunCalibrateAcrossNodes(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  if (absl::Status s = storage::ValidateProfileName(options.name); !s.ok()) return Fail(s, err);
  const auto bad = [&](const std::string& message) {
    return Fail(absl::InvalidArgumentError(message), err);
  };
  if (options.ranks != 0 || !options.inter_node.empty() || !options.from_runs.empty()) {
    return bad(
        "--hostfile measures the link between nodes of an existing profile: give it with "
        "--node-ranks and without --ranks, --inter-node and --from-runs");
  }
  if (options.node_ranks < 1 || options.node_ranks >= kMaxRanks) {
    return bad(absl::StrCat("--node-ranks ", options.node_ranks,
                            " is not a rank count from 1 to 65535 (the ranks of one node of the "
                            "hostfile)"));
  }
  struct stat st;
  if (stat(options.hostfile.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      access(options.hostfile.c_str(), R_OK) != 0) {
    return bad(
        absl::StrCat("--hostfile '", base::Excerpt(options.hostfile), "' is not a readable file"));
  }
  absl::StatusOr<v1::HardwareProfile> profile = storage::LoadProfile(options.name);
  if (absl::IsNotFound(profile.status())) {
    return bad(absl::StrCat("no hardware profile \"", options.name,
                            "\" to measure a link between nodes for: calibrate it first "
                            "(meshtune calibrate --ranks P --name ",
                            options.name, ")"));
  }
  if (!profile.ok()) return Fail(profile.status(), err);
  const std::string calibrator =
      options.calibrator.empty() ? runtime::FindCalibrator() : options.calibrator;
  const std::string job_id = JobId();
  const std::string peer = absl::StrCat(options.node_ranks);
  std::vector<std::string> command = {calibrator, "--link-only", "--peer",
                                      peer,       "--job-id",    job_id};
  if (options.quick) command.insert(command.end(), {"--max-bytes", "1048576", "--reps", "10"});
  runtime::LaunchOptions launch;
  launch.timeout_s = options.timeout_s;
  launch.hostfile = options.hostfile;
  absl::StatusOr<v1::InterNode> link = [&]() -> absl::StatusOr<v1::InterNode> {
    if (calibrator.empty()) {
      return absl::NotFoundError(
          "cannot find the calibration binary meshtune_calibrate beside meshtune or in its "
          "runfiles; set MESHTUNE_CALIBRATOR or pass --calibrator");
    }
    MT_ASSIGN_OR_RETURN(const runtime::CommandResult job,
                        runtime::LaunchCommand(options.node_ranks + 1, command, launch, job_id));
    MT_ASSIGN_OR_RETURN(const v1::HardwareProfile measured, ParseJobOutput(job));
    return storage::FitInterNode(measured, options.node_ranks,
                                 absl::StrCat("measured between rank 0 and rank ", peer,
                                              " with hostfile ", options.hostfile));
  }();
  if (!link.ok()) {
    Fail(absl::Status(link.status().code(),
                      absl::StrCat("calibration failed: ", link.status().message())),
         err);
    return engine::kExitFailed;
  }
  *profile->mutable_inter_node() = *link;
  if (absl::Status s = storage::SaveProfile(*profile); !s.ok()) {
    Fail(absl::InternalError(absl::StrCat("cannot store the hardware profile: ", s.message())),
         err);
    return engine::kExitFailed;
  }
  out << (options.json
              ? base::ToJsonLine(*profile) + "\n"
              : absl::StrFormat("profile %s: nodes of %d ranks; between nodes alpha %.3g s, beta "
                                "%.3g s/byte (%s), %s\n",
                                options.name, options.node_ranks, link->alpha_s(),
                                link->beta_s_per_byte(), Bandwidth(link->beta_s_per_byte()),
                                link->source()));
  return engine::kExitOk;
}

int RunCalibrate(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.from_runs.empty()) return RunCalibrateFromRuns(options, out, err);
  if (!options.hostfile.empty()) return RunCalibrateAcrossNodes(options, out, err);
  if (!options.inter_node.empty() || options.node_ranks != 0)
    return RunCalibrateInterNode(options, out, err);
  // Only the flags are bad input: a file-system error from storing the profile may be
  // InvalidArgument too (ENAMETOOLONG), and is still a failure of the command.
  if (absl::Status s = ValidateCalibrateOptions(options); !s.ok()) {
    err << "meshtune: " << s.message() << "\n";
    return engine::kExitBadInput;
  }
  const absl::StatusOr<v1::HardwareProfile> profile = Calibrate(options);
  if (!profile.ok()) {
    // A file-system error may be InvalidArgument too (ENAMETOOLONG): still a failure here.
    Fail(profile.status(), err);
    return engine::kExitFailed;
  }
  out << (options.json ? base::ToJsonLine(*profile) + "\n" : Summary(*profile));
  return engine::kExitOk;
}

namespace {

// calibrate's flags: --timeout and --json are the shared groups' (flag_groups.h).
struct CalibrateFlags {
  CalibrateOptions options;
  MeasurementFlags measure;
  OutputFlags output;
};

// --from-runs, --inter-node, --node-ranks, --hostfile: instead of calibrating.
void AddInsteadFlags(CLI::App* cmd, CalibrateOptions& o) {
  cmd->add_option("--from-runs", o.from_runs,
                  "instead of calibrating: fit the cost model's term scales of profile --name "
                  "to measured runs (files of `meshtune fidelity --json` lines)")
      ->expected(1, -1);
  cmd->add_option("--inter-node", o.inter_node,
                  "instead of calibrating: ALPHA,BETA, seconds per message and per byte "
                  "between nodes, stored in profile --name (with --node-ranks)");
  cmd->add_option("--node-ranks", o.node_ranks,
                  "with --inter-node: the ranks of one node (ranks fill nodes in order)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: RunCalibrateInterNode
  cmd->add_option("--hostfile", o.hostfile,
                  "instead of calibrating: measure the link between nodes of profile "
                  "--name with an MPI hostfile whose nodes hold --node-ranks ranks each");
}

}  // namespace

Command AddCalibrateCommand(CLI::App& app) {
  auto flags = std::make_shared<CalibrateFlags>();
  CalibrateOptions& o = flags->options;
  flags->measure.timeout_s = o.timeout_s;
  CLI::App* cmd =
      app.add_subcommand("calibrate", "measure alpha, beta and gamma under MPI; store a profile");
  cmd->add_option("--ranks", o.ranks, "MPI ranks, at least 2 (required unless --from-runs)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: RunCalibrate
  cmd->add_option("--name", o.name, "hardware profile name (default: default)");
  cmd->add_option("--dtype", o.dtype, "GEMM element type: f32 or f64");
  flags->measure.AddTimeout(cmd, "seconds before the job is killed (default: 600)");
  cmd->add_flag("--quick", o.quick, "fewer sizes and repetitions (~1 s)");
  cmd->add_option("--flush-mib", o.flush_mib,
                  "MiB each node writes before every timed transfer, to time it from cold "
                  "caches as schedules run it (default: twice the last-level cache; none where "
                  "ranks outnumber cores)")
      ->transform(engine::IntegerIn(kInt64Min, kInt64Max));  // the range: RunCalibrate
  flags->output.AddJson(cmd, "print the profile as JSON");
  AddInsteadFlags(cmd, o);
  cmd->add_option("--calibrator", o.calibrator,
                  "path of meshtune_calibrate (default: found beside meshtune)");
  return {cmd, [flags] {
            CalibrateOptions options = flags->options;
            options.timeout_s = flags->measure.timeout_s;
            options.json = flags->output.json;
            runtime::InstallStopSignalHandlers();  // a stop kills the job
            return RunCalibrate(options, std::cout, std::cerr);
          }};
}

}  // namespace meshtune::cli
