#include "search/explorer.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace meshtune::search {

namespace {

// The model's order: Explorer::Better, ties by evaluation order.
bool ModelOrder(const Candidate* a, const Candidate* b) {
  if (Explorer::Better(*a, *b)) return true;
  if (Explorer::Better(*b, *a)) return false;
  return a->order < b->order;
}

// Uniform integer in [0, n).
size_t Pick(size_t n, std::mt19937_64* rng) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(*rng);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Explorer>> Explorer::Create(const ir::Problem& problem,
                                                           const std::vector<ir::Mesh>& meshes,
                                                           const SpaceOptions& options,
                                                           const CostParams& params,
                                                           const std::function<bool()>& cancelled) {
  auto stop = [&] { return cancelled && cancelled(); };
  std::unique_ptr<Explorer> e(new Explorer());
  for (const ir::Mesh& mesh : meshes) {
    if (stop()) return absl::CancelledError("the tune was cancelled");
    absl::StatusOr<ir::Computation> base = ir::Computation::Create(problem, mesh);
    if (!base.ok()) return base.status();
    absl::StatusOr<Space> space = Space::Build(*base, options);
    if (!space.ok()) return space.status();
    e->evaluators_.push_back(
        std::make_unique<Evaluator>(*base, *std::move(space), ForRanks(params, mesh.Ranks())));
  }
  for (int m = 0; m < e->num_meshes(); ++m) {
    Evaluator& ev = *e->evaluators_[m];
    for (size_t n = 0; n < ev.space().nests().size(); ++n) {
      if (stop()) return absl::CancelledError("the tune was cancelled");
      for (size_t r = 0; r < ev.space().nests()[n].rotations.size(); ++r) {
        const NestTable& t = ev.Table(static_cast<int>(n), static_cast<int>(r));
        e->counts_.enumerated += t.points;
        e->counts_.legal += t.legal_points;
        for (const auto& [reason, count] : t.pruned) {
          if (count > 0) e->counts_.pruned[reason] += count;
        }
        if (t.legal_points > 0) {
          e->cells_.push_back({m, static_cast<int>(n), static_cast<int>(r)});
          e->cell_weights_.push_back(t.legal_points);
        }
      }
    }
  }
  return e;
}

std::string Explorer::Key(const Point& p) {
  return absl::StrCat(p.mesh, ":", p.genome.nest, ":", p.genome.rotation, ":",
                      absl::StrJoin(p.genome.options, ","));
}

void Explorer::ForEachLegal(const std::function<bool(const Point&)>& visit) {
  for (const std::array<int, 3>& cell : cells_) {
    Evaluator& ev = *evaluators_[cell[0]];
    const NestTable& t = ev.Table(cell[1], cell[2]);
    Point p;
    p.mesh = cell[0];
    p.genome.nest = cell[1];
    p.genome.rotation = cell[2];
    p.genome.options.assign(t.legal.size(), 0);
    // Odometer over the legal options of each tensor.
    std::vector<size_t> at(t.legal.size(), 0);
    while (true) {
      for (size_t i = 0; i < at.size(); ++i) p.genome.options[i] = t.legal[i][at[i]];
      if (ev.Legal(p.genome) && !visit(p)) return;
      size_t i = at.size();
      while (i > 0 && ++at[i - 1] == t.legal[i - 1].size()) at[--i] = 0;
      if (i == 0) break;
    }
  }
}

std::optional<Point> Explorer::Sample(std::mt19937_64* rng) {
  if (cells_.empty()) return std::nullopt;
  std::discrete_distribution<size_t> cell_dist(cell_weights_.begin(), cell_weights_.end());
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::optional<Point> p = SampleCell(static_cast<int>(cell_dist(*rng)), rng);
    if (p.has_value()) return p;
  }
  return std::nullopt;
}

