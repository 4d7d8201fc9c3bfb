// The evolutionary strategy: a survey (one random legal point of every cell, then random
// points up to the population), then children by mutation of parents drawn from the best
// candidates so far (a share of fresh random points keeps it
// exploring). Duplicates (points seen before, or lowering to a Program already costed)
// cost an evaluation but add no candidate.
#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "search/strategy.h"

namespace meshtune::search {

namespace {

class Evolutionary : public SearchStrategy {
 public:
  explicit Evolutionary(const EvolutionOptions& options) : options_(options) {}
  std::string name() const override { return "evolutionary"; }

  void Search(Explorer& explorer, const SearchBudget& budget) override {
    std::mt19937_64 rng(options_.seed);
    int64_t evaluations = 0;
    int idle = 0;  // tries in a row that found no point to evaluate
    auto evaluate = [&](const std::optional<Point>& p) {
      if (!p.has_value() || explorer.Evaluated(*p)) {
        ++idle;
        return;
      }
      idle = 0;
      explorer.Evaluate(*p);
      if (budget.on_progress && ++evaluations % budget.progress_every == 0) budget.on_progress();
    };
    // Survey: a random point of every cell (in random order), so that no loop nest or
    // rotation goes unseen; then random points up to the population size.
    std::vector<int> cells(explorer.num_cells());
    for (size_t i = 0; i < cells.size(); ++i) cells[i] = static_cast<int>(i);
    std::shuffle(cells.begin(), cells.end(), rng);
    for (int cell : cells) {
      if (budget.Spent(evaluations)) break;
      evaluate(explorer.SampleCell(cell, &rng));
    }
    for (int i = 0; i < options_.population * 4 &&
                    static_cast<int>(explorer.candidates().size()) < options_.population &&
                    !budget.Spent(evaluations) && idle < options_.patience;
         ++i) {
      evaluate(explorer.Sample(&rng));
    }
    std::uniform_real_distribution<double> coin(0, 1);
    while (!budget.Spent(evaluations) && idle < options_.patience) {
      if (explorer.candidates().empty() || coin(rng) < options_.explore) {
        evaluate(explorer.Sample(&rng));
        continue;
      }
      const std::vector<const Candidate*> elite =
          explorer.Best(static_cast<size_t>(options_.elite));
      // Rank-biased parent: the best is drawn most often.
      std::geometric_distribution<size_t> rank(0.3);
      const Candidate* parent = elite[std::min(rank(rng), elite.size() - 1)];
      evaluate(explorer.Mutate(Point{parent->mesh, parent->genome}, &rng));
    }
    if (budget.on_progress) budget.on_progress();
  }

 private:
  EvolutionOptions options_;
};

}  // namespace

std::unique_ptr<SearchStrategy> NewEvolutionaryStrategy(const EvolutionOptions& options) {
  return std::make_unique<Evolutionary>(options);
}

}  // namespace meshtune::search
