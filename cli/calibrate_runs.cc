#include "cli/calibrate_runs.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/excerpt.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "engine/fidelity.h"
#include "storage/hardware_profile.h"

namespace meshtune::cli {

namespace {

constexpr size_t kMaxRunsBytes = size_t{256} << 20;

// The fidelity runs of `paths`, one FidelityResult a non-empty line. InvalidArgument naming
// the file (and line) that cannot be read or parsed.
absl::StatusOr<std::vector<v1::FidelityResult>> ReadRuns(const std::vector<std::string>& paths) {
  std::vector<v1::FidelityResult> runs;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = ReadInput(path, kMaxRunsBytes, "--from-runs file");
    if (!text.ok()) return text.status();
    if (text->size() > kMaxRunsBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("--from-runs ", path, " is larger than 256 MiB"));
    }
    int line_number = 0;
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == absl::string_view::npos) continue;
      // A run of an earlier meshtune read its times at the machine's pace (a GEMM timed
      // beside each run): they are not measurements, and the fit takes none of them.
      if (absl::StrContains(line, "\"pace_s\"") || absl::StrContains(line, "\"paceS\"")) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, " line ", line_number,
            " holds times read at the machine's pace (a fidelity run of an earlier meshtune), "
            "not measurements; run meshtune fidelity again"));
      }
      v1::FidelityResult run;
      if (absl::Status s = base::FromJson(line, &run); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(path, " line ", line_number,
                                                       " is not a meshtune.v1.FidelityResult "
                                                       "(meshtune fidelity --json): ",
                                                       s.message()));
      }
      runs.push_back(std::move(run));
    }
  }
  if (runs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--from-runs ", absl::StrJoin(paths, ", "), " holds no fidelity runs"));
  }
  return runs;
}

std::string Stat(const v1::FidelityResult& r) {
  return absl::StrFormat("rho %s, median |error| %s",
                         r.has_spearman_rho() ? absl::StrFormat("%.3f", r.spearman_rho()) : "-",
                         r.has_median_relative_error()
                             ? absl::StrFormat("%.1f%%", 100 * r.median_relative_error())
                             : "-");
}

std::string FitSummary(const v1::HardwareProfile& p, const engine::RunFit& fit) {
  const v1::TermScales& k = p.term_scales();
  std::string out = absl::StrFormat(
      "term scales of hardware profile \"%s\" fitted to %d measured schedules (%d runs), "
      "saved to %s\n"
      "  compute         x%.3g\n  point-to-point  x%.3g\n  collectives     x%.3g\n"
      "  reductions      x%.3g\n  message wait    %.3g us a message\n",
      p.name(), fit.schedules, static_cast<int>(fit.before.size()), storage::ProfilePath(p.name()),
      k.compute(), k.point_to_point(), k.collective(), k.reduction(), 1e6 * k.message_s());
  for (size_t i = 0; i < fit.before.size(); ++i) {
    absl::StrAppend(&out, "  run ", i + 1, ", ", fit.before[i].problem(), " on ",
                    fit.before[i].mesh(), ": ", Stat(fit.before[i]), " before, ",
                    Stat(fit.after[i]), " after\n");
  }
  return out;
}

}  // namespace

