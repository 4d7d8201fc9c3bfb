#include "search/evaluator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "ir/primitives.h"
#include "ir/reason.h"
#include "ir/trace.h"

namespace meshtune::search {

namespace {

// The rejection code `s` carries, or "malformed" for a status that is not a rejection (a
// space that generated a call the primitives refuse: an internal problem, counted apart).
std::string ReasonOf(const absl::Status& s) {
  std::optional<ir::Rejection> r = ir::AsRejection(s);
  return r.has_value() ? r->code : "malformed";
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Points of a (nest, rotation) whose tensors have total[t] options, at_loop[t] of them
// Distinct under the rotation (communicated at the rotated loop; for a prefetch without
// rotation, at a time loop): every combination, and for a rotation that is not Plain only
// those with some tensor's option Distinct (the others equal points of a plainer rotation).
template <typename T>
T CountPoints(const std::vector<T>& total, const std::vector<T>& at_loop, const Rotation& rot) {
  T n = 1;
  for (T x : total) n *= x;
  if (!Plain(rot)) {
    T off = 1;
    for (size_t t = 0; t < total.size(); ++t) off *= total[t] - at_loop[t];
    n -= off;
  }
  return n;
}

std::vector<double> AsDoubles(const std::vector<int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace

Evaluator::Evaluator(ir::Computation base, Space space, const cost::CostParams& params,
                     bool closed_form_legality)
    : base_(std::move(base)),
      space_(std::move(space)),
      params_(params),
      legality_(/*messages=*/false, closed_form_legality) {}

const absl::StatusOr<ir::Computation>& Evaluator::NestComputation(int nest) {
  auto it = nest_computations_.find(nest);
  if (it != nest_computations_.end()) return it->second;
  const LoopNest& n = space_.nests()[nest].nest;
  absl::StatusOr<ir::Computation> c = base_;
  for (const ir::Instruction& inst : n.calls) {
    if (!c.ok()) break;
    c = ir::Apply(*c, inst);
  }
  if (c.ok()) c = ir::Apply(*c, n.tensorize);
  return nest_computations_.emplace(nest, std::move(c)).first->second;
}

const absl::StatusOr<ir::Sharding>& Evaluator::ShardingOf(
    size_t tensor, const std::vector<ir::ShardTarget>& targets) {
  const std::string& name = space_.tensors()[tensor];
  std::string key = name;
  for (const ir::ShardTarget& t : targets)
    absl::StrAppend(&key, " ", t.dim, "@", t.target.ToString());
  auto it = shardings_.find(key);
  if (it != shardings_.end()) return it->second;
  absl::StatusOr<ir::Sharding> out;
  absl::StatusOr<ir::Computation> c = ir::Shard(base_, name, targets);
  if (c.ok()) {
    out = *c->sharding(name);
  } else {
    out = c.status();
  }
  return shardings_.emplace(std::move(key), std::move(out)).first->second;
}

Evaluator::NestState& Evaluator::Prepared(int nest, int rotation) {
  std::unique_ptr<NestState>& s = states_[{nest, rotation}];
  if (s != nullptr) return *s;
  s = std::make_unique<NestState>();
  const NestChoices& choices = space_.nests()[nest];
  const Rotation& rot = choices.rotations[rotation];
  const size_t nt = space_.tensors().size();
  OptionCounts& n = s->counts;
  CountAdmissible(nest, rotation, &n.all, &n.at);
  n.legal.assign(nt, 0);
  n.legal_at.assign(nt, 0);
  s->judged_count.assign(nt, 0);
  s->table.points = CountPoints(n.all, n.at, rot);
  const absl::StatusOr<ir::Computation>& nest_c = NestComputation(nest);
  if (!nest_c.ok()) {
    s->nest_reason = ReasonOf(nest_c.status());
    return *s;
  }
  ir::Computation c = *nest_c;
  if (!rot.loop.empty()) {
    std::vector<ir::Loop> loops = c.loops();
    loops[c.LoopIndex(rot.loop)].rotate = rot.by;
    loops[c.LoopIndex(rot.loop)].rotate_step = rot.step;
    c = c.WithLoops(std::move(loops));
  }
  s->nest = std::move(c);
  s->usable = true;
  s->options.resize(nt);
  s->judged.resize(nt);
  for (size_t t = 0; t < nt; ++t) {
    s->options[t].resize(choices.options[t].size());
    s->judged[t].assign(choices.options[t].size(), false);
  }
  return *s;
}

const Evaluator::OptionState& Evaluator::Judge(int nest, int rotation, NestState* state, size_t t,
                                               int o) {
  OptionState& st = state->options[t][o];
  if (state->judged[t][o]) return st;
  const NestChoices& choices = space_.nests()[nest];
  const Rotation& rot = choices.rotations[rotation];
  const TensorOption& opt = choices.options[t][o];
  st = CheckOption(*state->nest, t, opt, rot);
  state->judged[t][o] = true;
  if (Admissible(opt, rot)) {
    ++state->judged_count[t];
    if (st.legal) {
      ++state->counts.legal[t];
      state->counts.legal_at[t] += Distinct(opt, rot);
    }
  }
  return st;
}

Evaluator::NestState& Evaluator::State(int nest, int rotation) {
  NestState& s = Prepared(nest, rotation);
  if (!s.built) Build(nest, rotation, &s);
  return s;
}

const NestTable& Evaluator::Table(int nest, int rotation) { return State(nest, rotation).table; }

void Evaluator::CountAdmissible(int nest, int rotation, std::vector<int64_t>* all,
                                std::vector<int64_t>* at) const {
  const NestChoices& choices = space_.nests()[nest];
  const Rotation& rot = choices.rotations[rotation];
  all->assign(choices.options.size(), 0);
  at->assign(choices.options.size(), 0);
  for (size_t t = 0; t < choices.options.size(); ++t) {
    for (const TensorOption& o : choices.options[t]) {
      if (!Admissible(o, rot)) continue;
      ++(*all)[t];
      (*at)[t] += Distinct(o, rot);
    }
  }
}

int64_t Evaluator::Points(int nest, int rotation) const {
  auto it = states_.find({nest, rotation});
  if (it != states_.end()) return it->second->table.points;
  std::vector<int64_t> all, at;
  CountAdmissible(nest, rotation, &all, &at);
  return CountPoints(all, at, space_.nests()[nest].rotations[rotation]);
}

bool Evaluator::OptionLegal(int nest, int rotation, size_t t, int o) {
  NestState& s = Prepared(nest, rotation);
  if (!s.usable) return false;
  return Judge(nest, rotation, &s, t, o).legal;
}

std::string Evaluator::OptionReason(int nest, int rotation, size_t t, int o) {
  NestState& s = Prepared(nest, rotation);
  if (!s.usable) return s.nest_reason;
  const OptionState& st = Judge(nest, rotation, &s, t, o);
  return st.legal ? "" : st.reason;
}

std::optional<int> Evaluator::SampleOption(int nest, int rotation, size_t t, bool distinct,
                                           std::mt19937_64* rng) {
  NestState& s = Prepared(nest, rotation);
  if (!s.usable) return std::nullopt;
  const NestChoices& choices = space_.nests()[nest];
  const Rotation& rot = choices.rotations[rotation];
  std::vector<int> order;
  for (size_t o = 0; o < choices.options[t].size(); ++o) {
    const TensorOption& opt = choices.options[t][o];
    if (Admissible(opt, rot) && (!distinct || Distinct(opt, rot)))
      order.push_back(static_cast<int>(o));
  }
  std::shuffle(order.begin(), order.end(), *rng);
  for (int o : order) {
    if (Judge(nest, rotation, &s, t, o).legal) return o;
  }
  return std::nullopt;
}

CellEstimate Evaluator::Estimate(int nest, int rotation,
                                 const std::vector<std::vector<int>>* sample) const {
  CellEstimate e;
  auto it = states_.find({nest, rotation});
  if (it == states_.end()) {
    e.points = Points(nest, rotation);
    e.legal = static_cast<double>(e.points);  // nothing known yet
    return e;
  }
  const NestState& s = *it->second;
  e.points = s.table.points;
  e.touched = true;
  if (s.built || !s.usable) {
    e.exact = true;
    e.legal = static_cast<double>(s.table.legal_points);
    for (const auto& [reason, n] : s.table.pruned) e.pruned[reason] = static_cast<double>(n);
    if (!s.usable) e.pruned[s.nest_reason] = static_cast<double>(e.points);
    return e;
  }
  const size_t nt = s.counts.all.size();
  bool all_judged = true;
  for (size_t t = 0; t < nt; ++t) all_judged = all_judged && s.judged_count[t] == s.counts.all[t];
  const bool budget = base_.mesh().mem_per_rank_bytes.has_value();
  const NestChoices& choices = space_.nests()[nest];
  const Rotation& rot = choices.rotations[rotation];
  if (!budget) {
    e.known =
        std::max(0.0, CountPoints(AsDoubles(s.counts.legal), AsDoubles(s.counts.legal_at), rot));
  }
  if (!all_judged && sample == nullptr) return e;
  // Per tensor the judged options taken into account: all of them, or the sample.
  std::vector<double> legal(nt), legal_at(nt), weight(nt);
  std::vector<std::vector<bool>> taken(nt);
  for (size_t t = 0; t < nt; ++t) {
    taken[t].assign(choices.options[t].size(), false);
    int64_t judged = 0, ok = 0, ok_at = 0;
    auto take = [&](int o) {
      if (!s.judged[t][o] || !Admissible(choices.options[t][o], rot)) return;
      taken[t][o] = true;
      ++judged;
      ok += s.options[t][o].legal;
      ok_at += s.options[t][o].legal && Distinct(choices.options[t][o], rot);
    };
    if (all_judged) {
      for (size_t o = 0; o < choices.options[t].size(); ++o) take(static_cast<int>(o));
    } else {
      for (int o : (*sample)[t]) take(o);
    }
    weight[t] = judged > 0 ? static_cast<double>(s.counts.all[t]) / judged : 0;
    legal[t] = ok * weight[t];
    legal_at[t] = ok_at * weight[t];
  }
  e.exact = all_judged && !budget;
  e.legal = std::max(0.0, CountPoints(legal, legal_at, rot));
  e.pruned = CountRejections(choices, rot, s, taken, legal, legal_at, weight);
  return e;
}

void Evaluator::Build(int nest, int rotation, NestState* state) {
  const NestChoices& choices = space_.nests()[nest];
  const Rotation& rot = choices.rotations[rotation];
  const size_t nt = space_.tensors().size();
  NestTable& table = state->table;
  state->built = true;
  if (!state->usable) {
    table.pruned[state->nest_reason] += table.points;
    return;
  }
  table.usable = true;
  table.legal.assign(nt, {});
  for (size_t t = 0; t < nt; ++t) {
    for (size_t o = 0; o < choices.options[t].size(); ++o) {
      if (Judge(nest, rotation, state, t, static_cast<int>(o)).legal)
        table.legal[t].push_back(static_cast<int>(o));
    }
  }
  const OptionCounts& n = state->counts;
  const std::vector<double> ones(nt, 1.0);
  for (const auto& [reason, points] : CountRejections(
           choices, rot, *state, state->judged, AsDoubles(n.legal), AsDoubles(n.legal_at), ones)) {
    table.pruned[reason] += std::llround(points);
  }
  table.legal_points = CountPoints(n.legal, n.legal_at, rot);

  // A memory budget couples the tensors: walk the legal combinations and add up bytes.
  if (base_.mesh().mem_per_rank_bytes.has_value() && table.legal_points > 0) {
    const int64_t over = OverBudget(nest, rotation, *state);
    table.legal_points -= over;
    if (over > 0) table.pruned[std::string(ir::kOverMemoryBudget)] += over;
  }
}

Evaluator::OptionState Evaluator::CheckOption(const ir::Computation& c, size_t t,
                                              const TensorOption& opt, const Rotation& rot) {
  const std::string& name = space_.tensors()[t];
  const ir::Problem& problem = base_.problem();
  const bool budget = base_.mesh().mem_per_rank_bytes.has_value();
  OptionState st;
  if (!Admissible(opt, rot)) {
    st.reason = "inadmissible";  // not a point of this cell; never counted
    return st;
  }
  absl::StatusOr<ir::Computation> ct = c;
  if (!opt.targets.empty()) {
    const absl::StatusOr<ir::Sharding>& sh = ShardingOf(t, opt.targets);
    ct = sh.ok() ? absl::StatusOr<ir::Computation>(c.WithSharding(name, *sh)) : sh.status();
  }
  if (ct.ok() && !opt.comm_loop.empty()) {
    ct = ir::Communicate(
        *ct, name, opt.comm_loop, opt.comm_loop == rot.loop ? rot.by : std::vector<std::string>{},
        rot.prefetch && opt.at_time_loop ? 1 : 0, opt.comm_loop == rot.loop ? rot.step : 1);
  }
  if (!ct.ok()) {
    st.reason = ReasonOf(ct.status());
    return st;
  }
  const ir::LegalityCache::TensorChecks& k = legality_.Get(*ct, name);
  // A transfer from several ranks' shards is an all-to-all, searched only when asked for.
  const ir::Rejection* access = nullptr;
  for (const ir::Rejection& r : k.access) {
    if (space_.all_to_all() && r.code == ir::kMultiSourceTransfer) continue;
    access = &r;
    break;
  }
  if (!k.ownership.empty()) {
    st.reason = k.ownership.front().code;
  } else if (access != nullptr) {
    st.reason = access->code;
  } else {
    st.legal = true;
    if (budget) {
      const ir::Sharding* s = ct->sharding(name);
      st.bytes = ir::DTypeBytes(problem.dtype) *
                     Product(s != nullptr ? s->local_shape : problem.Shape(name)) +
                 std::max<int64_t>(k.buffer_bytes, 0);
    }
  }
  if (const ir::Sharding* sh = ct->sharding(name)) st.sharding = *sh;
  if (const ir::Communication* tr = ct->TransferOf(name)) st.transfer = *tr;
  return st;
}

std::map<std::string, double> Evaluator::CountRejections(
    const NestChoices& choices, const Rotation& rot, const NestState& state,
    const std::vector<std::vector<bool>>& taken, const std::vector<double>& legal,
    const std::vector<double>& legal_at, const std::vector<double>& weight) {
  // Each point by its first failing tensor: tensors before it legal, after it anything
  // (minus, for a rotation, the points with nothing Distinct).
  std::map<std::string, double> pruned;
  const OptionCounts& n = state.counts;
  const size_t nt = n.all.size();
  for (size_t t = 0; t < nt; ++t) {
    for (size_t o = 0; o < choices.options[t].size(); ++o) {
      const OptionState& st = state.options[t][o];
      if (!taken[t][o] || st.legal || !Admissible(choices.options[t][o], rot)) continue;
      const bool o_at = Distinct(choices.options[t][o], rot);
      double points = 1, off = 1;
      for (size_t j = 0; j < nt; ++j) {
        if (j < t) {
          points *= legal[j];
          off *= legal[j] - legal_at[j];
        } else if (j > t) {
          points *= static_cast<double>(n.all[j]);
          off *= static_cast<double>(n.all[j] - n.at[j]);
        }
      }
      if (!Plain(rot) && !o_at) points -= off;
      pruned[st.reason] += points * weight[t];
    }
  }
  return pruned;
}

int64_t Evaluator::OverBudget(int nest, int rotation, const NestState& state) const {
  const size_t nt = space_.tensors().size();
  const int64_t limit = *base_.mesh().mem_per_rank_bytes;
  int64_t over = 0;
  Genome g;
  g.nest = nest;
  g.rotation = rotation;
  g.options.assign(nt, 0);
  std::function<void(size_t, int64_t)> walk = [&](size_t t, int64_t bytes) {
    if (t == nt) {
      if (bytes > limit && !RedundantRotation(g)) ++over;
      return;
    }
    for (int o : state.table.legal[t]) {
      g.options[t] = o;
      walk(t + 1, bytes + state.options[t][o].bytes);
    }
  };
  walk(0, 0);
  return over;
}

bool Evaluator::RedundantRotation(const Genome& g) const {
  const NestChoices& choices = space_.nests()[g.nest];
  const Rotation& rot = choices.rotations[g.rotation];
  if (Plain(rot)) return false;
  for (size_t t = 0; t < g.options.size(); ++t) {
    if (Distinct(choices.options[t][g.options[t]], rot)) return false;
  }
  return true;
}

int64_t Evaluator::Bytes(const NestState& s, const Genome& g) const {
  int64_t bytes = 0;
  for (size_t t = 0; t < g.options.size(); ++t) bytes += s.options[t][g.options[t]].bytes;
  return bytes;
}

bool Evaluator::Legal(const Genome& g) {
  if (RedundantRotation(g)) return false;
  NestState& s = Prepared(g.nest, g.rotation);
  if (!s.usable) return false;
  for (size_t t = 0; t < g.options.size(); ++t) {
    if (!Judge(g.nest, g.rotation, &s, t, g.options[t]).legal) return false;
  }
  const std::optional<int64_t>& budget = base_.mesh().mem_per_rank_bytes;
  return !budget.has_value() || Bytes(s, g) <= *budget;
}

std::string Evaluator::ProgramKey(const codegen::Program& p, const ir::Computation& c) {
  std::string key = codegen::Dump(p);
  // The loops outside the kernel: the boxes' origins are functions of them (the order of
  // the tensorized loops inside the kernel is not).
  for (const ir::Loop& l : c.loops()) {
    if (l.kind == ir::LoopKind::kTensorized) continue;
    absl::StrAppend(&key, "loop ", l.name, ":", l.extent, ":", static_cast<int>(l.kind), ":",
                    l.axis, ":", l.origin, ":", l.stride, ":", absl::StrJoin(l.rotate, ","), "*",
                    l.rotate_step, "\n");
  }
  for (const codegen::TensorInfo& t : p.tensors) {
    absl::StrAppend(&key, "layout ", t.name);
    for (const codegen::DimLayout& d : t.layout) {
      absl::StrAppend(&key, " [");
      for (const auto& [block, index] : d.blocks)
        absl::StrAppend(&key, block, "*", index.ToString(), ";");
      absl::StrAppend(&key, "]");
    }
    absl::StrAppend(&key, "\n");
  }
  return key;
}

ir::Computation Evaluator::Assemble(const Genome& g) {
  NestState& s = Prepared(g.nest, g.rotation);
  MT_CHECK(s.usable);
  for (size_t t = 0; t < g.options.size(); ++t) Judge(g.nest, g.rotation, &s, t, g.options[t]);
  ir::Computation c = *s.nest;
  const std::vector<std::string>& tensors = space_.tensors();
  for (size_t t = 0; t < tensors.size(); ++t) {
    const OptionState& o = s.options[t][g.options[t]];
    if (o.sharding.has_value()) c = c.WithSharding(tensors[t], *o.sharding);
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    const OptionState& o = s.options[t][g.options[t]];
    if (o.transfer.has_value()) c = c.WithTransfer(*o.transfer);
  }
  return c;
}

absl::StatusOr<Candidate> Evaluator::Evaluate(
    const Genome& g, double cutoff, const std::function<bool(const std::string&)>& known) {
  const ir::Computation c = Assemble(g);
  absl::StatusOr<codegen::Program> p = closed_form_.Lower(c);
  if (absl::IsUnimplemented(p.status())) {
    ++isl_lowerings_;
    codegen::LowerOptions options;
    options.cache = &lowering_;
    options.offsets = false;  // costing needs no offsets; the runner lowers the trace afresh
    p = codegen::Lower(c, options);
  }
  if (!p.ok()) return p.status();
  std::string key = ProgramKey(*p, c);
  if (known && known(key)) return absl::AlreadyExistsError("a Program already costed");
  // Too long to cost (cost::EstimateCostWithin says so below) needs no bound; a bound is walked
  // only when it takes at most a quarter of the full walk: on one rank class first (the
  // cheapest), then 8, then kBoundRanks.
  const int64_t work =
      cutoff < std::numeric_limits<double>::infinity() ? cost::EstimateCostWork(*p) : 0;
  if (work > kBoundWork && work <= cost::kMaxCostWork) {
    for (int64_t ranks : {int64_t{1}, int64_t{8}, kBoundRanks}) {
      const absl::StatusOr<double> bound =
          cost::EstimateCostLowerBound(*p, params_, ranks, work / 4);
      if (bound.ok() && *bound > cutoff) {
        return absl::OutOfRangeError(absl::StrCat(
            "bounded: at least ", *bound, " s by the model, more than the cutoff ", cutoff));
      }
    }
  }
  absl::StatusOr<cost::CostReport> cost = cost::EstimateCostWithin(*p, params_, cost::kMaxCostWork);
  if (!cost.ok()) return cost.status();
  Candidate out;
  out.genome = g;
  out.schedule = space_.ToTrace(g);
  out.trace = out.schedule.ToString();
  out.cost = *std::move(cost);
  for (const cost::TransferCost& t : out.cost.transfers) {
    out.patterns.push_back(codegen::PatternLabel(t.tensor, t.loop, t.pattern));
  }
  out.program_key = std::move(key);
  return out;
}

}  // namespace meshtune::search
