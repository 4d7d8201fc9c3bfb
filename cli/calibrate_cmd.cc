#include "cli/calibrate_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
#include "engine/cluster.h"
#include "engine/exit_codes.h"
#include "engine/flag_checks.h"
#include "engine/tune/calibration.h"
#include "runtime/launch/launcher.h"
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

// The calibration job `options` asks for.
engine::CalibrationJob JobOf(const CalibrateOptions& options) {
  engine::CalibrationJob job;
  job.ranks = options.ranks;
  job.name = options.name;
  job.dtype = options.dtype;
  job.timeout_s = options.timeout_s;
  job.quick = options.quick;
  job.flush_mib = options.flush_mib;
  job.calibrator = options.calibrator;
  job.cluster = engine::ClusterOf(options.hostfile, options.launcher, options.launcher_args);
  return job;
}

}  // namespace

absl::Status ValidateCalibrateOptions(const CalibrateOptions& options) {
  return engine::ValidateCalibrationJob(JobOf(options));
}

absl::StatusOr<v1::HardwareProfile> Calibrate(const CalibrateOptions& options) {
  return engine::Calibrate(JobOf(options));
}

namespace {

// The cluster `options` names (--hostfile, --launcher, --launcher-arg).
v1::Cluster ClusterOfOptions(const CalibrateOptions& options) {
  return engine::ClusterOf(options.hostfile, options.launcher, options.launcher_args);
}

// InvalidArgument when --node-ranks or --hostfile cannot serve a measurement of the link
// between nodes.
absl::Status CheckLinkOptions(const CalibrateOptions& options) {
  if (options.node_ranks < 1 || options.node_ranks >= kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-ranks ", options.node_ranks,
                     " is not a rank count from 1 to 65535 (the ranks of one node of the "
                     "hostfile)"));
  }
  if (options.ranks != 0 && options.node_ranks >= options.ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--node-ranks ", options.node_ranks, " is not below --ranks ", options.ranks,
        ": the link between nodes is timed from rank 0 to rank --node-ranks, on the second node"));
  }
  if (options.hostfile.empty()) return absl::OkStatus();
  struct stat st;
  if (stat(options.hostfile.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      access(options.hostfile.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hostfile '", base::Excerpt(options.hostfile), "' is not a readable file"));
  }
  return absl::OkStatus();
}

// The link between the cluster's nodes: a ping-pong from rank 0 to rank node_ranks (the
// first of the second node), fitted as storage::FitInterNode fits it.
absl::StatusOr<v1::InterNode> MeasureLink(const CalibrateOptions& options) {
  MT_ASSIGN_OR_RETURN(const std::string calibrator, engine::CalibratorPath(options.calibrator));
  const std::string job_id = engine::CalibrationJobId();
  const std::string peer = absl::StrCat(options.node_ranks);
  std::vector<std::string> command = {calibrator, "--link-only", "--peer",
                                      peer,       "--job-id",    job_id};
  // Messages to 16 MiB (4 MiB quick): the slope over the largest is the link's steady rate
  // (storage::FitInterNode), past the burst a shaped link sends at the line's speed.
  if (options.quick) {
    command.insert(command.end(), {"--max-bytes", "4194304", "--reps", "10"});
  } else {
    command.insert(command.end(), {"--max-bytes", "16777216", "--reps", "20"});
  }
  const v1::Cluster cluster = ClusterOfOptions(options);
  runtime::LaunchOptions launch = engine::ClusterLaunch(cluster);
  launch.timeout_s = options.timeout_s;
  MT_ASSIGN_OR_RETURN(const runtime::CommandResult job,
                      runtime::LaunchCommand(options.node_ranks + 1, command, launch, job_id));
  MT_ASSIGN_OR_RETURN(const v1::HardwareProfile measured, engine::ParseCalibrationOutput(job));
  return storage::FitInterNode(measured, options.node_ranks,
                               absl::StrCat("measured between rank 0 and rank ", peer, " with ",
                                            engine::ClusterText(cluster)));
}

// `profile` with the link between its cluster's nodes measured (MeasureLink) and the
// cluster stored, saved; prints the link (or the profile as JSON). Exit status.
int StoreLink(const CalibrateOptions& options, v1::HardwareProfile profile, std::ostream& out,
              std::ostream& err) {
  absl::StatusOr<v1::InterNode> link = MeasureLink(options);
  if (!link.ok()) {
    Fail(absl::Status(link.status().code(),
                      absl::StrCat("calibration failed: ", link.status().message())),
         err);
    return engine::kExitFailed;
  }
  *profile.mutable_inter_node() = *link;
  *profile.mutable_cluster() = ClusterOfOptions(options);
  if (absl::Status s = storage::SaveProfile(profile); !s.ok()) {
    Fail(absl::InternalError(absl::StrCat("cannot store the hardware profile: ", s.message())),
         err);
    return engine::kExitFailed;
  }
  out << (options.json
              ? base::ToJsonLine(profile) + "\n"
              : absl::StrFormat("profile %s: nodes of %d ranks; between nodes alpha %.3g s, beta "
                                "%.3g s/byte (%s), %s\n",
                                options.name, options.node_ranks, link->alpha_s(),
                                link->beta_s_per_byte(), Bandwidth(link->beta_s_per_byte()),
                                link->source()));
  return engine::kExitOk;
}

}  // namespace

