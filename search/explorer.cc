#include "search/explorer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "codegen/pattern.h"

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
                                                           const cost::CostParams& params,
                                                           const std::function<bool()>& cancelled,
                                                           const JudgeOptions& judge) {
  auto stop = [&] { return cancelled && cancelled(); };
  std::unique_ptr<Explorer> e(new Explorer());
  for (const ir::Mesh& mesh : meshes) {
    if (stop()) return absl::CancelledError("the tune was cancelled");
    absl::StatusOr<ir::Computation> base = ir::Computation::Create(problem, mesh);
    if (!base.ok()) return base.status();
    absl::StatusOr<Space> space = Space::Build(*base, options);
    if (!space.ok()) return space.status();
    e->evaluators_.push_back(std::make_unique<Evaluator>(*base, *std::move(space),
                                                         cost::ForRanks(params, mesh.Ranks())));
  }
  // Every cell with points, counted by arithmetic.
  for (int m = 0; m < e->num_meshes(); ++m) {
    const Evaluator& ev = *e->evaluators_[m];
    for (size_t n = 0; n < ev.space().nests().size(); ++n) {
      for (size_t r = 0; r < ev.space().nests()[n].rotations.size(); ++r) {
        const int64_t points = ev.Points(static_cast<int>(n), static_cast<int>(r));
        if (points <= 0) continue;
        e->counts_.enumerated += points;
        e->cells_.push_back({m, static_cast<int>(n), static_cast<int>(r)});
      }
    }
  }
  e->counts_.cells = static_cast<int64_t>(e->cells_.size());
  e->dead_.assign(e->cells_.size(), false);
  const bool whole =
      judge.mode == JudgeOptions::Mode::kWhole ||
      (judge.mode == JudgeOptions::Mode::kAuto && e->counts_.enumerated <= judge.whole_points);
  e->lazy_ = !whole;
  if (whole) {
    if (absl::Status s = e->JudgeWhole(stop); !s.ok()) return s;
  } else {
    e->JudgeSample(judge);
  }
  return e;
}

absl::Status Explorer::JudgeWhole(const std::function<bool()>& stop) {
  std::vector<std::array<int, 3>> all = std::move(cells_);
  cells_.clear();
  counts_.legal = 0;
  counts_.pruned.clear();
  counts_.estimated = false;
  for (const std::array<int, 3>& cell : all) {
    if (stop()) return absl::CancelledError("the tune was cancelled");
    const NestTable& t = evaluators_[cell[0]]->Table(cell[1], cell[2]);
    counts_.legal += t.legal_points;
    for (const auto& [reason, count] : t.pruned) {
      if (count > 0) counts_.pruned[reason] += count;
    }
    if (t.legal_points > 0) {
      cells_.push_back(cell);
      cell_weights_.push_back(t.legal_points);
    }
  }
  counts_.judged_cells = counts_.cells;
  dead_.assign(cells_.size(), false);
  return absl::OkStatus();
}

