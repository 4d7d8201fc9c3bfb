#include "search/program_search.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/program_footprint.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"
#include "runtime/simulator.h"
#include "search/lower_bound.h"
#include "search/plausibility.h"
#include "search/program_layouts.h"
#include "search/statement_search.h"

namespace meshtune::search {

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The tensors statement `s` of `program` reads from an earlier statement's layout (an
// intermediate, or an input an earlier statement read first), by name.
std::vector<std::string> ReadIntermediates(const ir::StatementProgram& program, int s) {
  std::vector<std::string> out;
  for (const ir::TensorAccess& a : program.statements[s].operands) {
    const int home = program.Home(a.tensor);
    if (home >= 0 && home < s && std::find(out.begin(), out.end(), a.tensor) == out.end())
      out.push_back(a.tensor);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The tensors whose layout statement `s` leaves for later ones: its output when a later
// statement reads it, and the inputs it reads first that a later statement reads too.
std::vector<std::string> LeftForLater(const ir::StatementProgram& program, int s) {
  std::vector<std::string> out;
  const ir::Problem& problem = program.statements[s];
  std::vector<std::string> touched = {problem.output.tensor};
  for (const ir::TensorAccess& a : problem.operands) touched.push_back(a.tensor);
  for (const std::string& t : touched) {
    const std::vector<int> c = program.Consumers(t);
    if (program.Home(t) == s && !c.empty() && c.back() > s &&
        std::find(out.begin(), out.end(), t) == out.end())
      out.push_back(t);
  }
  return out;
}

// The last statement reading `tensor`.
int LastConsumer(const ir::StatementProgram& program, const std::string& tensor) {
  const std::vector<int> c = program.Consumers(tensor);
  return c.empty() ? -1 : c.back();
}

// A partial program of the dynamic programme: the statements chosen so far and the layouts
// of the intermediates still to be read.
struct Partial {
  double seconds = 0;
  std::vector<const Candidate*> chosen;
  std::vector<Move> moves;
  std::map<std::string, std::string> live;  // tensor -> layout key
};

class ProgramSearch {
 public:
  ProgramSearch(const TuneOptions& options, const std::vector<SearchCallback*>& callbacks,
                Clock::time_point start)
      : options_(options), callbacks_(callbacks), program_(options.program), start_(start) {}

  // Every statement's space searched (its own share of half the budget).
  absl::Status SearchStatements() {
    const int n = static_cast<int>(program_.statements.size());
    for (int s = 0; s < n; ++s) {
      const Clock::time_point deadline =
          start_ + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(options_.budget_s / 2 * (s + 1) / n));
      absl::StatusOr<SearchedStatement> searched =
          SearchStatement(program_.statements[s], options_, deadline, nullptr, nullptr);
      if (!searched.ok()) return Prefixed(s, searched.status());
      const Explorer& explorer = *searched->explorer;
      SearchProgress p;
      p.stage = "search";
      p.counts = explorer.counts();
      for (const Candidate& c : explorer.candidates()) {
        if (!p.best_predicted_s || c.cost.seconds < *p.best_predicted_s)
          p.best_predicted_s = c.cost.seconds;
      }
      p.elapsed_s = Since(start_);
      p.statement = s + 1;
      p.statements = n;
      for (SearchCallback* cb : callbacks_) cb->OnProgress(p);
      strategies_.push_back(searched->strategy);
      explorers_.push_back(std::move(searched->explorer));
    }
    return absl::OkStatus();
  }

  // The Pareto sets: per statement and mesh, the best candidate per layouts of its
  // intermediates; and a representative per (mesh, statement, tensor, key) for the boxes.
  void Group() {
    const int n = static_cast<int>(program_.statements.size());
    groups_.assign(n, {});
    for (int s = 0; s < n; ++s) {
      for (const Candidate& c : explorers_[s]->candidates()) {
        std::string key;
        for (const std::string& t : Touched(s)) {
          const std::string k = LayoutKey(c, program_.statements[s], t);
          key += absl::StrCat(t, ":", k, ";");
          representative_.emplace(std::make_tuple(c.mesh, s, t, k), &c);
        }
        const Candidate*& best = groups_[s][c.mesh][key];
        if (best == nullptr || Explorer::Better(c, *best)) best = &c;
      }
    }
  }

  // The k best programs on mesh `m` by the dynamic programme; empty when a statement has
  // no candidate there.
  std::vector<ProgramCandidate> Joint(int m, size_t k) {
    std::map<std::string, std::vector<Partial>> states{{"", {Partial{}}}};
    for (int s = 0; s < static_cast<int>(program_.statements.size()); ++s) {
      const auto groups = groups_[s].find(m);
      if (groups == groups_[s].end()) return {};
      std::map<std::string, std::vector<Partial>> next;
      for (const auto& [state, partials] : states) {
        for (const Partial& p : partials) {
          for (const auto& [key, c] : groups->second) {
            std::optional<Partial> q = Extend(p, s, *c);
            if (!q) continue;
            std::vector<Partial>& kept = next[StateKey(q->live)];
            kept.push_back(*std::move(q));
            std::sort(kept.begin(), kept.end(),
                      [](const Partial& a, const Partial& b) { return a.seconds < b.seconds; });
            if (kept.size() > k) kept.resize(k);
          }
        }
      }
      states = std::move(next);
    }
    std::vector<ProgramCandidate> out;
    for (const auto& [state, partials] : states) {
      for (const Partial& p : partials) out.push_back(Finished(m, p));
    }
    return out;
  }

  // Each statement's own best on mesh `m`, then the moves between; nullopt when a statement
  // has no candidate there.
  std::optional<ProgramCandidate> Separate(int m) {
    Partial p;
    for (int s = 0; s < static_cast<int>(program_.statements.size()); ++s) {
      const Candidate* best = nullptr;
      for (const Candidate& c : explorers_[s]->candidates()) {
        if (c.mesh == m && (best == nullptr || Explorer::Better(c, *best))) best = &c;
      }
      if (best == nullptr) return std::nullopt;
      std::optional<Partial> q = Extend(p, s, *best);
      if (!q) return std::nullopt;
      p = *std::move(q);
    }
    return Finished(m, p);
  }

  // Why program `c` is over the memory budget of its mesh (ir::ProgramOverBudget), if it is.
  std::optional<std::string> OverBudget(const ProgramCandidate& c) const {
    const ir::Computation& first = explorers_[0]->evaluator(c.mesh).base();
    if (!first.mesh().mem_per_rank_bytes.has_value()) return std::nullopt;
    std::vector<ir::Computation> replayed;
    for (size_t s = 0; s < c.statements.size(); ++s) {
      const ir::Replay r =
          ir::ReplayTrace(explorers_[s]->evaluator(c.mesh).base(), c.statements[s].schedule);
      if (!r.status.ok()) return absl::StrCat("statement ", s + 1, ": ", r.status.message());
      replayed.push_back(r.computation);
    }
    std::vector<const ir::Computation*> statements;
    for (const ir::Computation& x : replayed) statements.push_back(&x);
    size_t most = 0;
    const ir::Footprint f = ir::ProgramFootprint(program_, statements, &most);
    return ir::ProgramOverBudget(f, most, first.mesh().mem_per_rank_bytes);
  }

  Explorer& explorer(int s) { return *explorers_[s]; }
  const std::vector<std::string>& strategies() const { return strategies_; }

 private:
  static absl::Status Prefixed(int s, const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("statement ", s + 1, ": ", status.message()));
  }

  // The tensors statement `s` reads from or leaves for other statements, by name.
  std::vector<std::string> Touched(int s) const {
    std::vector<std::string> t = ReadIntermediates(program_, s);
    for (const std::string& left : LeftForLater(program_, s)) t.push_back(left);
    return t;
  }

  static std::string StateKey(const std::map<std::string, std::string>& live) {
    std::string key;
    for (const auto& [t, k] : live) key += absl::StrCat(t, ":", k, ";");
    return key;
  }

  // `p` with statement `s` run as `c`: its time, the moves of what it reads, and the
  // layouts left live. nullopt when a move cannot be planned.
  std::optional<Partial> Extend(const Partial& p, int s, const Candidate& c) {
    Partial q = p;
    q.seconds += c.cost.seconds;
    q.chosen.push_back(&c);
    const ir::Problem& problem = program_.statements[s];
    for (const std::string& t : ReadIntermediates(program_, s)) {
      const int producer = program_.Home(t);
      const auto from = q.live.find(t);
      if (from == q.live.end()) return std::nullopt;
      const std::optional<Move> move =
          MoveOf(c.mesh, t, producer, from->second, s, LayoutKey(c, problem, t));
      if (!move) return std::nullopt;
      q.seconds += move->seconds;
      q.moves.push_back(*move);
      if (LastConsumer(program_, t) == s) q.live.erase(t);
    }
    for (const std::string& t : LeftForLater(program_, s)) q.live[t] = LayoutKey(c, problem, t);
    return q;
  }

  // Moving `tensor` from statement `producer`'s layout `from` to `consumer`'s `to`, cached.
  std::optional<Move> MoveOf(int m, const std::string& tensor, int producer,
                             const std::string& from, int consumer, const std::string& to) {
    const auto key = std::make_tuple(m, tensor, from, to);
    auto it = moves_.find(key);
    if (it == moves_.end()) {
      std::optional<MoveCost> cost;
      const std::optional<std::vector<runtime::Box>> a = Boxes(m, producer, tensor, from);
      const std::optional<std::vector<runtime::Box>> b = Boxes(m, consumer, tensor, to);
      if (a && b) {
        const ir::Mesh& mesh = explorers_[producer]->mesh(m);
        absl::StatusOr<MoveCost> c = CostMove(
            program_.Shape(tensor), ir::DTypeBytes(program_.dtype), mesh, *a, *b, options_.params);
        if (c.ok()) cost = *c;
      }
      it = moves_.emplace(key, cost).first;
    }
    if (!it->second) return std::nullopt;
    Move move;
    move.tensor = tensor;
    move.producer = producer;
    move.consumer = consumer;
    move.in_place = it->second->in_place;
    move.bytes_max = it->second->bytes_max;
    move.seconds = it->second->seconds;
    return move;
  }

  // The boxes of `tensor` in layout `key` under statement `s`'s schedules on mesh `m`.
  std::optional<std::vector<runtime::Box>> Boxes(int m, int s, const std::string& tensor,
                                                 const std::string& key) {
    const auto k = std::make_tuple(m, s, tensor, key);
    const auto cached = boxes_.find(k);
    if (cached != boxes_.end()) return cached->second;
    std::optional<std::vector<runtime::Box>> boxes;
    const auto rep = representative_.find(k);
    if (rep != representative_.end()) {
      absl::StatusOr<std::vector<runtime::Box>> b =
          HeldBoxes(explorers_[s]->evaluator(m).base(), rep->second->schedule, tensor);
      if (b.ok()) boxes = *std::move(b);
    }
    boxes_.emplace(k, boxes);
    return boxes;
  }

  ProgramCandidate Finished(int m, const Partial& p) const {
    ProgramCandidate out;
    out.mesh = m;
    for (const Candidate* c : p.chosen) out.statements.push_back(*c);
    out.moves = p.moves;
    out.seconds = p.seconds;
    return out;
  }

  const TuneOptions& options_;
  const std::vector<SearchCallback*>& callbacks_;
  const ir::StatementProgram& program_;
  Clock::time_point start_;
  std::vector<std::unique_ptr<Explorer>> explorers_;
  std::vector<std::string> strategies_;
  // Per statement, per mesh: layouts of its intermediates -> its best candidate.
  std::vector<std::map<int, std::map<std::string, const Candidate*>>> groups_;
  std::map<std::tuple<int, int, std::string, std::string>, const Candidate*> representative_;
  std::map<std::tuple<int, int, std::string, std::string>, std::optional<std::vector<runtime::Box>>>
      boxes_;
  std::map<std::tuple<int, std::string, std::string, std::string>, std::optional<MoveCost>> moves_;
};

// The traces of `c`, for comparing programs.
std::string TracesOf(const ProgramCandidate& c) {
  std::string out = absl::StrCat(c.mesh, "\n");
  for (const Candidate& s : c.statements) out += s.trace + "--\n";
  return out;
}

// Every statement's Program through the checker's validation, as one job's input.
absl::StatusOr<ProgramMeasureInput> Prepared(const TuneOptions& options, Checker& checker,
                                             const ProgramCandidate& c, const ir::Mesh& mesh) {
  return ProgramInputOf(options.program, mesh, c,
                        [&checker](const ir::Problem& p, const ir::Mesh& m, const ir::Trace& t) {
                          return checker.Validate(p, m, t);
                        });
}

// Checks an unmeasured program: the whole program in the simulator when it is small, else
// each statement by the checker. "" when it passes, else why; `how` says which.
std::string CheckProgram(const TuneOptions& options, Checker& checker, const ProgramCandidate& c,
                         const ir::Mesh& mesh, std::string* how) {
  int64_t instances = 0;
  for (const ir::Problem& p : options.program.statements) {
    int64_t n = 1;
    for (const auto& [index, extent] : p.extents)
      n = std::min<int64_t>(n * extent, int64_t{1} << 40);
    instances += n;
  }
  if (instances <= options.simulate_below && mesh.Ranks() <= 64) {
    absl::StatusOr<ProgramMeasureInput> in = Prepared(options, checker, c, mesh);
    if (!in.ok()) return std::string(in.status().message());
    std::vector<runtime::StatementJob> jobs;
    for (size_t s = 0; s < in->programs.size(); ++s) {
      jobs.push_back({runtime::ProblemSpecOf(options.program.statements[s]), in->programs[s]});
    }
    const runtime::RunStats stats = runtime::SimulateStatements(jobs);
    *how = "simulated";
    return stats.verified ? "" : stats.error;
  }
  for (size_t s = 0; s < c.statements.size(); ++s) {
    const CheckResult r =
        checker.Check(options.program.statements[s], mesh, c.statements[s].schedule);
    if (!r.ok) return absl::StrCat("statement ", s + 1, ": ", r.error);
  }
  *how = "statements checked";
  return "";
}

// Sets the answer from the measurements (the fastest verified), else from the model's
// ranked programs that pass CheckProgram.
absl::Status ChooseProgram(const TuneOptions& options, ProgramSearch& search, Checker& checker,
                           SearchResult* result) {
  ProgramAnswer& answer = *result->program;
  // Physics (search/plausibility.h) and noise (search/decision.h) as for one statement:
  // the fastest program, a tie within noise said so.
  double flops = 0;
  for (const ir::Problem& p : options.program.statements) flops += ProblemFlops(p);
  // Why the verified `run` on `ranks` ranks is implausible: its fastest sample below the floor.
  const auto implausible = [&](const CandidateRun& run, int64_t ranks) {
    if (!run.verified || run.samples.empty()) return std::optional<std::string>();
    const double fastest = *std::min_element(run.samples.begin(), run.samples.end());
    return ImplausibleTime(fastest, flops, run.bytes_sent_max, options.params, ranks);
  };
  std::vector<Contender> contenders;
  for (MeasuredProgram& m : answer.measurements) {
    m.implausible = implausible(m.run, search.explorer(0).mesh(m.candidate.mesh).Ranks());
    contenders.push_back({m.label, false, &m.run, m.implausible.has_value()});
    result->choice.labels.push_back(m.label);
  }
  for (LibraryMeasurement& l : result->library) {
    l.implausible = implausible(l.run, int64_t{l.config.prow} * l.config.pcol);
    const std::string label = absl::StrCat(LibraryName(options.program.statements[0]), " ",
                                           runtime::ConfigText(l.config));
    contenders.push_back({label, true, &l.run, l.implausible.has_value()});
    result->choice.labels.push_back(label);
  }
  const Decision d = Decide(contenders);
  result->choice.verdict = d.verdict;
  result->choice.leader = d.leader;
  result->choice.vs_library = d.vs_library;
  if (d.answer >= 0 && contenders[d.answer].library) {
    result->choice.library_answer = d.answer - static_cast<int>(answer.measurements.size());
  }
  if (d.schedule >= 0) {
    const MeasuredProgram& fastest = answer.measurements[d.schedule];
    answer.best_measurement = d.schedule;
    answer.best = fastest.candidate;
    result->mesh = search.explorer(0).mesh(fastest.candidate.mesh);
    result->measured_s = fastest.run.seconds;
    result->verified = true;
    result->checked = "measured";
    return absl::OkStatus();
  }
  for (const ProgramCandidate& c : answer.ranked) {
    if (options.cancelled && options.cancelled())
      return absl::CancelledError("the tune was cancelled");
    const ir::Mesh& mesh = search.explorer(0).mesh(c.mesh);
    std::string how;
    const std::string error = CheckProgram(options, checker, c, mesh, &how);
    if (error.empty()) {
      answer.best = c;
      result->mesh = mesh;
      result->checked = how;
      return absl::OkStatus();
    }
    result->refused.push_back(absl::StrCat(TracesOf(c), "  ", error));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("none of the model's ", result->refused.size(),
                   " best programs passed the checks; the first: ",
                   result->refused.empty() ? "" : result->refused[0]));
}

}  // namespace

