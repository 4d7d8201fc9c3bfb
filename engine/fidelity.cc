#include "engine/fidelity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/sample_stats.h"
#include "base/status_macros.h"
#include "codegen/program.h"
#include "cost/cost_model.h"
#include "cost/term_fit.h"
#include "engine/job.h"
#include "engine/prepare.h"
#include "engine/rank_stats.h"
#include "engine/requests.h"
#include "engine/tune/tune_messages.h"
#include "ir/program_trace.h"
#include "search/checker.h"
#include "search/explorer.h"
#include "search/program_candidate.h"
#include "search/program_layouts.h"
#include "search/program_search.h"
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

// `p` measured in `run`: verified as the run, its samples as measured (round_s, sample),
// its time `s` of them; the run's error otherwise.
void SetRun(const search::CandidateRun& run, RoundStatistic s, v1::MeasuredCandidate* p) {
  p->set_verified(run.verified);
  if (!run.verified) p->set_error(run.error.value_or("not verified"));
  for (double x : run.samples) p->add_round_s(x);
  if (!run.samples.empty()) *p->mutable_sample() = SampleMessage(run);
  if (run.verified && !run.samples.empty()) {
    p->set_measured_s(Statistic(s, run.samples));
  } else if (run.verified && run.seconds.has_value()) {
    p->set_measured_s(*run.seconds);
  }
}