int RunCalibrateAcrossNodes(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  if (absl::Status s = storage::ValidateProfileName(options.name); !s.ok()) return Fail(s, err);
  if (options.ranks != 0 || !options.inter_node.empty() || !options.from_runs.empty()) {
    return Fail(absl::InvalidArgumentError(
                    "--hostfile without --ranks measures the link between nodes of an existing "
                    "profile: give it with --node-ranks and without --inter-node and --from-runs"),
                err);
  }
  if (absl::Status s = CheckLinkOptions(options); !s.ok()) return Fail(s, err);
  absl::StatusOr<v1::HardwareProfile> profile = storage::LoadProfile(options.name);
  if (absl::IsNotFound(profile.status())) {
    return Fail(absl::InvalidArgumentError(
                    absl::StrCat("no hardware profile \"", options.name,
                                 "\" to measure a link between nodes for: calibrate it first "
                                 "(meshtune calibrate --ranks P --name ",
                                 options.name, ")")),
                err);
  }
  if (!profile.ok()) return Fail(profile.status(), err);
  return StoreLink(options, *std::move(profile), out, err);
}

int RunCalibrate(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.from_runs.empty()) return RunCalibrateFromRuns(options, out, err);
  const bool cluster = engine::IsCluster(ClusterOfOptions(options));
  if (cluster && options.ranks == 0) return RunCalibrateAcrossNodes(options, out, err);
  if (!cluster && (!options.inter_node.empty() || options.node_ranks != 0))
    return RunCalibrateInterNode(options, out, err);
  // Only the flags are bad input: a file-system error from storing the profile may be
  // InvalidArgument too (ENAMETOOLONG), and is still a failure of the command.
  absl::Status valid = ValidateCalibrateOptions(options);
  if (valid.ok() && !options.inter_node.empty()) {
    valid = absl::InvalidArgumentError(
        "--inter-node gives the link between nodes instead of measuring it: give it without "
        "--ranks, --hostfile, --launcher and --launcher-arg");
  }
  if (valid.ok() && options.node_ranks != 0) valid = CheckLinkOptions(options);
  if (!valid.ok()) {
    err << "meshtune: " << valid.message() << "\n";
    return engine::kExitBadInput;
  }
  const absl::StatusOr<v1::HardwareProfile> profile = Calibrate(options);
  if (!profile.ok()) {
    // A file-system error may be InvalidArgument too (ENAMETOOLONG): still a failure here.
    Fail(profile.status(), err);
    return engine::kExitFailed;
  }
  if (options.node_ranks != 0) {  // then the link between the cluster's nodes
    if (!options.json) out << Summary(*profile);
    return StoreLink(options, *profile, out, err);
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
  cmd->add_option(
         "--node-ranks", o.node_ranks,
         "with --inter-node or --hostfile: the ranks of one node (ranks fill nodes in order)")
      ->transform(engine::IntegerIn(
          kInt64Min, kInt64Max));  // the range: CheckLinkOptions, RunCalibrateInterNode
  cmd->add_option("--hostfile", o.hostfile,
                  "MPI hostfile of a cluster whose nodes hold --node-ranks ranks each: with "
                  "--ranks, calibrate there and then measure the link between its nodes; "
                  "without, measure only that link for profile --name. Runs with the profile "
                  "launch there");
  cmd->add_option("--launcher", o.launcher,
                  "launcher program of the cluster instead of mpirun (e.g. srun)");
  cmd->add_option("--launcher-arg", o.launcher_args,
                  "extra launcher argument of the cluster (repeatable)");
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
