#include "search/tuner.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/median.h"
#include "base/status_macros.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"
#include "search/decision.h"
#include "search/lower_bound.h"
#include "search/plausibility.h"
#include "search/program_search.h"
#include "search/schedule_class.h"
#include "search/statement_search.h"

namespace meshtune::search {

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What the stages of one Tune call share: its options, callbacks, start and progress.
struct TuneRun {
  const TuneOptions& options;
  const ir::Problem& problem;  // the one statement of options.program
  const std::vector<SearchCallback*>& callbacks;
  Clock::time_point start;
  SearchProgress progress;

  // Whether the caller has cancelled the tune.
  bool Cancelled() const { return options.cancelled && options.cancelled(); }
  // Tells every callback the tune is at `stage` (with `explorer`'s counts and best
  // prediction, when given).
  void Report(const std::string& stage, const Explorer* explorer) {
    progress.stage = stage;
    progress.elapsed_s = Since(start);
    if (explorer != nullptr) {
      progress.counts = explorer->counts();
      const std::vector<const Candidate*> best = explorer->Best(1);
      if (!best.empty()) progress.best_predicted_s = best[0]->cost.seconds;
    }
    for (SearchCallback* cb : callbacks) cb->OnProgress(progress);
  }
};

}  // namespace

absl::Status CheckTuneLimits(size_t meshes, int top_k, double budget_s) {
  if (meshes == 0) return absl::InvalidArgumentError("no mesh to tune for");
  if (top_k < 0) return absl::InvalidArgumentError(absl::StrCat("top-k must be >= 0, got ", top_k));
  if (!(budget_s > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the budget must be a positive number of seconds, got ", budget_s));
  }
  return absl::OkStatus();
}

namespace {

// InvalidArgument when `options` has no mesh, a negative top_k or a budget that is not a
// positive number of seconds.
absl::Status CheckOptions(const TuneOptions& options) {
  return CheckTuneLimits(options.meshes.size(), options.top_k, options.budget_s);
}

// Candidate `c` measured by `runner` within `left` seconds — or, when translation
// validation refuses its Program, not run: the refusal is the error and joins
// result->refused.
MeasuredCandidate Measure(TuneRun& run, Explorer& explorer, Runner& runner, Checker& checker,
                          const Candidate& c, double left, SearchResult* result) {
  const TuneOptions& options = run.options;
  MeasuredCandidate m;
  m.candidate = c;
  m.mesh = explorer.mesh(c.mesh);
  m.family = FamilyOf(c, explorer.mesh(c.mesh));
  // A Program translation validation refuses is not run, nor ever returned.
  const absl::StatusOr<Runnable> runnable =
      checker.Validate(run.problem, explorer.mesh(c.mesh), c.schedule);
  if (!runnable.ok()) {
    m.run.error = std::string(runnable.status().message());
    result->refused.push_back(absl::StrCat(c.trace, "\n  ", runnable.status().message()));
  } else {
    MeasureInput in;
    in.problem = &run.problem;
    in.mesh = &explorer.mesh(c.mesh);
    in.trace = &c.schedule;
    in.program = &runnable->program;
    in.footprint = runnable->footprint;
    in.timeout_s = left;
    in.cancelled = options.cancelled;
    m.run = runner.Run(in);
  }
  return m;
}

// The library's most promising configurations to measure: a problem of matmul form without
// given layouts, on a runner that measures libraries, unless the options leave it out.
std::vector<runtime::LibraryGemmConfig> LibraryConfigs(const TuneRun& run, Runner& runner) {
  const TuneOptions& o = run.options;
  if (!o.measure_library || !runner.measures_library() || !run.problem.layouts.empty()) return {};
  const std::optional<runtime::GemmForm> form =
      runtime::GemmFormOf(runtime::ProblemSpecOf(run.problem));
  if (!form) return {};
  int64_t ranks = 0;
  for (const ir::Mesh& m : o.meshes) ranks = std::max(ranks, m.Ranks());
  return runtime::LibraryGemmConfigs(*form, ranks);
}

// Measures the candidates the explorer picks for the top_k (in the model's order, into
// result->measurements) and the library's configurations (into result->library) side by
// side (Runner::RunSideBySide), within what is left of the budget; a candidate translation
// validation refuses is not run (its refusal is the error and joins result->refused).
void MeasureSideBySide(TuneRun& run, Explorer& explorer, Runner& runner, Checker& checker,
                       SearchResult* result) {
  const TuneOptions& options = run.options;
  const double left = options.budget_s - Since(run.start);
  if (left <= 1 || run.Cancelled()) return;
  const std::vector<const Candidate*> picks = explorer.ToMeasure(options.top_k);
  std::vector<runtime::LibraryGemmConfig> configs = LibraryConfigs(run, runner);
  if (picks.empty()) configs.clear();
  std::vector<Runnable> runnables;  // kept while the inputs point into them
  std::vector<MeasureInput> inputs;
  std::vector<LibraryInput> libraries;
  runnables.reserve(picks.size());
  inputs.reserve(picks.size());
  libraries.reserve(configs.size());
  std::vector<MeasureItem> items;
  std::vector<int> item_of;  // per measurement, its item (-1: refused, not run)
  for (const Candidate* c : picks) {
    MeasuredCandidate m;
    m.candidate = *c;
    m.mesh = explorer.mesh(c->mesh);
    m.family = FamilyOf(*c, m.mesh);
    absl::StatusOr<Runnable> runnable = checker.Validate(run.problem, m.mesh, c->schedule);
    if (!runnable.ok()) {
      m.run.error = std::string(runnable.status().message());
      result->refused.push_back(absl::StrCat(c->trace, "\n  ", runnable.status().message()));
      item_of.push_back(-1);
    } else {
      runnables.push_back(*std::move(runnable));
      MeasureInput in;
      in.problem = &run.problem;
      in.mesh = &explorer.mesh(c->mesh);
      in.trace = &c->schedule;
      in.program = &runnables.back().program;
      in.footprint = runnables.back().footprint;
      in.timeout_s = left;
      in.cancelled = options.cancelled;
      inputs.push_back(in);
      item_of.push_back(static_cast<int>(items.size()));
      items.push_back({&inputs.back(), nullptr, nullptr});
    }
    result->measurements.push_back(std::move(m));
  }
  for (const runtime::LibraryGemmConfig& config : configs) {
    LibraryInput in;
    in.problem = &run.problem;
    in.config = config;
    in.timeout_s = left;
    in.cancelled = options.cancelled;
    libraries.push_back(in);
    items.push_back({nullptr, &libraries.back(), nullptr});
  }
  run.progress.to_measure = static_cast<int>(items.size());
  run.Report("measure", &explorer);
  std::vector<CandidateRun> runs = runner.RunSideBySide(items, left - 1);
  for (size_t i = 0; i < result->measurements.size(); ++i) {
    if (item_of[i] >= 0) result->measurements[i].run = std::move(runs[item_of[i]]);
  }
  for (size_t l = 0; l < configs.size(); ++l) {
    result->library.push_back({configs[l], std::move(runs[inputs.size() + l])});
  }
  SearchProgress& progress = run.progress;
  for (const MeasuredCandidate& m : result->measurements) {
    ++progress.measured;
    if (m.run.verified && m.run.seconds.has_value() &&
        (!progress.best_measured_s.has_value() || *m.run.seconds < *progress.best_measured_s)) {
      progress.best_measured_s = m.run.seconds;
    }
    for (SearchCallback* cb : run.callbacks) cb->OnMeasured(m);
  }
  progress.measured += static_cast<int>(configs.size());
}

// The physics guard (search/plausibility.h) on the verified run `r` on `ranks` ranks: when
// its fastest sample is below the floor, it is measured again alone (`again`); when that is
// still below, `implausible` says why (the run is never chosen).
void Guard(TuneRun& run, CandidateRun& r, int64_t ranks, const std::function<CandidateRun()>& again,
           std::optional<std::string>* implausible) {
  const TuneOptions& o = run.options;
  const double flops = ProblemFlops(run.problem);
  const auto below = [&](const CandidateRun& x) {
    if (!x.verified || x.samples.empty()) return std::optional<std::string>();
    const double fastest = *std::min_element(x.samples.begin(), x.samples.end());
    return ImplausibleTime(fastest, flops, x.bytes_sent_max, o.params, ranks);
  };
  if (!below(r)) return;
  if (o.budget_s - Since(run.start) > 1 && !run.Cancelled()) r = again();
  *implausible = below(r);
}

// The guard on every verified run of `result` (no floor without a calibrated profile).
void GuardPhysics(TuneRun& run, Explorer& explorer, Runner& runner, Checker& checker,
                  SearchResult* result) {
  const TuneOptions& o = run.options;
  for (MeasuredCandidate& m : result->measurements) {
    Guard(
        run, m.run, m.mesh.Ranks(),
        [&] {
          return Measure(run, explorer, runner, checker, m.candidate, o.budget_s - Since(run.start),
                         result)
              .run;
        },
        &m.implausible);
  }
  for (LibraryMeasurement& l : result->library) {
    Guard(
        run, l.run, int64_t{l.config.prow} * l.config.pcol,
        [&] {
          LibraryInput in;
          in.problem = &run.problem;
          in.config = l.config;
          in.timeout_s = o.budget_s - Since(run.start);
          in.cancelled = o.cancelled;
          return runner.RunLibrary(in);
        },
        &l.implausible);
  }
}

}  // namespace

namespace {

// Sets the winner: the fastest verified measurement, else the model's best (of at most
// max_checked) that the checker passes. FailedPrecondition when none passes; Cancelled
// when cancelled while checking.
absl::Status ChooseWinner(TuneRun& run, Explorer& explorer, Checker& checker,
                          SearchResult* result) {
  std::vector<Contender> contenders;
  for (size_t i = 0; i < result->measurements.size(); ++i) {
    const MeasuredCandidate& m = result->measurements[i];
    contenders.push_back(
        {absl::StrCat(m.mesh.ToString(), " #", i + 1), false, &m.run, m.implausible.has_value()});
  }
  for (const LibraryMeasurement& l : result->library) {
    contenders.push_back(
        {absl::StrCat(LibraryName(run.problem), " ", runtime::ConfigText(l.config)), true, &l.run,
         l.implausible.has_value()});
  }
  const Decision d = Decide(contenders);
  MeasuredChoice& choice = result->choice;
  for (const Contender& c : contenders) choice.labels.push_back(c.label);
  choice.verdict = d.verdict;
  choice.leader = d.leader;
  choice.vs_library = d.vs_library;
  if (d.answer >= 0 && contenders[d.answer].library) {
    choice.library_answer = d.answer - static_cast<int>(result->measurements.size());
  }
  const MeasuredCandidate* fastest = d.schedule >= 0 ? &result->measurements[d.schedule] : nullptr;
  if (fastest != nullptr) {
    result->best = fastest->candidate;
    result->mesh = fastest->mesh;
    result->measured_s = fastest->run.seconds;
    result->verified = true;
    result->checked = "measured";
    return absl::OkStatus();
  }
  // Unmeasured: the model's best that the checker verifies.
  const Candidate* chosen = nullptr;
  for (const Candidate* c : explorer.Best(std::max(run.options.max_checked, 1))) {
    if (run.Cancelled()) return absl::CancelledError("the tune was cancelled");
    const CheckResult check = checker.Check(run.problem, explorer.mesh(c->mesh), c->schedule);
    if (check.ok) {
      chosen = c;
      result->checked = check.how;
      result->checked_extents = check.scaled;
      break;
    }
    result->refused.push_back(absl::StrCat(c->trace, "\n  ", check.error));
  }
  if (chosen == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("none of the model's ", result->refused.size(),
                     " best schedules passed the simulator's check; the first: ",
                     result->refused.empty() ? "" : result->refused[0]));
  }
  result->best = *chosen;
  result->mesh = explorer.mesh(chosen->mesh);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SearchResult> Tune(const TuneOptions& options, Runner& runner,
                                  const std::vector<SearchCallback*>& callbacks) {
  if (options.program.statements.empty())
    return absl::InvalidArgumentError("the program has no statement");
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (!options.program.single()) return TuneStatements(options, runner, callbacks);
  TuneRun run{options, options.program.statements[0], callbacks, Clock::now()};
  const ir::Problem& problem = run.problem;
  // What a long costing walk must beat (BoundRule): a model-only tune returns the best, and
  // reports each schedule class's best (exact within kFamilyWindow of the best).
  const auto bound = [&](Explorer& explorer) {
    BoundRule rule;
    if (!runner.measures()) rule.window = 1;
    rule.group = [&explorer, &problem](int mesh, int nest) {
      absl::StatusOr<std::string> c = ScheduleClassOfCalls(
          explorer.evaluator(mesh).space().nests()[nest].nest.calls, problem, explorer.mesh(mesh));
      return c.ok() ? *c : std::string();
    };
    return rule;
  };
  const Clock::time_point deadline =
      run.start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(options.budget_s / 2));
  MT_ASSIGN_OR_RETURN(SearchedStatement searched,
                      SearchStatement(problem, options, deadline, bound,
                                      [&run](const std::string& stage, const Explorer* explorer) {
                                        run.Report(stage, explorer);
                                      }));
  Explorer& explorer = *searched.explorer;
  SearchResult result;
  result.strategy = searched.strategy;
  std::unique_ptr<Checker> simulating;
  Checker* checker = options.checker;
  if (checker == nullptr) checker = (simulating = NewSimulatingChecker()).get();
  if (runner.measures()) {
    MeasureSideBySide(run, explorer, runner, *checker, &result);
    GuardPhysics(run, explorer, runner, *checker, &result);
  }
  if (run.Cancelled() && result.measurements.empty())
    return absl::CancelledError("the tune was cancelled");

  if (absl::Status s = ChooseWinner(run, explorer, *checker, &result); !s.ok()) return s;
  result.lower_bound = CommLowerBound(problem, explorer.mesh(result.best.mesh).Ranks());
  if (result.lower_bound.has_value() && *result.lower_bound > 0) {
    result.lower_bound_ratio =
        static_cast<double>(result.best.cost.comm_words_per_rank) / *result.lower_bound;
  }
  result.counts = explorer.counts();
  result.class_bests = BestPerClass(explorer, problem);
  run.Report("done", &explorer);
  result.seconds = Since(run.start);
  return result;
}

}  // namespace meshtune::search
