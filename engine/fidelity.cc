#include "engine/fidelity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "codegen/program.h"
#include "engine/explain.h"
#include "engine/rank_stats.h"
#include "engine/requests.h"
#include "search/checker.h"
#include "search/cost_model.h"
#include "search/explorer.h"
#include "search/strategy.h"
#include "search/term_fit.h"
#include "search/tuner.h"

namespace meshtune::engine {

namespace {

// The pattern kind of a transfer label "A@ko Broadcast(axes=[1])": "Broadcast".
std::string KindOf(const std::string& label) {
  const size_t space = label.find(' ');
  const std::string rest = space == std::string::npos ? label : label.substr(space + 1);
  return rest.substr(0, rest.find('('));
}

// The indices of `n` candidates spread evenly over a ranking of `size` (best, ..., worst);
// all of them when n >= size.
std::vector<size_t> Spread(size_t size, size_t n) {
  std::vector<size_t> out;
  if (n >= size) {
    for (size_t i = 0; i < size; ++i) out.push_back(i);
    return out;
  }
  for (size_t i = 0; i < n; ++i) out.push_back(i * (size - 1) / (n - 1));
  return out;
}

// `s` of `seconds` (not empty).
double Statistic(RoundStatistic s, const std::vector<double>& seconds) {
  return s == RoundStatistic::kMin ? *std::min_element(seconds.begin(), seconds.end())
                                   : Median(seconds);
}

// The point of candidate `c` measured in `runs` (one a round): verified when every round
// verified, its time `s` of theirs, the first failure's error otherwise.
v1::MeasuredCandidate ToPoint(const search::Candidate& c, const ir::Mesh& mesh,
                              const std::vector<search::CandidateRun>& runs, RoundStatistic s) {
  v1::MeasuredCandidate p;
  p.mutable_trace()->set_text(c.trace);
  p.set_mesh(mesh.ToString());
  SetMeshDims(mesh, p.mutable_mesh_dims());
  p.set_predicted_s(c.cost.seconds);
  std::vector<double> seconds;
  p.set_verified(true);
  const bool paced = std::all_of(runs.begin(), runs.end(), [](const search::CandidateRun& r) {
    return !r.seconds.has_value() || r.pace_s.has_value();
  });
  for (const search::CandidateRun& run : runs) {
    if (run.seconds.has_value()) {
      seconds.push_back(*run.seconds);
      p.add_round_s(*run.seconds);
      if (paced) p.add_round_pace_s(*run.pace_s);
    }
    if (!run.verified && p.verified()) {
      p.set_verified(false);
      p.set_error(run.error.value_or("not verified"));
    }
  }
  if (!seconds.empty()) p.set_measured_s(Statistic(s, seconds));
  for (const std::string& label : c.patterns) p.add_patterns(label);
  p.set_family(search::FamilyOf(c, mesh));
  return p;
}

// The median of every verified point's round paces: the pace a run's rounds are read at;
// 0 when a verified point's rounds lack them.
double CommonPace(const v1::FidelityResult& result) {
  std::vector<double> paces;
  for (const v1::MeasuredCandidate& p : result.points()) {
    if (!p.verified() || p.round_s_size() == 0) continue;
    if (p.round_pace_s_size() != p.round_s_size()) return 0;
    for (double pace : p.round_pace_s()) {
      if (!(pace > 0)) return 0;
      paces.push_back(pace);
    }
  }
  return paces.empty() ? 0 : Median(paces);
}

// The rounds of `p` read at `pace` (as measured when it is 0).
std::vector<double> RoundTimes(const v1::MeasuredCandidate& p, double pace) {
  std::vector<double> out(p.round_s().begin(), p.round_s().end());
  if (pace > 0 && p.round_pace_s_size() == p.round_s_size()) {
    for (size_t i = 0; i < out.size(); ++i) out[i] *= pace / p.round_pace_s(static_cast<int>(i));
  }
  return out;
}

// FidelityResult::round_spearman_rho of `result` (its rounds read at its pace); NaN when it
// is absent.
double RoundRho(const v1::FidelityResult& result) {
  std::vector<const v1::MeasuredCandidate*> points;
  int rounds = 0;
  for (const v1::MeasuredCandidate& p : result.points()) {
    if (!p.verified() || p.round_s_size() == 0) continue;
    rounds = rounds == 0 ? p.round_s_size() : std::min(rounds, p.round_s_size());
    points.push_back(&p);
  }
  std::vector<double> rhos;
  for (int a = 0; a < rounds; ++a) {
    for (int b = a + 1; b < rounds; ++b) {
      std::vector<double> x, y;
      for (const v1::MeasuredCandidate* p : points) {
        const std::vector<double> times = RoundTimes(*p, result.pace_s());
        x.push_back(times[static_cast<size_t>(a)]);
        y.push_back(times[static_cast<size_t>(b)]);
      }
      const double rho = SpearmanRho(x, y);
      if (!std::isnan(rho)) rhos.push_back(rho);
    }
  }
  return rhos.empty() ? std::nan("") : Median(rhos);
}

}  // namespace

const char* RoundStatisticName(RoundStatistic s) {
  return s == RoundStatistic::kMin ? "min" : "median";
}

std::optional<RoundStatistic> RoundStatisticNamed(const std::string& name) {
  for (RoundStatistic s : {RoundStatistic::kMin, RoundStatistic::kMedian}) {
    if (name == RoundStatisticName(s)) return s;
  }
  return std::nullopt;
}

void ApplyRoundStatistic(RoundStatistic s, v1::FidelityResult* result) {
  result->set_pace_s(CommonPace(*result));
  std::vector<double> predicted, raw;
  for (v1::MeasuredCandidate& p : *result->mutable_points()) {
    if (p.round_s_size() == 0) continue;
    p.set_measured_s(Statistic(s, RoundTimes(p, result->pace_s())));
    if (p.verified() && p.measured_s() > 0) {
      predicted.push_back(p.predicted_s());
      raw.push_back(Statistic(s, RoundTimes(p, 0)));
    }
  }
  result->set_round_statistic(RoundStatisticName(s));
  result->clear_raw_spearman_rho();
  if (const double rho = SpearmanRho(predicted, raw); !std::isnan(rho))
    result->set_raw_spearman_rho(rho);
  Summarize(result);
}

void Summarize(v1::FidelityResult* result) {
  std::vector<double> predicted, measured, errors;
  std::map<std::string, std::vector<double>> by_kind;
  for (const v1::MeasuredCandidate& p : result->points()) {
    if (!p.verified() || !p.has_measured_s() || !(p.measured_s() > 0)) continue;
    predicted.push_back(p.predicted_s());
    measured.push_back(p.measured_s());
    const double signed_error = (p.measured_s() - p.predicted_s()) / p.measured_s();
    errors.push_back(std::fabs(signed_error));
    std::set<std::string> kinds;
    for (const std::string& label : p.patterns()) kinds.insert(KindOf(label));
    if (kinds.empty()) kinds.insert("none");
    for (const std::string& kind : kinds) by_kind[kind].push_back(signed_error);
  }
  result->set_verified(static_cast<int>(predicted.size()));
  result->clear_round_spearman_rho();
  if (const double r = RoundRho(*result); !std::isnan(r)) result->set_round_spearman_rho(r);
  result->clear_spearman_rho();
  result->clear_kendall_tau();
  result->clear_median_relative_error();
  result->clear_patterns();
  const double rho = SpearmanRho(predicted, measured), tau = KendallTau(predicted, measured);
  if (!std::isnan(rho)) result->set_spearman_rho(rho);
  if (!std::isnan(tau)) result->set_kendall_tau(tau);
  if (!errors.empty()) result->set_median_relative_error(Median(errors));
  for (const auto& [kind, e] : by_kind) {
    v1::PatternError* pe = result->add_patterns();
    pe->set_pattern(kind);
    pe->set_candidates(static_cast<int>(e.size()));
    pe->set_median_relative_error(Median(e));
  }
}

absl::StatusOr<v1::FidelityResult> RunFidelity(const ir::Problem& problem, const ir::Mesh& mesh,
                                               const search::CostParams& params,
                                               const FidelityOptions& options,
                                               search::Runner& runner) {
  if (options.count < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a fidelity run needs at least 2 candidates to compare (got ", options.count, ")"));
  }
  if (options.rounds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a fidelity run needs at least 1 round (got ", options.rounds, ")"));
  }
  absl::StatusOr<std::unique_ptr<search::Explorer>> explorer =
      search::Explorer::Create(problem, {mesh}, options.space, params, options.cancelled);
  if (!explorer.ok()) return explorer.status();
  search::SearchBudget budget;
  budget.max_evaluations = options.max_evaluations;
  budget.cancelled = options.cancelled;
  search::NewDefaultStrategy(**explorer, search::TuneOptions{}.max_exhaustive, {})
      ->Search(**explorer, budget);
  if (options.cancelled && options.cancelled())
    return absl::CancelledError("the fidelity run was cancelled");
  const std::vector<const search::Candidate*> ranked =
      (*explorer)->Best((*explorer)->candidates().size());
  if (ranked.size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model ranked ", ranked.size(), " schedule", ranked.size() == 1 ? "" : "s", " of ",
        problem.ToString(), " on ", mesh.ToString(), "; a fidelity run compares at least 2"));
  }
  v1::FidelityResult result;
  result.set_problem(absl::StrCat(problem.ToString(), " with ", problem.ExtentsString()));
  result.set_mesh(mesh.ToString());
  result.set_costed(static_cast<int64_t>(ranked.size()));
  const std::vector<size_t> spread = Spread(ranked.size(), static_cast<size_t>(options.count));
  std::vector<std::vector<search::CandidateRun>> runs(spread.size());
  // Each candidate through the pipeline once: what every round runs.
  std::vector<absl::StatusOr<search::Runnable>> runnable;
  for (const size_t i : spread) {
    runnable.push_back(search::PrepareCandidate(problem, mesh, ranked[i]->schedule));
  }
  for (int round = 0; round < options.rounds; ++round) {
    for (size_t j = 0; j < spread.size(); ++j) {
      const size_t i = round % 2 == 0 ? j : spread.size() - 1 - j;
      if (options.cancelled && options.cancelled())
        return absl::CancelledError("the fidelity run was cancelled");
      search::MeasureInput in;
      in.problem = &problem;
      in.mesh = &mesh;
      in.trace = &ranked[spread[i]]->schedule;
      in.timeout_s = options.timeout_s;
      if (runnable[i].ok()) {
        in.program = &runnable[i]->program;
        in.footprint = runnable[i]->footprint;
        runs[i].push_back(runner.Run(in));
      } else {
        search::CandidateRun refused;
        refused.error = absl::StrCat("not run: ", runnable[i].status().message());
        runs[i].push_back(std::move(refused));
      }
      if (options.on_measured && round + 1 == options.rounds)
        options.on_measured(ToPoint(*ranked[spread[i]], mesh, runs[i], options.round_statistic),
                            spread[i] + 1);
    }
  }
  for (size_t i = 0; i < spread.size(); ++i) {
    *result.add_points() = ToPoint(*ranked[spread[i]], mesh, runs[i], options.round_statistic);
    result.add_ranks(static_cast<int64_t>(spread[i]) + 1);
  }
  ApplyRoundStatistic(options.round_statistic, &result);
  return result;
}

