// One statement's space, made and searched as a tune does it: search::Tune for a statement,
// and for each statement of a program (search/program_search.h).
#ifndef MESHTUNE_SEARCH_STATEMENT_SEARCH_H_
#define MESHTUNE_SEARCH_STATEMENT_SEARCH_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/problem.h"
#include "search/explorer.h"
#include "search/tune_types.h"

namespace meshtune::search {

// A statement's space after its search: the explorer (its candidates costed) and the name of
// the strategy that searched it ("exhaustive", "exhaustive (cut short by the time budget)"
// or "evolutionary").
struct SearchedStatement {
  std::unique_ptr<Explorer> explorer;
  std::string strategy;
};

// How a search tells of its stages: "space" before the space is made (`explorer` null),
// "search" once it is judged and during the search.
using SearchReport = std::function<void(const std::string& stage, const Explorer* explorer)>;

// `problem`'s space on options.meshes (Explorer::Create with options.space, params, judge,
// cancelled), `bound` (when set) giving the explorer its BoundRule, then searched by the
// default strategy (options.max_exhaustive, evolution, max_evaluations) until `deadline`.
// `report` may be empty. Explorer::Create's errors; NoLegalSchedule's when no point is
// legal; Cancelled when options.cancelled fires; FailedPrecondition when no candidate came
// out: "no legal schedule found among N candidates (judged lazily; estimated pruned: ...)",
// "the time budget of B s ran out before any schedule was evaluated (the search gets half
// of it); give a larger budget (--budget-s)" or "none of the N legal schedules evaluated
// could be lowered".
absl::StatusOr<SearchedStatement> SearchStatement(const ir::Problem& problem,
                                                  const TuneOptions& options,
                                                  std::chrono::steady_clock::time_point deadline,
                                                  const std::function<BoundRule(Explorer&)>& bound,
                                                  const SearchReport& report);

// FailedPrecondition for a space with no legal point: "no legal schedule among N
// candidates (pruned: REASON: K, ...)", or, when no candidate could be made at all because
// every way to spread the work leaves a rank an empty block, "no schedule spreads PROBLEM
// (EXTENTS) over the R ranks of MESH without leaving a rank empty (every split of an index over an
// axis leaves a block past its end); a smaller mesh, or --ranks R --allow-idle-ranks,
// leaves ranks idle instead" (on 2 ranks, where idle ones add no mesh: "...; one rank
// (--ranks 1, or a mesh of one rank) leaves the other idle instead"). When the meshes are of
// several rank counts, idle ranks were allowed: "no schedule spreads PROBLEM (EXTENTS) over
// F to R ranks (MESH or MESH ...), idle ranks allowed, without leaving a rank empty (...);
// fewer than F ranks (a smaller --ranks or mesh) leave more ranks idle".
absl::Status NoLegalSchedule(const Explorer& explorer, const ir::Problem& problem);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_STATEMENT_SEARCH_H_