int RunCalibrateFromRuns(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  if (absl::Status s = storage::ValidateProfileName(options.name); !s.ok()) return Fail(s, err);
  if (options.ranks != 0) {
    return Fail(absl::InvalidArgumentError(
                    "--from-runs fits the term scales of an existing profile and runs nothing: "
                    "give it without --ranks"),
                err);
  }
  absl::StatusOr<v1::HardwareProfile> profile = storage::LoadProfile(options.name);
  if (absl::IsNotFound(profile.status())) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("no hardware profile \"", options.name,
                                                        "\" to fit: calibrate it first "
                                                        "(meshtune calibrate --ranks P --name ",
                                                        options.name, ")")),
                err);
  }
  if (!profile.ok()) return Fail(profile.status(), err);
  absl::StatusOr<std::vector<v1::FidelityResult>> runs = ReadRuns(options.from_runs);
  if (!runs.ok()) return Fail(runs.status(), err);
  absl::StatusOr<engine::RunFit> fit = engine::FitToRuns(*runs, storage::ToCostParams(*profile));
  if (!fit.ok()) {
    return Fail(absl::InvalidArgumentError(
                    absl::StrCat("cannot fit the term scales: ", fit.status().message())),
                err);
  }
  v1::TermScales* k = profile->mutable_term_scales();
  k->set_compute(fit->scales.compute);
  k->set_point_to_point(fit->scales.point_to_point);
  k->set_collective(fit->scales.collective);
  k->set_reduction(fit->scales.reduction);
  k->set_message_s(fit->scales.message);
  k->set_schedules(fit->schedules);
  std::set<std::string> what;
  for (const v1::FidelityResult& r : *runs)
    what.insert(absl::StrCat(r.problem(), " on ", r.mesh()));
  k->set_runs(absl::StrJoin(what, "; "));
  if (absl::Status s = storage::SaveProfile(*profile); !s.ok()) {
    return Fail(
        absl::InternalError(absl::StrCat("cannot store the hardware profile: ", s.message())), err);
  }
  out << (options.json ? base::ToJsonLine(*profile) + "\n" : FitSummary(*profile, *fit));
  return engine::kExitOk;
}

int RunCalibrateInterNode(const CalibrateOptions& options, std::ostream& out, std::ostream& err) {
  if (absl::Status s = storage::ValidateProfileName(options.name); !s.ok()) return Fail(s, err);
  const auto bad = [&](const std::string& message) {
    return Fail(absl::InvalidArgumentError(message), err);
  };
  if (options.ranks != 0 || !options.from_runs.empty()) {
    return bad(
        "--inter-node gives the link between nodes of an existing profile and runs "
        "nothing: give it without --ranks and --from-runs");
  }
  if (options.node_ranks < 1 || options.node_ranks > 65536)
    return bad(absl::StrCat("--node-ranks ", options.node_ranks,
                            " is not a rank count from 1 to 65536 (the ranks of one node)"));
  const std::vector<std::string> parts = absl::StrSplit(options.inter_node, ',');
  double alpha = -1, beta = -1;
  if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &alpha) ||
      !absl::SimpleAtod(parts[1], &beta) || !std::isfinite(alpha) || !std::isfinite(beta) ||
      alpha < 0 || beta < 0) {
    return bad(absl::StrCat("--inter-node '", base::Excerpt(options.inter_node),
                            "' is not ALPHA,BETA: seconds per message and seconds per byte "
                            "between nodes, e.g. 2e-6,1e-10"));
  }
  absl::StatusOr<v1::HardwareProfile> profile = storage::LoadProfile(options.name);
  if (absl::IsNotFound(profile.status())) {
    return bad(absl::StrCat("no hardware profile \"", options.name,
                            "\" to give a link between nodes: calibrate it first (meshtune "
                            "calibrate --ranks P --name ",
                            options.name, ")"));
  }
  if (!profile.ok()) return Fail(profile.status(), err);
  v1::InterNode* link = profile->mutable_inter_node();
  link->set_node_ranks(options.node_ranks);
  link->set_alpha_s(alpha);
  link->set_beta_s_per_byte(beta);
  link->set_source("given");
  if (absl::Status s = storage::SaveProfile(*profile); !s.ok()) {
    return Fail(
        absl::InternalError(absl::StrCat("cannot store the hardware profile: ", s.message())), err);
  }
  out << (options.json
              ? base::ToJsonLine(*profile) + "\n"
              : absl::StrFormat("profile %s: nodes of %d ranks; between nodes alpha %.3g s, "
                                "beta %.3g s/byte (%.3g GB/s); within a node alpha %.3g s, "
                                "beta %.3g s/byte\n",
                                options.name, options.node_ranks, alpha, beta,
                                beta > 0 ? 1e-9 / beta : 0.0, profile->alpha_s(),
                                profile->beta_s_per_byte()));
  return engine::kExitOk;
}

}  // namespace meshtune::cli
