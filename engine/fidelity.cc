#include "engine/fidelity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "base/sample_stats.h"
#include "base/status_macros.h"
#include "codegen/program.h"
#include "cost/cost_model.h"
#include "cost/term_fit.h"
#include "engine/prepare.h"
#include "engine/rank_stats.h"
#include "engine/requests.h"
#include "engine/tune_messages.h"
#include "search/checker.h"
#include "search/explorer.h"
#include "search/strategy.h"
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

// The point of candidate `c` measured in `run`: verified as the run, its samples as
// measured (round_s, sample), its time `s` of them; the run's error otherwise.
v1::MeasuredCandidate ToPoint(const search::Candidate& c, const ir::Mesh& mesh,
                              const search::CandidateRun& run, RoundStatistic s) {
  v1::MeasuredCandidate p;
  p.mutable_trace()->set_text(c.trace);
  p.set_mesh(mesh.ToString());
  SetMeshDims(mesh, p.mutable_mesh_dims());
  p.set_predicted_s(c.cost.seconds);
  p.set_verified(run.verified);
  if (!run.verified) p.set_error(run.error.value_or("not verified"));
  for (double x : run.samples) p.add_round_s(x);
  if (!run.samples.empty()) *p.mutable_sample() = SampleMessage(run);
  if (run.verified && !run.samples.empty()) {
    p.set_measured_s(Statistic(s, run.samples));
  } else if (run.verified && run.seconds.has_value()) {
    p.set_measured_s(*run.seconds);
  }
  for (const std::string& label : c.patterns) p.add_patterns(label);
  p.set_family(search::FamilyOf(c, mesh));
  return p;
}

// Whether `p` counts in the statistics: verified, with a positive time.
bool Counts(const v1::MeasuredCandidate& p) {
  return p.verified() && p.has_measured_s() && p.measured_s() > 0;
}

// FidelityResult::round_spearman_rho of `result`; NaN when it is absent.
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
        x.push_back(p->round_s(a));
        y.push_back(p->round_s(b));
      }
      const double rho = SpearmanRho(x, y);
      if (!std::isnan(rho)) rhos.push_back(rho);
    }
  }
  return rhos.empty() ? std::nan("") : Median(rhos);
}

// The bootstrap of FidelityResult's intervals: resamples and their seed.
constexpr int kResamples = 1000;
constexpr uint64_t kBootstrapSeed = 1;

// The type-7 quantile q of `v` (not empty), sorted here.
double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// The bootstrap intervals of rho and tau of (`x`, `y`) set in `result` (those of a
// statistic no resample has are left unset): kResamples resamples of the pairs with
// replacement, each index drawn as rng() % n of std::mt19937_64 seeded with kBootstrapSeed
// (the same on every platform, unlike the standard distributions).
void SetBootstrapIntervals(const std::vector<double>& x, const std::vector<double>& y,
                           v1::FidelityResult* result) {
  if (x.size() < 2) return;
  std::mt19937_64 rng(kBootstrapSeed);
  std::vector<double> rhos, taus, rx(x.size()), ry(y.size());
  for (int r = 0; r < kResamples; ++r) {
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t at = static_cast<size_t>(rng() % x.size());
      rx[i] = x[at];
      ry[i] = y[at];
    }
    if (const double rho = SpearmanRho(rx, ry); !std::isnan(rho)) rhos.push_back(rho);
    if (const double tau = KendallTau(rx, ry); !std::isnan(tau)) taus.push_back(tau);
  }
  const double tail = (1 - base::kConfidence) / 2;
  if (result->has_spearman_rho() && !rhos.empty()) {
    result->set_spearman_rho_ci_low(Percentile(rhos, tail));
    result->set_spearman_rho_ci_high(Percentile(rhos, 1 - tail));
  }
  if (result->has_kendall_tau() && !taus.empty()) {
    result->set_kendall_tau_ci_low(Percentile(taus, tail));
    result->set_kendall_tau_ci_high(Percentile(taus, 1 - tail));
  }
}