namespace {

// A fidelity run's points lowered again (in order), and its mesh's rank count.
struct LoweredRun {
  std::vector<codegen::Program> programs;
  int64_t ranks = 0;
};

// Every point's trace of `measured` lowered again on its problem and mesh. Errors as
// RecostFidelity's.
absl::StatusOr<LoweredRun> LowerPoints(const v1::FidelityResult& measured) {
  const std::string& text = measured.problem();
  const size_t with = text.rfind(" with ");
  if (with == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fidelity result's problem \"", base::Excerpt(text), "\" is not \"EXPR with EXTENTS\""));
  }
  v1::Problem problem;
  problem.set_expr(text.substr(0, with));
  problem.set_extents(text.substr(with + 6));
  v1::Mesh mesh;
  mesh.set_axes(measured.mesh());
  MT_ASSIGN_OR_RETURN(const ir::Mesh parsed, MeshAxesOf(mesh));
  LoweredRun out;
  out.ranks = parsed.Ranks();
  for (const v1::MeasuredCandidate& p : measured.points()) {
    absl::StatusOr<codegen::Program> program = LowerTrace(problem, mesh, p.trace());
    if (!program.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot lower a point's trace again: ", program.status().message()));
    }
    out.programs.push_back(*std::move(program));
  }
  return out;
}

// `measured` with each point's prediction the cost of its program in `lowered` under
// `params`, and its statistics recomputed.
v1::FidelityResult Recost(const v1::FidelityResult& measured, const LoweredRun& lowered,
                          const search::CostParams& params) {
  const search::CostParams here = search::ForRanks(params, lowered.ranks);
  v1::FidelityResult out = measured;
  for (int i = 0; i < out.points_size(); ++i) {
    out.mutable_points(i)->set_predicted_s(
        search::EstimateCost(lowered.programs[static_cast<size_t>(i)], here).seconds);
  }
  Summarize(&out);
  return out;
}

}  // namespace