std::string LayoutKey(const Candidate& c, const ir::Problem& problem, const std::string& tensor) {
  const ir::TensorAccess* access = problem.FirstAccess(tensor);
  const ir::ShardCall* shard = nullptr;
  for (const ir::Instruction& inst : c.schedule.instructions) {
    const auto* call = std::get_if<ir::ShardCall>(&inst);
    if (call != nullptr && call->tensor == tensor) shard = call;
  }
  std::vector<std::string> dims;
  for (size_t d = 0; access != nullptr && d < access->indices.size(); ++d) {
    std::vector<std::string> axes;
    for (size_t t = 0; shard != nullptr && t < shard->targets.size(); ++t) {
      if (shard->targets[t].dim == access->indices[d])
        axes.push_back(shard->targets[t].target.ToString());
    }
    dims.push_back(axes.empty() ? "*" : absl::StrJoin(axes, "+"));
  }
  return absl::StrJoin(dims, ",");
}

namespace {

// Tells the callbacks of `stage`: the statements' counts summed, the programs measured so
// far of `to_measure`, the best predicted and measured program.
void Report(const std::vector<SearchCallback*>& callbacks, const std::string& stage,
            const SearchResult& result, int to_measure, Clock::time_point start) {
  const ProgramAnswer& answer = *result.program;
  SearchProgress p;
  p.stage = stage;
  p.counts = result.counts;
  p.to_measure = to_measure;
  p.measured = static_cast<int>(answer.measurements.size());
  if (!answer.ranked.empty()) p.best_predicted_s = answer.ranked[0].seconds;
  for (const MeasuredProgram& m : answer.measurements) {
    if (m.run.verified && m.run.seconds &&
        (!p.best_measured_s || *m.run.seconds < *p.best_measured_s))
      p.best_measured_s = m.run.seconds;
  }
  p.elapsed_s = Since(start);
  p.statements = static_cast<int>(answer.counts.size());
  for (SearchCallback* cb : callbacks) cb->OnProgress(p);
}

// The statements' counts summed.
SearchCounts Summed(const std::vector<SearchCounts>& counts) {
  SearchCounts out;
  for (const SearchCounts& c : counts) {
    out.enumerated += c.enumerated;
    out.legal += c.legal;
    out.costed += c.costed;
    out.evaluated += c.evaluated;
    out.estimated = out.estimated || c.estimated;
    for (const auto& [reason, n] : c.pruned) out.pruned[reason] += n;
  }
  return out;
}

// The joint search's k best programs over every mesh into answer->ranked, and the best
// separate program into answer->separate. FailedPrecondition when none fits the memory
// budget or no mesh holds a schedule of every statement.
absl::Status RankPrograms(const TuneOptions& options, ProgramSearch& search, size_t k,
                          ProgramAnswer* answer) {
  std::optional<ProgramCandidate> separate;
  // Programs over the memory budget as a whole (every tensor kept, the largest statement's
  // additions) are dropped, though each statement alone fits.
  std::optional<std::string> over;
  for (int m = 0; m < static_cast<int>(options.meshes.size()); ++m) {
    for (ProgramCandidate& c : search.Joint(m, k)) {
      std::optional<std::string> why = search.OverBudget(c);
      if (!why) answer->ranked.push_back(std::move(c));
      if (why && !over) over = why;
    }
    std::optional<ProgramCandidate> s = search.Separate(m);
    if (std::optional<std::string> why = s ? search.OverBudget(*s) : std::nullopt) {
      if (!over) over = why;
      s.reset();
    }
    if (s && (!separate || s->seconds < separate->seconds)) separate = std::move(s);
  }
  if (over && (answer->ranked.empty() || !separate)) {
    return absl::FailedPreconditionError(
        absl::StrCat(answer->ranked.empty() ? "every program"
                                            : "each statement's own best (the separate "
                                              "program a tune compares with)",
                     " is over the memory budget as a whole: ", *over));
  }
  if (answer->ranked.empty() || !separate) {
    return absl::FailedPreconditionError(
        "no mesh holds a schedule of every statement whose layouts can be moved between them");
  }
  std::stable_sort(
      answer->ranked.begin(), answer->ranked.end(),
      [](const ProgramCandidate& a, const ProgramCandidate& b) { return a.seconds < b.seconds; });
  if (answer->ranked.size() > k) answer->ranked.resize(k);
  answer->separate = *separate;
  return absl::OkStatus();
}

// The library's configurations a program is measured at: when every statement is of
// matmul form (a chain of GEMMs on one grid, runtime/library/library_run.h) and none has
// given layouts, on a runner that measures libraries, unless the options leave it out; the
// most promising grids and blocks of its largest statement.
std::vector<runtime::LibraryGemmConfig> ProgramLibraryConfigs(const TuneOptions& options,
                                                              Runner& runner) {
  if (!options.measure_library || !runner.measures_library()) return {};
  std::vector<runtime::ProblemSpec> statements;
  for (const ir::Problem& p : options.program.statements) {
    if (!p.layouts.empty()) return {};
    statements.push_back(runtime::ProblemSpecOf(p));
  }
  absl::StatusOr<std::vector<runtime::GemmForm>> forms = runtime::GemmChainOf(statements);
  if (!forms.ok()) return {};
  const runtime::GemmForm* largest = &(*forms)[0];
  for (const runtime::GemmForm& f : *forms) {
    const auto work = [](const runtime::GemmForm& g) { return 1.0 * g.m * g.n * g.k; };
    if (work(f) > work(*largest)) largest = &f;
  }
  int64_t ranks = 0;
  for (const ir::Mesh& m : options.meshes) ranks = std::max(ranks, m.Ranks());
  return runtime::LibraryGemmConfigs(*largest, ranks);
}

// The ranked programs (and "separate", unless among them) measured side by side within
// what is left of the budget; a program a check refuses is not run.
void MeasurePrograms(const TuneOptions& options, const std::vector<SearchCallback*>& callbacks,
                     ProgramSearch& search, Runner& runner, Checker& checker,
                     Clock::time_point start, SearchResult* result) {
  ProgramAnswer& answer = *result->program;
  std::vector<std::pair<std::string, const ProgramCandidate*>> to_measure;
  for (size_t i = 0; i < answer.ranked.size(); ++i)
    to_measure.emplace_back(absl::StrCat("joint ", i + 1), &answer.ranked[i]);
  bool among = false;
  for (const ProgramCandidate& c : answer.ranked)
    among = among || TracesOf(c) == TracesOf(answer.separate);
  if (!among) to_measure.emplace_back("separate", &answer.separate);
  Report(callbacks, "measure", *result, static_cast<int>(to_measure.size()), start);
  const double left = options.budget_s - Since(start);
  std::vector<ProgramMeasureInput> inputs;  // kept while the items point into them
  inputs.reserve(to_measure.size());
  std::vector<MeasureItem> items;
  std::vector<int> item_of;  // per measurement, its item (-1: refused, not run)
  for (const auto& [label, c] : to_measure) {
    if (left <= 1 || (options.cancelled && options.cancelled())) break;
    MeasuredProgram m{*c, label, {}};
    const ir::Mesh& mesh = search.explorer(0).mesh(c->mesh);
    absl::StatusOr<ProgramMeasureInput> in = Prepared(options, checker, *c, mesh);
    if (!in.ok()) {
      m.run.error = std::string(in.status().message());
      result->refused.push_back(absl::StrCat(TracesOf(*c), "  ", *m.run.error));
      item_of.push_back(-1);
    } else {
      in->timeout_s = left;
      in->cancelled = options.cancelled;
      inputs.push_back(*std::move(in));
      item_of.push_back(static_cast<int>(items.size()));
      items.push_back({nullptr, nullptr, &inputs.back()});
    }
    answer.measurements.push_back(std::move(m));
  }
  std::vector<runtime::LibraryGemmConfig> configs = ProgramLibraryConfigs(options, runner);
  if (items.empty()) configs.clear();
  std::vector<LibraryInput> libraries;  // kept while the items point into them
  libraries.reserve(configs.size());
  for (const runtime::LibraryGemmConfig& config : configs) {
    LibraryInput in;
    in.program = &options.program;
    in.config = config;
    in.timeout_s = left;
    in.cancelled = options.cancelled;
    libraries.push_back(in);
    items.push_back({nullptr, &libraries.back(), nullptr});
  }
  std::vector<CandidateRun> runs = runner.RunSideBySide(items, left - 1);
  for (size_t i = 0; i < answer.measurements.size(); ++i) {
    if (item_of[i] >= 0) answer.measurements[i].run = std::move(runs[item_of[i]]);
  }
  for (size_t l = 0; l < configs.size(); ++l) {
    result->library.push_back({configs[l], std::move(runs[inputs.size() + l])});
  }
}

}  // namespace

