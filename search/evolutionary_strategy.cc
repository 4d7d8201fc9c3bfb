// The evolutionary strategy: a survey (a random legal point of one cell of each mesh and
// distribution, then of other cells, within a quarter of the evaluations; then random
// points up to the population), then children by mutation of parents drawn from the best
// candidates so far (a share of fresh random points keeps it
// exploring). Duplicates (points seen before, or lowering to a Program already costed)
// cost an evaluation but add no candidate.
//
// Prefetch (search/space.h: each rotation of a nest with a time loop again, prefetched) is
// a choice about a schedule rather than another schedule. The walk is over points that do
// not prefetch: the survey skips prefetched cells, and a prefetched point drawn or bred is
// taken as its plain twin. Each point evaluated brings its prefetched twin along (when
// legal; it counts as an evaluation), and a point and its twin count once among the
// parents. The model prefers the twin whenever compute can hide communication, so the
// walk looks for schedules and prefetch is decided for each one found.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "search/strategy.h"

namespace meshtune::search {

namespace {

// `p` with its rotation's prefetch set to `prefetch` (the same rotated loop and rotation),
// when the nest has such a rotation and the point is legal; nullopt otherwise.
std::optional<Point> WithPrefetch(Explorer& explorer, const Point& p, bool prefetch) {
  Evaluator& ev = explorer.evaluator(p.mesh);
  const std::vector<Rotation>& rotations = ev.space().nests()[p.genome.nest].rotations;
  const Rotation& r = rotations[p.genome.rotation];
  if (r.prefetch == prefetch) return p;
  for (size_t i = 0; i < rotations.size(); ++i) {
    const Rotation& o = rotations[i];
    if (o.loop != r.loop || o.by != r.by || o.step != r.step || o.prefetch != prefetch) continue;
    Point q = p;
    q.genome.rotation = static_cast<int>(i);
    if (ev.Legal(q.genome)) return q;
    break;
  }
  return std::nullopt;
}

// Whether `p`'s rotation prefetches.
bool Prefetches(Explorer& explorer, const Point& p) {
  return explorer.evaluator(p.mesh)
      .space()
      .nests()[p.genome.nest]
      .rotations[p.genome.rotation]
      .prefetch;
}

// The survey's cells: one random cell of each group (Explorer::CellGroup), groups in random
// order, then the remaining cells in random order.
std::vector<int> SurveyOrder(const Explorer& explorer, std::mt19937_64* rng) {
  std::map<std::string, std::vector<int>> groups;
  for (int c = 0; c < explorer.num_cells(); ++c) groups[explorer.CellGroup(c)].push_back(c);
  std::vector<int> first, rest;
  for (auto& [group, cells] : groups) {
    std::shuffle(cells.begin(), cells.end(), *rng);
    first.push_back(cells[0]);
    rest.insert(rest.end(), cells.begin() + 1, cells.end());
  }
  std::shuffle(first.begin(), first.end(), *rng);
  std::shuffle(rest.begin(), rest.end(), *rng);
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

class Evolutionary : public SearchStrategy {
 public:
  explicit Evolutionary(const EvolutionOptions& options) : options_(options) {}
  std::string name() const override { return "evolutionary"; }

  void Search(Explorer& explorer, const SearchBudget& budget) override {
    std::mt19937_64 rng(options_.seed);
    int64_t evaluations = 0;
    int idle = 0;  // tries in a row that found no point to evaluate
    // Evaluates the plain form of `drawn`, then its prefetched twin (each counts).
    auto evaluate = [&](const std::optional<Point>& drawn) {
      const std::optional<Point> p =
          drawn.has_value() ? WithPrefetch(explorer, *drawn, false) : std::nullopt;
      if (!p.has_value() || explorer.Evaluated(*p)) {
        ++idle;
        return;
      }
      idle = 0;
      for (const std::optional<Point>& q : {p, WithPrefetch(explorer, *p, true)}) {
        if (!q.has_value() || explorer.Evaluated(*q) || budget.Spent(evaluations)) continue;
        explorer.Evaluate(*q);
        ++evaluations;
        if (budget.on_progress && evaluations % budget.progress_every == 0) budget.on_progress();
      }
    };
    // Survey: a random point of one cell of each group (mesh and distributed loops), then
    // of the other cells, in random order, within the survey's share of the evaluations.
    const int64_t survey = std::max<int64_t>(budget.max_evaluations / 4, options_.population);
    for (int cell : SurveyOrder(explorer, &rng)) {
      if (evaluations >= survey || budget.Spent(evaluations)) break;
      const std::optional<Point> p = explorer.SampleCell(cell, &rng);
      if (p.has_value() && Prefetches(explorer, *p)) continue;  // a twin, evaluated with its own
      evaluate(p);
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
      const std::vector<const Candidate*> elite = Elite(explorer);
      // Rank-biased parent: the best is drawn most often.
      std::geometric_distribution<size_t> rank(0.3);
      const Candidate* parent = elite[std::min(rank(rng), elite.size() - 1)];
      evaluate(explorer.Mutate(Point{parent->mesh, parent->genome}, &rng));
    }
    if (budget.on_progress) budget.on_progress();
  }

 private:
  // The best candidates, one per plain point (a point and its prefetched twin count once,
  // by the better of the two), at most options_.elite.
  std::vector<const Candidate*> Elite(Explorer& explorer) const {
    const size_t k = static_cast<size_t>(options_.elite);
    std::vector<const Candidate*> out;
    std::set<std::string> plain;
    for (const Candidate* c : explorer.Best(2 * k)) {
      const std::optional<Point> p = WithPrefetch(explorer, Point{c->mesh, c->genome}, false);
      if (p.has_value() &&
          !plain
               .insert(absl::StrCat(p->mesh, ":", p->genome.nest, ":", p->genome.rotation, ":",
                                    absl::StrJoin(p->genome.options, ",")))
               .second) {
        continue;
      }
      out.push_back(c);
      if (out.size() == k) break;
    }
    return out;
  }

  EvolutionOptions options_;
};

}  // namespace

std::unique_ptr<SearchStrategy> NewEvolutionaryStrategy(const EvolutionOptions& options) {
  return std::make_unique<Evolutionary>(options);
}

}  // namespace meshtune::search