std::optional<Point> Explorer::SampleCell(int cell, std::mt19937_64* rng) {
  const std::array<int, 3>& c = cells_[cell];
  Evaluator& ev = *evaluators_[c[0]];
  const NestTable& t = ev.Table(c[1], c[2]);
  for (int attempt = 0; attempt < 16; ++attempt) {
    Point p;
    p.mesh = c[0];
    p.genome.nest = c[1];
    p.genome.rotation = c[2];
    for (const std::vector<int>& legal : t.legal)
      p.genome.options.push_back(legal[Pick(legal.size(), rng)]);
    if (ev.Legal(p.genome)) return p;
  }
  return std::nullopt;
}

std::optional<Point> Explorer::Mutate(const Point& p, std::mt19937_64* rng) {
  for (int attempt = 0; attempt < 32; ++attempt) {
    Point q = p;
    Evaluator* ev = evaluators_[q.mesh].get();
    const size_t roll = Pick(20, rng);
    const int kind = roll < 14 ? 0 : roll < 17 ? 2 : 3;  // 0: an option; 2: rotation; 3: nest
    if (kind == 3) {
      // Another nest, possibly on another mesh; keep each tensor's layout and loop if legal.
      const std::array<int, 3>& cell = cells_[Pick(cells_.size(), rng)];
      q.mesh = cell[0];
      ev = evaluators_[q.mesh].get();
      q.genome.nest = cell[1];
      q.genome.rotation = cell[2];
    } else if (kind == 2) {
      q.genome.rotation =
          static_cast<int>(Pick(ev->space().nests()[q.genome.nest].rotations.size(), rng));
    }
    const NestTable& t = ev->Table(q.genome.nest, q.genome.rotation);
    if (!t.usable) continue;
    const NestChoices& to = ev->space().nests()[q.genome.nest];
    const NestChoices& from = evaluators_[p.mesh]->space().nests()[p.genome.nest];
    for (size_t i = 0; i < t.legal.size(); ++i) {
      if (t.legal[i].empty()) break;
      if (kind == 3) {
        // The same layout and communicate level, when the new nest offers it legally.
        const std::string want = from.options[i][p.genome.options[i]].Describe();
        int keep = -1;
        for (int o : t.legal[i]) {
          if (to.options[i][o].Describe() == want) keep = o;
        }
        q.genome.options[i] = keep >= 0 ? keep : t.legal[i][Pick(t.legal[i].size(), rng)];
      } else if (!std::binary_search(t.legal[i].begin(), t.legal[i].end(), q.genome.options[i])) {
        q.genome.options[i] = t.legal[i][Pick(t.legal[i].size(), rng)];
      }
    }
    if (kind <= 1 && !t.legal.empty()) {
      const size_t i = Pick(t.legal.size(), rng);
      if (!t.legal[i].empty()) q.genome.options[i] = t.legal[i][Pick(t.legal[i].size(), rng)];
    }
    if (!ev->Legal(q.genome) || Key(q) == Key(p)) continue;
    return q;
  }
  return std::nullopt;
}

bool Explorer::Evaluated(const Point& p) const { return seen_points_.count(Key(p)) > 0; }

const Candidate* Explorer::Evaluate(const Point& p) {
  if (!seen_points_.insert(Key(p)).second) return nullptr;
  ++counts_.evaluated;
  absl::StatusOr<Candidate> c = evaluators_[p.mesh]->Evaluate(p.genome);
  if (!c.ok()) {
    ++counts_.unlowerable;
    return nullptr;
  }
  c->mesh = p.mesh;
  auto [it, fresh] =
      programs_.emplace(absl::StrCat(p.mesh, "\n", c->program_key), candidates_.size());
  if (!fresh) {
    ++counts_.duplicates;
    return nullptr;
  }
  ++counts_.costed;
  c->order = static_cast<int64_t>(candidates_.size());
  candidates_.push_back(*std::move(c));
  return &candidates_.back();
}