absl::StatusOr<ProgramMeasureInput> ProgramInputOf(const ir::StatementProgram& program,
                                                   const ir::Mesh& mesh, const ProgramCandidate& c,
                                                   const MakeRunnable& runnable) {
  ProgramMeasureInput in;
  in.program = &program;
  in.mesh = &mesh;
  for (size_t s = 0; s < c.statements.size(); ++s) {
    absl::StatusOr<Runnable> r = runnable(program.statements[s], mesh, c.statements[s].schedule);
    if (!r.ok()) {
      return absl::Status(r.status().code(),
                          absl::StrCat("statement ", s + 1, ": ", r.status().message()));
    }
    in.programs.push_back(std::move(r->program));
    in.footprint.shard_bytes += r->footprint.shard_bytes;
    in.footprint.buffer_bytes += r->footprint.buffer_bytes;
  }
  return in;
}

absl::StatusOr<SearchResult> TuneStatements(const TuneOptions& options, Runner& runner,
                                            const std::vector<SearchCallback*>& callbacks) {
  const Clock::time_point start = Clock::now();
  ProgramSearch search(options, callbacks, start);
  if (absl::Status s = search.SearchStatements(); !s.ok()) return s;
  search.Group();

  SearchResult result;
  ProgramAnswer& answer = result.program.emplace();
  const size_t k = static_cast<size_t>(std::max(options.top_k, 1));
  if (absl::Status s = RankPrograms(options, search, k, &answer); !s.ok()) return s;
  for (size_t s = 0; s < options.program.statements.size(); ++s)
    answer.counts.push_back(search.explorer(static_cast<int>(s)).counts());
  answer.strategies = search.strategies();
  result.counts = Summed(answer.counts);
  result.strategy = absl::StrJoin(answer.strategies, ", ");

  std::unique_ptr<Checker> simulating;
  Checker* checker = options.checker;
  if (checker == nullptr) checker = (simulating = NewSimulatingChecker()).get();
  if (runner.measures() && options.top_k > 0) {
    MeasurePrograms(options, callbacks, search, runner, *checker, start, &result);
  }
  if (absl::Status s = ChooseProgram(options, search, *checker, &result); !s.ok()) return s;
  // A program moves at least what its hungriest statement must (each tensor held once).
  for (const ir::Problem& statement : options.program.statements) {
    const std::optional<double> bound = CommLowerBound(statement, result.mesh.Ranks());
    if (!bound) continue;
    result.lower_bound = std::max(result.lower_bound.value_or(0), *bound);
  }
  result.seconds = Since(start);
  Report(callbacks, "done", result, static_cast<int>(answer.measurements.size()), start);
  return result;
}

}  // namespace meshtune::search