void Explorer::JudgeSample(const JudgeOptions& judge) {
  std::mt19937_64 rng(judge.seed);
  std::vector<size_t> order(cells_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(std::min<size_t>(order.size(), std::max(judge.sample_cells, 0)));
  for (size_t i : order) {
    const std::array<int, 3>& c = cells_[i];
    Evaluator& ev = *evaluators_[c[0]];
    const NestChoices& choices = ev.space().nests()[c[1]];
    const Rotation& rot = choices.rotations[c[2]];
    for (size_t t = 0; t < choices.options.size(); ++t) {
      std::vector<int> admissible;
      for (size_t o = 0; o < choices.options[t].size(); ++o) {
        if (Admissible(choices.options[t][o], rot)) admissible.push_back(static_cast<int>(o));
      }
      std::shuffle(admissible.begin(), admissible.end(), rng);
      admissible.resize(std::min<size_t>(admissible.size(), judge.sample_options));
      for (int o : admissible) ev.OptionLegal(c[1], c[2], t, o);
      sample_[i].push_back(std::move(admissible));
    }
  }
}

const SearchCounts& Explorer::counts() const {
  if (lazy_) Reestimate();
  counts_.closed_form_checks = counts_.isl_checks = counts_.isl_lowerings = 0;
  for (const std::unique_ptr<Evaluator>& e : evaluators_) {
    counts_.closed_form_checks += e->legality().closed_form_checks();
    counts_.isl_checks += e->legality().isl_checks();
    counts_.isl_lowerings += e->isl_lowerings();
  }
  return counts_;
}

void Explorer::Reestimate() const {
  // Exact cells count as they are; the sampled ones stand for every other cell.
  double legal = 0, sampled_legal = 0, sampled_points = 0, other_points = 0, known = 0;
  std::map<std::string, double> pruned, sampled_pruned;
  int64_t judged = 0;
  for (size_t i = 0; i < cells_.size(); ++i) {
    const std::array<int, 3>& c = cells_[i];
    const Evaluator& ev = *evaluators_[c[0]];
    CellEstimate e = ev.Estimate(c[1], c[2]);
    judged += e.touched;
    if (e.exact) {
      legal += e.legal;
      for (const auto& [reason, n] : e.pruned) pruned[reason] += n;
      continue;
    }
    other_points += static_cast<double>(e.points);
    known += e.known;
    auto s = sample_.find(i);
    if (s == sample_.end()) continue;
    e = ev.Estimate(c[1], c[2], &s->second);
    sampled_points += static_cast<double>(e.points);
    sampled_legal += e.legal;
    for (const auto& [reason, n] : e.pruned) sampled_pruned[reason] += n;
  }
  const double scale = sampled_points > 0 ? other_points / sampled_points : 0;
  // The sample stands for the other cells, but they hold at least the points known legal
  // (a sample of a few cells can miss where legal points gather); the pruned shares give
  // way to them.
  const double other_legal = std::max(sampled_legal * scale, known);
  const double other_pruned = other_points - sampled_legal * scale;
  const double shrink =
      other_pruned > 0 ? std::max(0.0, other_points - other_legal) / other_pruned : 0;
  legal += other_legal;
  for (const auto& [reason, n] : sampled_pruned) pruned[reason] += n * scale * shrink;
  counts_.estimated = true;
  counts_.judged_cells = judged;
  counts_.legal = std::llround(legal);
  counts_.pruned.clear();
  for (const auto& [reason, n] : pruned) {
    const int64_t v = std::llround(n);
    if (v > 0) counts_.pruned[reason] = v;
  }
}

std::string Explorer::CellGroup(int cell) const {
  const std::array<int, 3>& c = cells_[cell];
  return absl::StrCat(
      c[0], ":", absl::StrJoin(evaluators_[c[0]]->space().nests()[c[1]].nest.distributed, ","));
}

std::string Explorer::Key(const Point& p) {
  return absl::StrCat(p.mesh, ":", p.genome.nest, ":", p.genome.rotation, ":",
                      absl::StrJoin(p.genome.options, ","));
}

void Explorer::ForEachLegal(const std::function<bool(const Point&)>& visit) {
  for (const std::array<int, 3>& cell : cells_) {
    Evaluator& ev = *evaluators_[cell[0]];
    const NestTable& t = ev.Table(cell[1], cell[2]);
    if (t.legal_points == 0) continue;  // lazily, cells are not known to hold legal points
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
  // Judged whole: weighted by legal points; lazily (not known): uniform.
  std::optional<std::discrete_distribution<size_t>> cell_dist;
  if (!lazy_) cell_dist.emplace(cell_weights_.begin(), cell_weights_.end());
  for (int attempt = 0; attempt < 8; ++attempt) {
    const size_t cell = lazy_ ? Pick(cells_.size(), rng) : (*cell_dist)(*rng);
    if (dead_[cell]) continue;
    std::optional<Point> p = SampleCell(static_cast<int>(cell), rng);
    if (p.has_value()) return p;
  }
  return std::nullopt;
}

std::optional<int> Explorer::LegalOption(const Point& q, size_t t, int keep, std::mt19937_64* rng) {
  Evaluator& ev = *evaluators_[q.mesh];
  if (keep >= 0 && ev.OptionLegal(q.genome.nest, q.genome.rotation, t, keep)) return keep;
  return ev.SampleOption(q.genome.nest, q.genome.rotation, t, /*distinct=*/false, rng);
}

std::optional<Point> Explorer::SampleCell(int cell, std::mt19937_64* rng) {
  const std::array<int, 3>& c = cells_[cell];
  Evaluator& ev = *evaluators_[c[0]];
  if (dead_[cell]) return std::nullopt;
  const size_t nt = ev.space().tensors().size();
  for (int attempt = 0; attempt < 16; ++attempt) {
    Point p;
    p.mesh = c[0];
    p.genome.nest = c[1];
    p.genome.rotation = c[2];
    for (size_t t = 0; t < nt; ++t) {
      const std::optional<int> o = LegalOption(p, t, -1, rng);
      if (!o.has_value()) {
        dead_[cell] = true;  // a tensor with no legal option: no legal point
        return std::nullopt;
      }
      p.genome.options.push_back(*o);
    }
    if (ev.RedundantRotation(p.genome)) {
      // Some tensor must be one the rotation changes: try them in random order.
      std::vector<size_t> tensors(nt);
      for (size_t t = 0; t < nt; ++t) tensors[t] = t;
      std::shuffle(tensors.begin(), tensors.end(), *rng);
      bool found = false;
      for (size_t t : tensors) {
        const std::optional<int> o = ev.SampleOption(c[1], c[2], t, /*distinct=*/true, rng);
        if (o.has_value()) {
          p.genome.options[t] = *o;
          found = true;
          break;
        }
      }
      if (!found) {
        dead_[cell] = true;
        return std::nullopt;
      }
    }
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
      const size_t cell = Pick(cells_.size(), rng);
      if (dead_[cell]) continue;
      q.mesh = cells_[cell][0];
      ev = evaluators_[q.mesh].get();
      q.genome.nest = cells_[cell][1];
      q.genome.rotation = cells_[cell][2];
    } else if (kind == 2) {
      q.genome.rotation =
          static_cast<int>(Pick(ev->space().nests()[q.genome.nest].rotations.size(), rng));
    }
    const NestChoices& to = ev->space().nests()[q.genome.nest];
    const NestChoices& from = evaluators_[p.mesh]->space().nests()[p.genome.nest];
    bool ok = true;
    for (size_t i = 0; ok && i < q.genome.options.size(); ++i) {
      int keep = q.genome.options[i];
      if (kind == 3) {
        // The same layout and communicate level, when the new nest offers it.
        const std::string want = from.options[i][p.genome.options[i]].Describe();
        keep = -1;
        for (size_t o = 0; o < to.options[i].size() && keep < 0; ++o) {
          if (to.options[i][o].Describe() == want) keep = static_cast<int>(o);
        }
      }
      const std::optional<int> o = LegalOption(q, i, keep, rng);
      ok = o.has_value();
      if (ok) q.genome.options[i] = *o;
    }
    if (!ok) continue;
    if (kind <= 1 && !q.genome.options.empty()) {
      const size_t i = Pick(q.genome.options.size(), rng);
      const std::optional<int> o =
          ev->SampleOption(q.genome.nest, q.genome.rotation, i, /*distinct=*/false, rng);
      if (o.has_value()) q.genome.options[i] = *o;
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
  double cutoff = best_seconds_ * bound_rule_.window;
  std::string* group = nullptr;
  if (bound_rule_.group) {
    const std::pair<int, int> nest(p.mesh, p.genome.nest);
    auto it = groups_.find(nest);
    if (it == groups_.end())
      it = groups_.emplace(nest, bound_rule_.group(p.mesh, p.genome.nest)).first;
    group = &it->second;
    const auto best = group_best_.find(*group);
    const double group_best =
        best == group_best_.end() ? std::numeric_limits<double>::infinity() : best->second;
    cutoff = std::max(cutoff, std::min(group_best, best_seconds_ * bound_rule_.group_window));
  }
  const std::string prefix = absl::StrCat(p.mesh, "\n");
  absl::StatusOr<Candidate> c = evaluators_[p.mesh]->Evaluate(
      p.genome, cutoff,
      [&](const std::string& key) { return programs_.count(absl::StrCat(prefix, key)) > 0; });
  if (absl::IsOutOfRange(c.status())) {
    ++counts_.bounded;
    return nullptr;
  }
  if (absl::IsAlreadyExists(c.status())) {
    ++counts_.duplicates;
    return nullptr;
  }
  if (!c.ok()) {
    ++counts_.unlowerable;
    return nullptr;
  }
  best_seconds_ = std::min(best_seconds_, c->cost.seconds);
  if (group != nullptr) {
    auto [it, fresh] = group_best_.emplace(*group, c->cost.seconds);
    if (!fresh) it->second = std::min(it->second, c->cost.seconds);
  }
  c->mesh = p.mesh;
  const bool fresh =
      programs_.emplace(absl::StrCat(prefix, c->program_key), candidates_.size()).second;
  MT_CHECK(fresh);  // `known` said so
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
  for (const cost::TransferCost& t : c.cost.transfers) {
    if (!codegen::PatternOf(t.pattern.kind).Sends()) continue;  // a copy, no message
    std::vector<std::string> axes;
    for (int a : t.pattern.axes) {
      axes.push_back(a >= 0 && a < static_cast<int>(mesh.axes.size()) ? mesh.axes[a].name
                                                                      : absl::StrCat(a));
    }
    // A prefetched (overlapped) transfer is another family: measurement decides overlap.
    // An input's copies (TENSOR@copies) are named so, not as the broadcast that makes them.
    const std::string p =
        absl::StrCat(t.loop == "copies" ? "copies" : t.pattern.Name(),
                     axes.empty() ? "" : absl::StrCat("(", absl::StrJoin(axes, ","), ")"),
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