// The point of candidate `c` measured in `run` (SetRun).
v1::MeasuredCandidate ToPoint(const search::Candidate& c, const ir::Mesh& mesh,
                              const search::CandidateRun& run, RoundStatistic s) {
  v1::MeasuredCandidate p;
  p.mutable_trace()->set_text(c.trace);
  p.set_mesh(mesh.ToString());
  SetMeshDims(mesh, p.mutable_mesh_dims());
  p.set_predicted_s(c.cost.seconds);
  SetRun(run, s, &p);
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

namespace {

// The least number of programs the model ranks for a fidelity run of a program (the
// model-only tune's top_k: at least 4 times the count).
constexpr int kProgramsRanked = 64;

absl::Status FidelityCancelled() { return absl::CancelledError("the fidelity run was cancelled"); }

bool IsCancelled(const FidelityOptions& options) {
  return options.cancelled && options.cancelled();
}

// One run per candidate of a spread: those of `items` measured side by side in one
// runner.RunSideBySide call; item_of[i] is candidate i's item, or -1 when the pipeline
// refused it (refused[i] says why). Cancelled when options.cancelled says so.
absl::StatusOr<std::vector<search::CandidateRun>> MeasureSpread(
    search::Runner& runner, const std::vector<search::MeasureItem>& items,
    const std::vector<int>& item_of, const std::vector<std::string>& refused,
    const FidelityOptions& options) {
  const std::vector<search::CandidateRun> runs =
      items.empty() ? std::vector<search::CandidateRun>{}
                    : runner.RunSideBySide(items, kRoundsShareOfTimeout * options.timeout_s);
  if (IsCancelled(options)) return FidelityCancelled();
  std::vector<search::CandidateRun> out;
  for (size_t i = 0; i < item_of.size(); ++i) {
    if (item_of[i] >= 0 && static_cast<size_t>(item_of[i]) < runs.size()) {
      out.push_back(runs[static_cast<size_t>(item_of[i])]);
      continue;
    }
    search::CandidateRun not_run;
    not_run.error = item_of[i] >= 0 ? "not run: the runner returned no run of it"
                                    : absl::StrCat("not run: ", refused[i]);
    out.push_back(std::move(not_run));
  }
  return out;
}

// `result` with `points` (the candidates at spread[i] of the ranking, in the model's order)
// and their ranks, each told to options.on_measured, and its statistics.
void AddPoints(std::vector<v1::MeasuredCandidate> points, const std::vector<size_t>& spread,
               const FidelityOptions& options, v1::FidelityResult* result) {
  for (size_t i = 0; i < points.size(); ++i) {
    *result->add_points() = std::move(points[i]);
    result->add_ranks(static_cast<int64_t>(spread[i]) + 1);
    if (options.on_measured)
      options.on_measured(result->points(static_cast<int>(i)), spread[i] + 1);
  }
  result->set_round_statistic(RoundStatisticName(options.round_statistic));
  Summarize(result);
}

// RunFidelity of one statement: the explorer's ranking of its schedules.
absl::StatusOr<v1::FidelityResult> RunStatementFidelity(const ir::Problem& problem,
                                                        const ir::Mesh& mesh,
                                                        const cost::CostParams& params,
                                                        const FidelityOptions& options,
                                                        search::Runner& runner) {
  absl::StatusOr<std::unique_ptr<search::Explorer>> explorer =
      search::Explorer::Create(problem, {mesh}, options.space, params, options.cancelled);
  if (!explorer.ok()) return explorer.status();
  search::SearchBudget budget;
  budget.max_evaluations = options.max_evaluations;
  budget.cancelled = options.cancelled;
  search::NewDefaultStrategy(**explorer, search::TuneOptions{}.max_exhaustive, {})
      ->Search(**explorer, budget);
  if (IsCancelled(options)) return FidelityCancelled();
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
  std::vector<std::string> refused(spread.size());
  for (size_t i = 0; i < spread.size(); ++i) {
    runnable.push_back(search::PrepareCandidate(problem, mesh, ranked[spread[i]]->schedule));
  }
  for (size_t i = 0; i < spread.size(); ++i) {
    item_of.push_back(runnable[i].ok() ? static_cast<int>(items.size()) : -1);
    if (!runnable[i].ok()) {
      refused[i] = std::string(runnable[i].status().message());
      continue;
    }
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
  MT_ASSIGN_OR_RETURN(const std::vector<search::CandidateRun> runs,
                      MeasureSpread(runner, items, item_of, refused, options));
  std::vector<v1::MeasuredCandidate> points;
  for (size_t i = 0; i < spread.size(); ++i)
    points.push_back(ToPoint(*ranked[spread[i]], mesh, runs[i], options.round_statistic));
  AddPoints(std::move(points), spread, options, &result);
  return result;
}

// Passes every statement unchecked: the model-only tune that ranks a fidelity run's programs
// chooses no winner worth simulating.
class UncheckedChecker : public search::Checker {
 public:
  search::CheckResult Check(const ir::Problem&, const ir::Mesh&, const ir::Trace&) override {
    search::CheckResult r;
    r.ok = true;
    r.how = "not checked";
    return r;
  }
};

// Whether programs `a` and `b` schedule every statement alike.
bool SameTraces(const search::ProgramCandidate& a, const search::ProgramCandidate& b) {
  if (a.statements.size() != b.statements.size()) return false;
  for (size_t s = 0; s < a.statements.size(); ++s) {
    if (a.statements[s].trace != b.statements[s].trace) return false;
  }
  return true;
}

// The model's ranking of whole programs of `program` on `mesh`, best first: the tuner run
// model-only (search::Tune of the program), its joint programs (its top_k best:
// kProgramsRanked, or 4 times the count), with "separate" (each statement's own best, then
// the moves) in its place among them when it is not one of them. Tune's errors; Cancelled
// when cancelled.
absl::StatusOr<std::vector<search::ProgramCandidate>> RankPrograms(
    const ir::StatementProgram& program, const ir::Mesh& mesh, const cost::CostParams& params,
    const FidelityOptions& options) {
  search::TuneOptions tune;
  tune.program = program;
  tune.meshes = {mesh};
  tune.space = options.space;
  tune.params = params;
  tune.max_evaluations = options.max_evaluations;
  tune.cancelled = options.cancelled;
  tune.top_k = std::max(kProgramsRanked, 4 * options.count);
  UncheckedChecker checker;
  tune.checker = &checker;
  tune.simulate_below = 0;  // each statement to the checker, not the whole program simulated
  const std::unique_ptr<search::Runner> model_only = search::NewModelOnlyRunner();
  absl::StatusOr<search::SearchResult> tuned = search::Tune(tune, *model_only);
  if (IsCancelled(options)) return FidelityCancelled();
  if (!tuned.ok()) return tuned.status();
  if (!tuned->program.has_value())
    return absl::InternalError("the tune of a program of several statements gave no programs");
  search::ProgramAnswer& answer = *tuned->program;
  std::vector<search::ProgramCandidate> ranked = std::move(answer.ranked);
  const bool among = std::any_of(
      ranked.begin(), ranked.end(),
      [&](const search::ProgramCandidate& c) { return SameTraces(c, answer.separate); });
  if (!among) {
    const auto at = std::upper_bound(
        ranked.begin(), ranked.end(), answer.separate.seconds,
        [](double seconds, const search::ProgramCandidate& c) { return seconds < c.seconds; });
    ranked.insert(at, answer.separate);
  }
  return ranked;
}

// Every statement of program `c` through the pipeline (search::PrepareCandidate), as one
// job's input; the first refusal's error after "statement N: " otherwise.
absl::StatusOr<search::ProgramMeasureInput> PrepareProgram(const ir::StatementProgram& program,
                                                           const ir::Mesh& mesh,
                                                           const search::ProgramCandidate& c,
                                                           const FidelityOptions& options) {
  MT_ASSIGN_OR_RETURN(search::ProgramMeasureInput in,
                      search::ProgramInputOf(program, mesh, c, search::PrepareCandidate));
  in.timeout_s = options.timeout_s;
  in.cancelled = options.cancelled;
  return in;
}

// The point of program `c` of `program` measured in `run` (SetRun): its program trace, its
// prediction (the statements' and the moves'), every statement's transfers, and as its
// family the mesh, each statement's family (search::FamilyOf) between " | " and the
// intermediates that move: "x=2: A Shift(x); B Shift(x) | no communication | moved: T".
v1::MeasuredCandidate ProgramPoint(const ir::StatementProgram& program,
                                   const search::ProgramCandidate& c, const ir::Mesh& mesh,
                                   const search::CandidateRun& run, RoundStatistic s) {
  v1::MeasuredCandidate p;
  const std::string prefix = absl::StrCat(mesh.ToString(), ": ");
  std::vector<std::string> traces, families, moved;
  for (const search::Candidate& statement : c.statements) {
    traces.push_back(statement.trace);
    for (const std::string& label : statement.patterns) p.add_patterns(label);
    const std::string family = search::FamilyOf(statement, mesh);
    families.push_back(absl::StartsWith(family, prefix) ? family.substr(prefix.size()) : family);
  }
  for (const search::Move& m : c.moves) {
    if (!m.in_place && std::find(moved.begin(), moved.end(), m.tensor) == moved.end())
      moved.push_back(m.tensor);
  }
  p.mutable_trace()->set_text(ir::ProgramTraceText(program, traces));
  p.set_mesh(mesh.ToString());
  SetMeshDims(mesh, p.mutable_mesh_dims());
  p.set_predicted_s(c.seconds);
  SetRun(run, s, &p);
  p.set_family(absl::StrCat(prefix, absl::StrJoin(families, " | "),
                            moved.empty() ? "" : " | moved: ", absl::StrJoin(moved, ", ")));
  return p;
}

// RunFidelity of a program of several statements: the model-only tune's ranking of whole
// programs, each measured as one job.
absl::StatusOr<v1::FidelityResult> RunProgramFidelity(const ir::StatementProgram& program,
                                                      const ir::Mesh& mesh,
                                                      const cost::CostParams& params,
                                                      const FidelityOptions& options,
                                                      search::Runner& runner) {
  MT_ASSIGN_OR_RETURN(const std::vector<search::ProgramCandidate> ranked,
                      RankPrograms(program, mesh, params, options));
  if (ranked.size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model ranked ", ranked.size(), " program", ranked.size() == 1 ? "" : "s", " of ",
        program.ToString(), " on ", mesh.ToString(), "; a fidelity run compares at least 2"));
  }
  v1::FidelityResult result;
  result.set_problem(absl::StrCat(program.ToString(), " with ", program.ExtentsString()));
  result.set_mesh(mesh.ToString());
  result.set_costed(static_cast<int64_t>(ranked.size()));
  const std::vector<size_t> spread = Spread(ranked.size(), static_cast<size_t>(options.count));
  std::vector<search::ProgramMeasureInput> inputs;  // kept while the items point into them
  inputs.reserve(spread.size());
  std::vector<search::MeasureItem> items;
  std::vector<int> item_of;  // per program, its item (-1: refused)
  std::vector<std::string> refused(spread.size());
  for (size_t i = 0; i < spread.size(); ++i) {
    absl::StatusOr<search::ProgramMeasureInput> in =
        PrepareProgram(program, mesh, ranked[spread[i]], options);
    item_of.push_back(in.ok() ? static_cast<int>(items.size()) : -1);
    if (!in.ok()) {
      refused[i] = std::string(in.status().message());
      continue;
    }
    inputs.push_back(*std::move(in));
    items.push_back({nullptr, nullptr, &inputs.back()});
  }
  MT_ASSIGN_OR_RETURN(const std::vector<search::CandidateRun> runs,
                      MeasureSpread(runner, items, item_of, refused, options));
  std::vector<v1::MeasuredCandidate> points;
  for (size_t i = 0; i < spread.size(); ++i) {
    points.push_back(
        ProgramPoint(program, ranked[spread[i]], mesh, runs[i], options.round_statistic));
  }
  AddPoints(std::move(points), spread, options, &result);
  return result;
}

}  // namespace