std::vector<const Candidate*> Explorer::ToMeasure(size_t k) const {
  std::vector<const Candidate*> all;
  for (const Candidate& c : candidates_) all.push_back(&c);
  std::vector<ir::Mesh> meshes;
  for (int m = 0; m < num_meshes(); ++m) meshes.push_back(mesh(m));
  return ChooseToMeasure(std::move(all), meshes, k);
}

std::string FamilyOf(const Candidate& c, const ir::Mesh& mesh) {
  // Per tensor (in name order) its distinct patterns, in the order first seen.
  std::map<std::string, std::vector<std::string>> patterns;
  for (const TransferCost& t : c.cost.transfers) {
    if (t.pattern.kind == codegen::CommPattern::Kind::kLocal) continue;  // a copy, no message
    std::vector<std::string> axes;
    for (int a : t.pattern.axes) {
      axes.push_back(a >= 0 && a < static_cast<int>(mesh.axes.size()) ? mesh.axes[a].name
                                                                      : absl::StrCat(a));
    }
    // A prefetched (overlapped) transfer is another family: measurement decides overlap.
    const std::string p = absl::StrCat(
        t.pattern.Name(), axes.empty() ? "" : absl::StrCat("(", absl::StrJoin(axes, ","), ")"),
        t.prefetch != 0 ? " prefetched" : "");
    std::vector<std::string>& of = patterns[t.tensor];
    if (std::find(of.begin(), of.end(), p) == of.end()) of.push_back(p);
  }
  std::vector<std::string> parts;
  for (const auto& [tensor, of] : patterns)
    parts.push_back(absl::StrCat(tensor, " ", absl::StrJoin(of, "+")));
  return absl::StrCat(mesh.ToString(), ": ",
                      parts.empty() ? "no communication" : absl::StrJoin(parts, "; "));
}

std::vector<const Candidate*> ChooseToMeasure(std::vector<const Candidate*> candidates,
                                              const std::vector<ir::Mesh>& meshes, size_t k) {
  std::stable_sort(candidates.begin(), candidates.end(), ModelOrder);
  std::vector<const Candidate*> out;
  std::set<const Candidate*> taken;
  std::set<std::string> families;
  auto take = [&](const Candidate* c) {
    if (!taken.insert(c).second) return;
    out.push_back(c);
    families.insert(FamilyOf(*c, meshes[c->mesh]));
  };
  // 1. Each mesh's best, in the model's order, in up to half of the slots (at least 2).
  std::set<int> meshes_seen;
  const size_t champions = meshes.size() > 1 ? std::min(k, std::max<size_t>(2, k / 2)) : 0;
  for (const Candidate* c : candidates) {
    if (out.size() >= champions) break;
    if (meshes_seen.insert(c->mesh).second) take(c);
  }
  // 2. Each family's best among those predicted within kFamilyWindow of the best.
  const double window = candidates.empty() ? 0 : candidates[0]->cost.seconds * kFamilyWindow;
  for (const Candidate* c : candidates) {
    if (out.size() >= k || c->cost.seconds > window) break;
    if (families.count(FamilyOf(*c, meshes[c->mesh])) == 0) take(c);
  }
  // 3. The rest in the model's order.
  for (const Candidate* c : candidates) {
    if (out.size() >= k) break;
    take(c);
  }
  std::stable_sort(out.begin(), out.end(), ModelOrder);
  return out;
}

bool Explorer::Better(const Candidate& a, const Candidate& b) {
  if (a.cost.seconds != b.cost.seconds) return a.cost.seconds < b.cost.seconds;
  return a.cost.transfers.size() < b.cost.transfers.size();
}

std::vector<const Candidate*> Explorer::Best(size_t k) const {
  std::vector<const Candidate*> all;
  for (const Candidate& c : candidates_) all.push_back(&c);
  k = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + k, all.end(), ModelOrder);
  all.resize(k);
  return all;
}

}  // namespace meshtune::search
