// The exhaustive strategy: every legal point of the explorer, in order. It is chosen for
// spaces small enough to cost whole (few points on a small enough mesh: ExhaustiveLimit),
// so it does not stop at max_evaluations: only the deadline or a cancellation cuts it short
// (and the tuner then says so).
#include <algorithm>
#include <limits>
#include <memory>

#include "search/strategy.h"

namespace meshtune::search {

namespace {

class Exhaustive : public SearchStrategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void Search(Explorer& explorer, const SearchBudget& budget) override {
    int64_t n = 0;
    SearchBudget whole = budget;
    whole.max_evaluations = std::numeric_limits<int64_t>::max();
    explorer.ForEachLegal([&](const Point& p) {
      if (whole.Spent(n)) return false;
      explorer.Evaluate(p);
      ++n;
      if (budget.on_progress && n % budget.progress_every == 0) budget.on_progress();
      return true;
    });
    if (budget.on_progress) budget.on_progress();
  }
};

}  // namespace

bool SearchBudget::Spent(int64_t evaluations) const {
  if (evaluations >= max_evaluations) return true;
  if (std::chrono::steady_clock::now() >= deadline) return true;
  return cancelled && cancelled();
}

std::unique_ptr<SearchStrategy> NewExhaustiveStrategy() { return std::make_unique<Exhaustive>(); }

int64_t ExhaustiveLimit(int64_t max_exhaustive, int64_t max_evaluations, int64_t ranks) {
  int64_t limit = max_exhaustive;
  if (ranks > kExhaustiveRanks) {
    limit = static_cast<int64_t>(static_cast<double>(max_exhaustive) * kExhaustiveRanks / ranks);
  }
  return std::max(limit, max_evaluations);
}

std::unique_ptr<SearchStrategy> NewDefaultStrategy(const Explorer& explorer, int64_t max_exhaustive,
                                                   const EvolutionOptions& options,
                                                   int64_t max_evaluations) {
  const SearchCounts& counts = explorer.counts();
  int64_t ranks = 1;
  for (int m = 0; m < explorer.num_meshes(); ++m) ranks = std::max(ranks, explorer.mesh(m).Ranks());
  if (!counts.estimated &&
      counts.legal <= ExhaustiveLimit(max_exhaustive, max_evaluations, ranks)) {
    return NewExhaustiveStrategy();
  }
  return NewEvolutionaryStrategy(options);
}

}  // namespace meshtune::search
