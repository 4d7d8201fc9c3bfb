#include "search/statement_search.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "search/strategy.h"

namespace meshtune::search {

namespace {

using Clock = std::chrono::steady_clock;

std::string PrunedText(const ReasonCounts& pruned) {
  std::vector<std::string> parts;
  for (const auto& [reason, n] : pruned) parts.push_back(absl::StrCat(reason, ": ", n));
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

}  // namespace

absl::StatusOr<SearchedStatement> SearchStatement(const ir::Problem& problem,
                                                  const TuneOptions& options,
                                                  Clock::time_point deadline,
                                                  const std::function<BoundRule(Explorer&)>& bound,
                                                  const SearchReport& report) {
  const auto cancelled = [&options] { return options.cancelled && options.cancelled(); };
  const auto tell = [&report](const std::string& stage, const Explorer* explorer) {
    if (report) report(stage, explorer);
  };
  tell("space", nullptr);
  MT_ASSIGN_OR_RETURN(std::unique_ptr<Explorer> made,
                      Explorer::Create(problem, options.meshes, options.space, options.params,
                                       cancelled, options.judge));
  Explorer& explorer = *made;
  if (bound) explorer.set_bound_rule(bound(explorer));
  if (explorer.counts().legal == 0 && !explorer.counts().estimated) {
    return NoLegalSchedule(explorer, problem);
  }
  if (cancelled()) return absl::CancelledError("the tune was cancelled");
  tell("search", &explorer);
  SearchedStatement out;
  std::unique_ptr<SearchStrategy> s = NewDefaultStrategy(
      explorer, options.max_exhaustive, options.evolution, options.max_evaluations);
  out.strategy = s->name();
  SearchBudget budget;
  budget.max_evaluations = options.max_evaluations;
  budget.deadline = deadline;
  budget.cancelled = options.cancelled;
  budget.on_progress = [&] { tell("search", &explorer); };
  s->Search(explorer, budget);
  if (cancelled()) return absl::CancelledError("the tune was cancelled");
  if (out.strategy == "exhaustive" && explorer.counts().evaluated < explorer.counts().legal) {
    out.strategy = "exhaustive (cut short by the time budget)";
  }
  const std::vector<const Candidate*> ranked = explorer.Best(std::max(options.top_k, 1));
  if (ranked.empty()) {
    if (explorer.counts().evaluated == 0 && explorer.lazy() && Clock::now() < budget.deadline) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no legal schedule found among ", explorer.counts().enumerated,
          " candidates (judged lazily; estimated pruned: ", PrunedText(explorer.counts().pruned),
          ")"));
    }
    if (explorer.counts().evaluated == 0 && Clock::now() >= budget.deadline) {
      return absl::FailedPreconditionError(
          absl::StrFormat("the time budget of %g s ran out before any schedule was evaluated (the "
                          "search gets half of it); "
                          "give a larger budget (--budget-s)",
                          options.budget_s));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("none of the ", explorer.counts().evaluated,
                     " legal schedules evaluated could be lowered"));
  }
  out.explorer = std::move(made);
  return out;
}

absl::Status NoLegalSchedule(const Explorer& explorer, const ir::Problem& problem) {
  if (explorer.counts().enumerated > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no legal schedule among ", explorer.counts().enumerated,
                     " candidates (pruned: ", PrunedText(explorer.counts().pruned), ")"));
  }
  std::vector<std::string> meshes;
  int64_t fewest = 0, most = 0;
  for (int m = 0; m < explorer.num_meshes(); ++m) {
    meshes.push_back(explorer.mesh(m).ToString());
    const int64_t ranks = explorer.mesh(m).Ranks();
    fewest = m == 0 ? ranks : std::min(fewest, ranks);
    most = std::max(most, ranks);
  }
  const std::string what =
      absl::StrCat("no schedule spreads ", problem.ToString(), " (", problem.ExtentsString(), ")");
  constexpr char kWhy[] =
      " without leaving a rank empty (every split of an index over an axis leaves a block past "
      "its end)";
  // Meshes of several rank counts: idle ranks were allowed (--allow-idle-ranks), and none
  // of them would do.
  if (fewest < most) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " over ", fewest, " to ", most, " ranks (",
                     absl::StrJoin(meshes, " or "), "), idle ranks allowed,", kWhy, "; fewer than ",
                     fewest, " ranks (a smaller --ranks or mesh) leave more ranks idle"));
  }
  // On 2 ranks allowing idle ones adds no mesh: only one rank is left.
  const std::string instead =
      most <= 2 ? "one rank (--ranks 1, or a mesh of one rank) leaves the other idle instead"
                : absl::StrCat("a smaller mesh, or --ranks ", most,
                               " --allow-idle-ranks, leaves ranks idle instead");
  return absl::FailedPreconditionError(absl::StrCat(
      what, " over the ", most, " ranks of ", absl::StrJoin(meshes, " or "), kWhy, "; ", instead));
}

}  // namespace meshtune::search