// How the samples `a` and `b` of two points compare beyond the noise: -1 when a is the
// faster, 1 when b is, 0 when they do not separate (FidelityResult::separable_pairs: paired
// when they have as many samples, else unpaired with kSamplesFor95 each at least).
int Separation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() == b.size()) {
    const base::PairedComparison c = base::ComparePaired(a, b);
    if (!c.separated) return 0;
    return c.ratio.ci_high < 1 ? -1 : 1;
  }
  const base::SampleStats sa = base::Summarize(a), sb = base::Summarize(b);
  if (sa.n < base::kSamplesFor95 || sb.n < base::kSamplesFor95 ||
      !base::IntervalsSeparate(sa, sb)) {
    return 0;
  }
  return sa.ci_high < sb.ci_low ? -1 : 1;
}

// FidelityResult's separable_pairs, separable_agree and separable_share of `result`.
void SetSeparable(v1::FidelityResult* result) {
  std::vector<std::vector<double>> samples;
  std::vector<double> predicted;
  for (const v1::MeasuredCandidate& p : result->points()) {
    if (!Counts(p) || p.round_s_size() == 0) continue;
    samples.emplace_back(p.round_s().begin(), p.round_s().end());
    predicted.push_back(p.predicted_s());
  }
  int pairs = 0, agree = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    for (size_t j = i + 1; j < samples.size(); ++j) {
      const int faster = Separation(samples[i], samples[j]);
      if (faster == 0) continue;
      ++pairs;
      if ((faster < 0 && predicted[i] < predicted[j]) ||
          (faster > 0 && predicted[j] < predicted[i])) {
        ++agree;
      }
    }
  }
  result->set_separable_pairs(pairs);
  result->set_separable_agree(agree);
  result->clear_separable_share();
  if (pairs > 0) result->set_separable_share(static_cast<double>(agree) / pairs);
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
  for (v1::MeasuredCandidate& p : *result->mutable_points()) {
    if (!p.verified() || p.round_s_size() == 0) continue;
    p.set_measured_s(Statistic(s, std::vector<double>(p.round_s().begin(), p.round_s().end())));
  }
  result->set_round_statistic(RoundStatisticName(s));
  Summarize(result);
}