absl::StatusOr<v1::FidelityResult> RunFidelity(const ir::StatementProgram& program,
                                               const ir::Mesh& mesh, const cost::CostParams& params,
                                               const FidelityOptions& options,
                                               search::Runner& runner) {
  if (options.count < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a fidelity run needs at least 2 candidates to compare (got ", options.count, ")"));
  }
  if (program.statements.empty()) return absl::InvalidArgumentError("the program has no statement");
  if (program.single())
    return RunStatementFidelity(program.statements[0], mesh, params, options, runner);
  return RunProgramFidelity(program, mesh, params, options, runner);
}

namespace {

// A move between two statements of a program's point, lowered again: `tensor` (of `shape`,
// elements of `dtype_bytes`) from the boxes of the statement it lives in
// (StatementProgram::Home) to those statement `consumer` reads it in, by row-major rank.
struct LoweredMove {
  std::string tensor;
  int consumer = 0;
  std::vector<int64_t> shape;
  int dtype_bytes = 4;
  std::vector<runtime::Box> from, to;
};

// A point's trace lowered again: each statement's Program (one for a statement), and the
// moves between them by consumer (none for a statement).
struct LoweredPoint {
  std::vector<codegen::Program> statements;
  std::vector<LoweredMove> moves;
};

// A fidelity run's points lowered again (in order), and its mesh.
struct LoweredRun {
  std::vector<LoweredPoint> points;
  ir::Mesh mesh;
};

// The tensors statement `s` of `program` reads in the layout of an earlier statement (an
// intermediate, or an input an earlier statement read first), sorted: those the program
// tuner moves to it (search/program_search.h).
std::vector<std::string> ReadFromEarlier(const ir::StatementProgram& program, int s) {
  std::vector<std::string> out;
  for (const ir::TensorAccess& a : program.statements[static_cast<size_t>(s)].operands) {
    const int home = program.Home(a.tensor);
    if (home >= 0 && home < s && std::find(out.begin(), out.end(), a.tensor) == out.end())
      out.push_back(a.tensor);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Program trace `trace` of `program` lowered again on `mesh`: every statement through the
// pipeline (PrepareRun), and the boxes of each tensor a statement reads from an earlier
// one's layout, in both layouts (search::HeldBoxes).
absl::StatusOr<LoweredPoint> LowerProgramPoint(const ir::StatementProgram& program,
                                               const v1::Mesh& mesh, const v1::Trace& trace) {
  MT_ASSIGN_OR_RETURN(const ScheduleJob job, JobOf(program, mesh, trace));
  MT_ASSIGN_OR_RETURN(PreparedRun run, PrepareRun(job));
  LoweredPoint out;
  out.statements.push_back(std::move(run.spec.program));
  for (runtime::StatementJob& later : run.spec.later)
    out.statements.push_back(std::move(later.program));
  std::vector<ir::Computation> bases;
  for (int s = 0; s < static_cast<int>(program.statements.size()); ++s) {
    MT_ASSIGN_OR_RETURN(ir::Computation base, StatementBase(job, s));
    bases.push_back(std::move(base));
  }
  for (int s = 0; s < static_cast<int>(program.statements.size()); ++s) {
    for (const std::string& tensor : ReadFromEarlier(program, s)) {
      const int home = program.Home(tensor);
      LoweredMove m;
      m.tensor = tensor;
      m.consumer = s;
      m.shape = program.Shape(tensor);
      m.dtype_bytes = static_cast<int>(ir::DTypeBytes(program.dtype));
      MT_ASSIGN_OR_RETURN(m.from, search::HeldBoxes(bases[static_cast<size_t>(home)],
                                                    job.traces[static_cast<size_t>(home)], tensor));
      MT_ASSIGN_OR_RETURN(m.to, search::HeldBoxes(bases[static_cast<size_t>(s)],
                                                  job.traces[static_cast<size_t>(s)], tensor));
      out.moves.push_back(std::move(m));
    }
  }
  return out;
}

// Every point's trace of `measured` lowered again on its problem and mesh: a statement's
// with LowerTrace, a program's with LowerProgramPoint. Errors as RecostFidelity's.
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
  LoweredRun out;
  MT_ASSIGN_OR_RETURN(out.mesh, MeshAxesOf(mesh));
  // A statement's problem that does not parse fails each point as LowerTrace says.
  const absl::StatusOr<ir::StatementProgram> program = ProgramOf(problem);
  const bool several = program.ok() && !program->single();
  for (const v1::MeasuredCandidate& p : measured.points()) {
    absl::StatusOr<LoweredPoint> point;
    if (several) {
      point = LowerProgramPoint(*program, mesh, p.trace());
    } else if (absl::StatusOr<codegen::Program> lowered = LowerTrace(problem, mesh, p.trace());
               lowered.ok()) {
      point = LoweredPoint{};
      point->statements.push_back(*std::move(lowered));
    } else {
      point = lowered.status();
    }
    if (!point.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot lower a point's trace again: ", point.status().message()));
    }
    out.points.push_back(*std::move(point));
  }
  return out;
}

// What the model gives a lowered point under `params`: its seconds — its statements' and
// the moves before each, summed in the order a tune of the program sums them — and the terms
// cost::FitTermScales fits (its statements' critical ranks' terms summed; `measured` unset),
// with the moves' seconds apart (no term scale multiplies a move).
struct PointCost {
  double seconds = 0;
  double moves = 0;
  cost::TermSample terms;
};

// PointCost of `point` on `mesh` under `params`. InvalidArgument when a move between
// statements cannot be planned.
absl::StatusOr<PointCost> CostPoint(const LoweredPoint& point, const ir::Mesh& mesh,
                                    const cost::CostParams& params) {
  const cost::CostParams here = cost::ForRanks(params, mesh.Ranks());
  PointCost out;
  for (size_t s = 0; s < point.statements.size(); ++s) {
    const cost::CostReport r = cost::EstimateCost(point.statements[s], here);
    out.seconds += r.seconds;
    out.terms.compute += r.compute_seconds;
    out.terms.point_to_point += r.point_to_point_seconds;
    out.terms.collective += r.collective_seconds;
    out.terms.reduction += r.reduction_seconds;
    out.terms.overlap += r.overlap_seconds;
    for (const cost::TransferCost& t : r.transfers)
      out.terms.messages += static_cast<double>(t.messages);
    for (const LoweredMove& m : point.moves) {
      if (m.consumer != static_cast<int>(s)) continue;
      absl::StatusOr<search::MoveCost> c =
          search::CostMove(m.shape, m.dtype_bytes, mesh, m.from, m.to, params);
      if (!c.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("cannot cost the move of ", m.tensor,
                                                       " to statement ", s + 1,
                                                       " again: ", c.status().message()));
      }
      out.seconds += c->seconds;
      out.moves += c->seconds;
    }
  }
  return out;
}

// `measured` with each point's prediction the cost of its lowered point in `lowered` under
// `params`, and its statistics recomputed. CostPoint's errors.
absl::StatusOr<v1::FidelityResult> Recost(const v1::FidelityResult& measured,
                                          const LoweredRun& lowered,
                                          const cost::CostParams& params) {
  v1::FidelityResult out = measured;
  for (int i = 0; i < out.points_size(); ++i) {
    MT_ASSIGN_OR_RETURN(const PointCost c,
                        CostPoint(lowered.points[static_cast<size_t>(i)], lowered.mesh, params));
    out.mutable_points(i)->set_predicted_s(c.seconds);
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
    for (int i = 0; i < run.points_size(); ++i) {
      const v1::MeasuredCandidate& p = run.points(i);
      if (!p.verified() || !p.has_measured_s() || !(p.measured_s() > 0)) continue;
      MT_ASSIGN_OR_RETURN(const PointCost c,
                          CostPoint(l.points[static_cast<size_t>(i)], l.mesh, plain));
      // The statements' terms are fitted to what the moves leave of the measured time.
      cost::TermSample sample = c.terms;
      sample.measured = p.measured_s() - c.moves;
      if (!(sample.measured > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "point ", i + 1, " of the run of ", base::Excerpt(run.problem()), " measured ",
            p.measured_s(), " s, no more than the ", c.moves,
            " s the model gives its moves between statements: its statements' terms cannot be "
            "fitted to it"));
      }
      samples.push_back(sample);
    }
    MT_ASSIGN_OR_RETURN(v1::FidelityResult before, Recost(run, l, params));
    fit.before.push_back(std::move(before));
    lowered.push_back(std::move(l));
  }
  MT_ASSIGN_OR_RETURN(fit.scales, cost::FitTermScales(samples));
  fit.schedules = static_cast<int>(samples.size());
  cost::CostParams scaled = plain;
  scaled.scales = fit.scales;
  for (size_t r = 0; r < runs.size(); ++r) {
    MT_ASSIGN_OR_RETURN(v1::FidelityResult after, Recost(runs[r], lowered[r], scaled));
    fit.after.push_back(std::move(after));
  }
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
