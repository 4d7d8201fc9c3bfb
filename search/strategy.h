// Search strategies: how the tuner walks the legal points of an Explorer.
//
// A strategy evaluates points (Explorer::Evaluate lowers and costs each once, and keeps
// the costed candidates); the tuner then takes the model's best from the explorer. One
// interface, one implementation a file, one factory each:
//   exhaustive    every legal point, in order (small spaces)
//   evolutionary  random legal points, then mutations of the best so far (large spaces)
// Not thread-safe (an Explorer is not).
#ifndef MESHTUNE_SEARCH_STRATEGY_H_
#define MESHTUNE_SEARCH_STRATEGY_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "search/explorer.h"

namespace meshtune::search {

// When a strategy stops: whichever comes first.
struct SearchBudget {
  int64_t max_evaluations = 1000;  // legal points lowered and costed (duplicates included)
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::function<bool()> cancelled;  // polled between evaluations when set
  // Called every `progress_every` evaluations and once at the end when set.
  std::function<void()> on_progress;
  int progress_every = 256;

  // True when the budget is spent after `evaluations` evaluations.
  bool Spent(int64_t evaluations) const;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string name() const = 0;
  // Evaluates points of `explorer` within `budget`; the candidates stay in the explorer.
  virtual void Search(Explorer& explorer, const SearchBudget& budget) = 0;
};

// Every legal point in the explorer's order, whatever budget.max_evaluations says; only
// the deadline or a cancellation stops it early.
std::unique_ptr<SearchStrategy> NewExhaustiveStrategy();

struct EvolutionOptions {
  uint64_t seed = 1;     // the same seed, space and budget give the same search
  int population = 48;   // random legal points to start from
  int elite = 12;        // parents are drawn from this many best candidates
  double explore = 0.1;  // share of children that are fresh random points
  int patience = 2000;   // stop after this many tries in a row with no new point
};

// Random legal points, then mutations (Explorer::Mutate) of the best candidates so far.
std::unique_ptr<SearchStrategy> NewEvolutionaryStrategy(const EvolutionOptions& options);

// The scale guard. Costing a point walks its ranks (cost::EstimateCostWork's rank-steps), so
// the work of costing every legal point grows with the mesh as well as with the count: for
// 8192^3 matmul on every mesh of P ranks the median of 300 random legal points walks about
// 4e3 rank-steps at P = 256, 1e4 at 4,096, 2e6 at 16,384 and 2e7 at 65,536. Up to
// `max_exhaustive` legal points are costed whole on meshes of up to kExhaustiveRanks ranks;
// on larger ones the limit shrinks in proportion to the ranks, but never below
// `max_evaluations` (what the evolutionary search would cost anyway; 0: no such floor).
inline constexpr int64_t kExhaustiveRanks = 256;
int64_t ExhaustiveLimit(int64_t max_exhaustive, int64_t max_evaluations, int64_t ranks);

// Exhaustive when the explorer is judged whole and its legal points fit in ExhaustiveLimit
// on its largest mesh (all of them are then costed), else evolutionary within the budget's
// evaluations. The count of points alone is no guard: a space without the layouts that
// leave a rank an empty block holds 1,022,784 points on the meshes of 65,536 ranks for
// 8192^3 matmul (16,679,424 with them, judged lazily), 8,352 of them legal, which under a
// limit of 10,000 whatever the ranks were all costed: 104 s on an idle machine, not 15.
std::unique_ptr<SearchStrategy> NewDefaultStrategy(const Explorer& explorer, int64_t max_exhaustive,
                                                   const EvolutionOptions& options,
                                                   int64_t max_evaluations = 0);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_STRATEGY_H_