void Summarize(v1::FidelityResult* result) {
  std::vector<double> predicted, measured, errors;
  std::map<std::string, std::vector<double>> by_kind;
  for (const v1::MeasuredCandidate& p : result->points()) {
    if (!Counts(p)) continue;
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
  result->clear_spearman_rho_ci_low();
  result->clear_spearman_rho_ci_high();
  result->clear_kendall_tau_ci_low();
  result->clear_kendall_tau_ci_high();
  result->clear_median_relative_error();
  result->clear_patterns();
  const double rho = SpearmanRho(predicted, measured), tau = KendallTau(predicted, measured);
  if (!std::isnan(rho)) result->set_spearman_rho(rho);
  if (!std::isnan(tau)) result->set_kendall_tau(tau);
  SetBootstrapIntervals(predicted, measured, result);
  SetSeparable(result);
  if (!errors.empty()) result->set_median_relative_error(Median(errors));
  for (const auto& [kind, e] : by_kind) {
    v1::PatternError* pe = result->add_patterns();
    pe->set_pattern(kind);
    pe->set_candidates(static_cast<int>(e.size()));
    pe->set_median_relative_error(Median(e));
  }
}

absl::StatusOr<v1::FidelityResult> RunFidelity(const ir::Problem& problem, const ir::Mesh& mesh,
                                               const cost::CostParams& params,
                                               const FidelityOptions& options,
                                               search::Runner& runner) {
  if (options.count < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a fidelity run needs at least 2 candidates to compare (got ", options.count, ")"));
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
  // Each candidate through the pipeline once; those it refuses are not run.
  std::vector<absl::StatusOr<search::Runnable>> runnable;
  std::vector<search::MeasureInput> inputs(spread.size());
  std::vector<search::MeasureItem> items;
  std::vector<int> item_of;  // per candidate, its item (-1: refused)
  for (size_t i = 0; i < spread.size(); ++i) {
    runnable.push_back(search::PrepareCandidate(problem, mesh, ranked[spread[i]]->schedule));
  }
  for (size_t i = 0; i < spread.size(); ++i) {
    item_of.push_back(runnable[i].ok() ? static_cast<int>(items.size()) : -1);
    if (!runnable[i].ok()) continue;
    search::MeasureInput& in = inputs[i];
    in.problem = &problem;
    in.mesh = &mesh;
    in.trace = &ranked[spread[i]]->schedule;
    in.program = &runnable[i]->program;
    in.footprint = runnable[i]->footprint;
    in.timeout_s = options.timeout_s;
    in.cancelled = options.cancelled;
    items.push_back({&in, nullptr, nullptr});
  }
  const std::vector<search::CandidateRun> runs =
      items.empty() ? std::vector<search::CandidateRun>{}
                    : runner.RunSideBySide(items, kRoundsShareOfTimeout * options.timeout_s);
  if (options.cancelled && options.cancelled())
    return absl::CancelledError("the fidelity run was cancelled");
  for (size_t i = 0; i < spread.size(); ++i) {
    const bool ran = item_of[i] >= 0 && static_cast<size_t>(item_of[i]) < runs.size();
    search::CandidateRun not_run;
    not_run.error = runnable[i].ok() ? "not run: the runner returned no run of it"
                                     : absl::StrCat("not run: ", runnable[i].status().message());
    const search::CandidateRun& run = ran ? runs[static_cast<size_t>(item_of[i])] : not_run;
    *result.add_points() = ToPoint(*ranked[spread[i]], mesh, run, options.round_statistic);
    result.add_ranks(static_cast<int64_t>(spread[i]) + 1);
    if (options.on_measured) options.on_measured(result.points(static_cast<int>(i)), spread[i] + 1);
  }
  result.set_round_statistic(RoundStatisticName(options.round_statistic));
  Summarize(&result);
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
                          const cost::CostParams& params) {
  const cost::CostParams here = cost::ForRanks(params, lowered.ranks);
  v1::FidelityResult out = measured;
  for (int i = 0; i < out.points_size(); ++i) {
    out.mutable_points(i)->set_predicted_s(
        cost::EstimateCost(lowered.programs[static_cast<size_t>(i)], here).seconds);
  }
  Summarize(&out);
  return out;
}

}  // namespace

absl::StatusOr<v1::FidelityResult> RecostFidelity(const v1::FidelityResult& measured,
                                                  const cost::CostParams& params) {
  MT_ASSIGN_OR_RETURN(const LoweredRun lowered, LowerPoints(measured));
  return Recost(measured, lowered, params);
}

absl::StatusOr<RunFit> FitToRuns(const std::vector<v1::FidelityResult>& runs,
                                 const cost::CostParams& params) {
  cost::CostParams plain = params;
  plain.scales = cost::TermScales{};
  std::vector<cost::TermSample> samples;
  std::vector<LoweredRun> lowered;  // each run's points lowered once, costed three times
  RunFit fit;
  for (const v1::FidelityResult& run : runs) {
    MT_ASSIGN_OR_RETURN(LoweredRun l, LowerPoints(run));
    const cost::CostParams here = cost::ForRanks(plain, l.ranks);
    for (int i = 0; i < run.points_size(); ++i) {
      const v1::MeasuredCandidate& p = run.points(i);
      if (!p.verified() || !p.has_measured_s() || !(p.measured_s() > 0)) continue;
      const cost::CostReport r = cost::EstimateCost(l.programs[static_cast<size_t>(i)], here);
      double messages = 0;
      for (const cost::TransferCost& t : r.transfers) messages += static_cast<double>(t.messages);
      samples.push_back({r.compute_seconds, r.point_to_point_seconds, r.collective_seconds,
                         r.reduction_seconds, r.overlap_seconds, p.measured_s(), messages});
    }
    fit.before.push_back(Recost(run, l, params));
    lowered.push_back(std::move(l));
  }
  MT_ASSIGN_OR_RETURN(fit.scales, cost::FitTermScales(samples));
  fit.schedules = static_cast<int>(samples.size());
  cost::CostParams scaled = plain;
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
