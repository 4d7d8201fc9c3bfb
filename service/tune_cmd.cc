#include "service/tune_cmd.h"

#include <cmath>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "search/hardware_profile.h"
#include "search/runner.h"
#include "service/cli_io.h"

namespace meshtune::service {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
constexpr double kMaxBudgetS = 7 * 24 * 3600;
constexpr int kMaxTopK = 1000;

// JSON values for the result line (keys keep the documented order).
std::string Num(double v) { return std::isfinite(v) ? absl::StrFormat("%.9g", v) : "null"; }
std::string NumOrNull(const std::optional<double>& v) { return v.has_value() ? Num(*v) : "null"; }
std::string Bool(bool b) { return b ? "true" : "false"; }
std::string Strings(const std::vector<std::string>& v) {
  std::vector<std::string> quoted;
  for (const std::string& s : v) quoted.push_back(JsonQuote(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// Draws the tuner's progress on one terminal line.
class ProgressLine : public search::TuneCallback {
 public:
  explicit ProgressLine(std::ostream& err) : err_(err) {}
  ~ProgressLine() override { err_ << "\r\033[K" << std::flush; }
  void OnProgress(const search::TuneProgress& p) override {
    int64_t pruned = 0;
    for (const auto& [reason, n] : p.counts.pruned) pruned += n;
    std::string line = absl::StrFormat("%-7s %.1fs  enumerated %d, pruned %d, legal %d, costed %d", p.stage,
                                       p.elapsed_s, p.counts.enumerated, pruned, p.counts.legal, p.counts.costed);
    if (p.to_measure > 0) absl::StrAppend(&line, absl::StrFormat(", measured %d of %d", p.measured, p.to_measure));
    if (p.best_predicted_s) absl::StrAppend(&line, absl::StrFormat(", best predicted %.4g s", *p.best_predicted_s));
    if (p.best_measured_s) absl::StrAppend(&line, absl::StrFormat(", best measured %.4g s", *p.best_measured_s));
    err_ << "\r\033[K" << line << std::flush;
  }

 private:
  std::ostream& err_;
};

std::string Summary(const search::TuneResult& r) {
  std::string out = absl::StrCat("best schedule on ", r.mesh, " (", r.strategy, " search; ", r.counts.enumerated,
                                 " candidates, ", r.counts.legal, " legal, ", r.counts.costed, " costed, ",
                                 r.measurements.size(), " measured, ", absl::StrFormat("%.2f", r.seconds), " s):\n\n");
  absl::StrAppend(&out, r.best.trace, "\n");
  absl::StrAppend(&out, absl::StrFormat("predicted  %.6g s\n", r.best.cost.seconds));
  if (r.measured_s.has_value()) {
    absl::StrAppend(&out, absl::StrFormat("measured   %.6g s (verified)\n", *r.measured_s));
  } else {
    absl::StrAppend(&out, "measured   -\n");
  }
  absl::StrAppend(&out, "transfers  ", r.best.patterns.empty() ? "none" : absl::StrJoin(r.best.patterns, "; "), "\n");
  absl::StrAppend(&out, "words      ", r.best.cost.comm_words_per_rank, " per rank");
  if (r.lower_bound_ratio.has_value()) {
    absl::StrAppend(&out, absl::StrFormat(" (%.3g x the lower bound)", *r.lower_bound_ratio));
  }
  absl::StrAppend(&out, "\n");
  for (const search::Measurement& m : r.measurements) {
    absl::StrAppend(&out, absl::StrFormat("  run: predicted %.4g s, %s  %s\n", m.candidate.cost.seconds,
                                          m.run.seconds ? absl::StrFormat("measured %.4g s", *m.run.seconds)
                                                        : "failed: " + m.run.error.value_or("not verified"),
                                          absl::StrJoin(m.candidate.patterns, "; ")));
  }
  return out;
}

}  // namespace

search::CostParams BuiltinCostParams() {
  search::CostParams p;
  p.alpha = 1e-6;
  p.beta = 2.5e-10;
  p.alpha_coll = 1e-6;
  p.beta_coll = 5e-10;
  p.gamma = 1.0 / 30e9;
  return p;
}

absl::StatusOr<search::TuneOptions> MakeTuneOptions(const TuneFlags& flags, std::string* warning) {
  search::TuneOptions o;
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(flags.expr, flags.extents, flags.dtype);
  if (!problem.ok()) return problem.status();
  o.problem = *std::move(problem);
  std::optional<int64_t> mem;
  if (!flags.mem_per_rank.empty()) {
    absl::StatusOr<int64_t> bytes = ir::ParseByteSize(flags.mem_per_rank);
    if (!bytes.ok()) return bytes.status();
    mem = *bytes;
  }
  if (flags.mesh.empty() == (flags.ranks == 0)) {
    return absl::InvalidArgumentError("give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)");
  }
  if (!flags.mesh.empty()) {
    absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(flags.mesh);
    if (!mesh.ok()) return mesh.status();
    mesh->mem_per_rank_bytes = mem;
    o.meshes.push_back(*std::move(mesh));
  } else {
    if (flags.ranks < 1 || flags.ranks > ir::kMaxRanks) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ranks ", flags.ranks, " is out of range: give 1 to ", ir::kMaxRanks, " ranks"));
    }
    std::set<std::string> taken(o.problem.indices.begin(), o.problem.indices.end());
    for (const std::string& t : o.problem.Tensors()) taken.insert(t);
    o.meshes = search::MeshFactorisations(flags.ranks, mem, taken);
  }
  if (flags.top_k < 0 || flags.top_k > kMaxTopK) {
    return absl::InvalidArgumentError(absl::StrCat("--top-k ", flags.top_k, " is out of range: 0 to ", kMaxTopK));
  }
  if (!(flags.budget_s > 0) || flags.budget_s > kMaxBudgetS) {
    return absl::InvalidArgumentError(
        absl::StrCat("--budget-s ", flags.budget_s, " is out of range: more than 0, at most ", kMaxBudgetS));
  }
  if (flags.max_evaluations < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--max-evaluations ", flags.max_evaluations, " must be at least 1"));
  }
  for (const auto& [name, v] : {std::pair{"--alpha", flags.alpha}, {"--beta", flags.beta}, {"--gamma", flags.gamma}}) {
    if (v.has_value() && !(*v >= 0 && std::isfinite(*v))) {
      return absl::InvalidArgumentError(absl::StrCat(name, " ", *v, " must be a finite number >= 0"));
    }
  }
  absl::StatusOr<v1::HardwareProfile> profile = search::LoadProfile(flags.profile);
  if (profile.ok()) {
    o.params = search::ToCostParams(*profile);
  } else if (profile.status().code() == absl::StatusCode::kNotFound && !flags.profile_given) {
    o.params = BuiltinCostParams();
    if (warning != nullptr && !(flags.alpha && flags.beta && flags.gamma)) {
      *warning = absl::StrCat("no hardware profile \"", flags.profile,
                              "\": using built-in machine numbers; run `meshtune calibrate --ranks P` for this machine's");
    }
  } else {
    return profile.status();
  }
  if (flags.alpha) o.params.alpha = o.params.alpha_coll = *flags.alpha;
  if (flags.beta) o.params.beta = o.params.beta_coll = *flags.beta;
  if (flags.gamma) o.params.gamma = *flags.gamma;
  o.top_k = flags.model_only ? 0 : flags.top_k;
  o.budget_s = flags.budget_s;
  o.max_evaluations = flags.max_evaluations;
  o.evolution.seed = flags.seed;
  o.space.allow_replication = flags.allow_replication;
  return o;
}

std::string TuneResultJson(const search::TuneResult& r) {
  std::vector<std::string> pruned, runs;
  for (const auto& [reason, n] : r.counts.pruned) pruned.push_back(absl::StrCat(JsonQuote(reason), ": ", n));
  for (const search::Measurement& m : r.measurements) {
    runs.push_back(absl::StrCat("{\"trace\": ", JsonQuote(m.candidate.trace), ", \"mesh\": ", JsonQuote(m.mesh),
                                ", \"predicted_s\": ", Num(m.candidate.cost.seconds),
                                ", \"measured_s\": ", NumOrNull(m.run.seconds), ", \"verified\": ", Bool(m.run.verified),
                                ", \"error\": ", m.run.error ? JsonQuote(*m.run.error) : "null", "}"));
  }
  return absl::StrCat(
      "{\"best\": {\"trace\": ", JsonQuote(r.best.trace), ", \"mesh\": ", JsonQuote(r.mesh),
      ", \"predicted_s\": ", Num(r.best.cost.seconds), ", \"measured_s\": ", NumOrNull(r.measured_s),
      ", \"verified\": ", Bool(r.verified), ", \"patterns\": ", Strings(r.best.patterns),
      ", \"comm_words_per_rank\": ", r.best.cost.comm_words_per_rank,
      ", \"lower_bound_ratio\": ", NumOrNull(r.lower_bound_ratio), "}",
      ", \"enumerated\": ", r.counts.enumerated, ", \"legal\": ", r.counts.legal, ", \"pruned\": {",
      absl::StrJoin(pruned, ", "), "}, \"costed\": ", r.counts.costed, ", \"duplicates\": ", r.counts.duplicates,
      ", \"measured\": ", r.measurements.size(), ", \"measurements\": [", absl::StrJoin(runs, ", "),
      "], \"strategy\": ", JsonQuote(r.strategy), ", \"seconds\": ", Num(r.seconds), "}");
}

int RunTune(const TuneFlags& flags, std::ostream& out, std::ostream& err) {
  std::string warning;
  absl::StatusOr<search::TuneOptions> options = MakeTuneOptions(flags, &warning);
  if (!options.ok()) {
    err << "meshtune: " << options.status().message() << "\n";
    const absl::StatusCode code = options.status().code();
    return code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kNotFound ? kExitBadInput
                                                                                             : kExitFailed;
  }
  if (!warning.empty()) err << "meshtune: " << warning << "\n";
  std::unique_ptr<search::Runner> runner;
  if (flags.model_only || flags.top_k == 0) {
    runner = search::NewModelOnlyRunner();
  } else {
    search::MpiRunnerOptions mpi;
    mpi.reps = flags.reps;
    mpi.warmup = flags.warmup;
    mpi.launch.worker = flags.worker;
    mpi.launch.hostfile = flags.hostfile;
    mpi.launch.extra_args = flags.launcher_args;
    if (!flags.launcher.empty()) mpi.launch.launcher = {flags.launcher};
    runner = search::NewMpiRunner(mpi);
  }
  std::vector<search::TuneCallback*> callbacks;
  std::unique_ptr<ProgressLine> line;
  if (flags.progress) {
    line = std::make_unique<ProgressLine>(err);
    callbacks.push_back(line.get());
  }
  absl::StatusOr<search::TuneResult> result = search::Tune(*options, *runner, callbacks);
  line.reset();
  if (!result.ok()) {
    err << "meshtune: " << result.status().message() << "\n";
    return result.status().code() == absl::StatusCode::kInvalidArgument ? kExitBadInput : kExitFailed;
  }
  out << (flags.json ? TuneResultJson(*result) + "\n" : Summary(*result));
  if (runner->measures() && !result->verified) {
    err << "meshtune: no measured candidate verified; the result is the model's best (see measurements)\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace meshtune::service