absl::StatusOr<v1::FidelityResult> RecostFidelity(const v1::FidelityResult& measured,
                                                  const search::CostParams& params) {
  MT_ASSIGN_OR_RETURN(const LoweredRun lowered, LowerPoints(measured));
  return Recost(measured, lowered, params);
}

absl::StatusOr<RunFit> FitToRuns(const std::vector<v1::FidelityResult>& runs,
                                 const search::CostParams& params) {
  search::CostParams plain = params;
  plain.scales = search::TermScales{};
  std::vector<search::TermSample> samples;
  std::vector<LoweredRun> lowered;  // each run's points lowered once, costed three times
  RunFit fit;
  for (const v1::FidelityResult& run : runs) {
    MT_ASSIGN_OR_RETURN(LoweredRun l, LowerPoints(run));
    const search::CostParams here = search::ForRanks(plain, l.ranks);
    for (int i = 0; i < run.points_size(); ++i) {
      const v1::MeasuredCandidate& p = run.points(i);
      if (!p.verified() || !p.has_measured_s() || !(p.measured_s() > 0)) continue;
      const search::CostReport r = search::EstimateCost(l.programs[static_cast<size_t>(i)], here);
      double messages = 0;
      for (const search::TransferCost& t : r.transfers) messages += static_cast<double>(t.messages);
      samples.push_back({r.compute_seconds, r.point_to_point_seconds, r.collective_seconds,
                         r.reduction_seconds, r.overlap_seconds, p.measured_s(), messages});
    }
    fit.before.push_back(Recost(run, l, params));
    lowered.push_back(std::move(l));
  }
  MT_ASSIGN_OR_RETURN(fit.scales, search::FitTermScales(samples));
  fit.schedules = static_cast<int>(samples.size());
  search::CostParams scaled = plain;
  scaled.scales = fit.scales;
  for (size_t r = 0; r < runs.size(); ++r) fit.after.push_back(Recost(runs[r], lowered[r], scaled));
  return fit;
}

std::vector<ScatterPoint> FidelityScatter(const v1::FidelityResult& result) {
  std::vector<ScatterPoint> out;
  for (int i = 0; i < result.points_size(); ++i) {
    const v1::MeasuredCandidate& p = result.points(i);
    if (!p.verified() || !p.has_measured_s()) continue;
    const std::string& family = p.family();
    const size_t colon = family.find(": ");
    out.push_back(
        {p.predicted_s(), p.measured_s(),
         absl::StrCat("#", i < result.ranks_size() ? result.ranks(i) : 0, " ", family,
                      "\npredicted ", p.predicted_s(), " s, measured ", p.measured_s(), " s"),
         colon == std::string::npos ? family : family.substr(colon + 2)});
  }
  return out;
}

}  // namespace meshtune::engine
