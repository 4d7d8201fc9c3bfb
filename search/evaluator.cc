#include "search/evaluator.h"

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
int64_t CountPoints(const std::vector<int64_t>& total, const std::vector<int64_t>& at_loop,
                    const Rotation& rot) {
  int64_t n = Product(total);
  if (!Plain(rot)) {
    std::vector<int64_t> off(total.size());
    for (size_t t = 0; t < total.size(); ++t) off[t] = total[t] - at_loop[t];
    n -= Product(off);
  }
  return n;
}

}  // namespace

Evaluator::Evaluator(ir::Computation base, Space space, const CostParams& params)
    : base_(std::move(base)), space_(std::move(space)), params_(params) {}

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

Evaluator::NestState& Evaluator::State(int nest, int rotation) {
  std::unique_ptr<NestState>& s = states_[{nest, rotation}];
  if (s == nullptr) {
    s = std::make_unique<NestState>();
    Build(nest, rotation, s.get());
  }
  return *s;
}

const NestTable& Evaluator::Table(int nest, int rotation) { return State(nest, rotation).table; }

void Evaluator::Build(int nest, int rotation, NestState* state) {
  const NestChoices& choices = space_.nests()[nest];
  const Rotation& rot = choices.rotations[rotation];
  const size_t nt = space_.tensors().size();
  NestTable& table = state->table;
  const bool budget = base_.mesh().mem_per_rank_bytes.has_value();

  // Per tensor: all options, those at the rotated loop, the legal ones, legal at the loop.
  OptionCounts n;
  n.all.assign(nt, 0);
  n.at.assign(nt, 0);
  n.legal.assign(nt, 0);
  n.legal_at.assign(nt, 0);
  for (size_t t = 0; t < nt; ++t) {
    for (const TensorOption& o : choices.options[t]) {
      if (!Admissible(o, rot)) continue;
      ++n.all[t];
      n.at[t] += Distinct(o, rot);
    }
  }
  table.points = CountPoints(n.all, n.at, rot);

  const absl::StatusOr<ir::Computation>& nest_c = NestComputation(nest);
  if (!nest_c.ok()) {
    table.pruned[ReasonOf(nest_c.status())] += table.points;
    state->built = true;
    return;
  }
  ir::Computation c = *nest_c;
  if (!rot.loop.empty()) {
    std::vector<ir::Loop> loops = c.loops();
    loops[c.LoopIndex(rot.loop)].rotate = rot.by;
    c = c.WithLoops(std::move(loops));
  }
  state->nest = c;
  table.usable = true;
  table.legal.assign(nt, {});
  state->options.assign(nt, {});
  for (size_t t = 0; t < nt; ++t) {
    for (size_t o = 0; o < choices.options[t].size(); ++o) {
      const TensorOption& opt = choices.options[t][o];
      OptionState st = CheckOption(c, t, opt, rot);
      if (st.legal) {
        table.legal[t].push_back(static_cast<int>(o));
        ++n.legal[t];
        n.legal_at[t] += Distinct(opt, rot);
      }
      state->options[t].push_back(std::move(st));
    }
  }
  CountRejections(choices, rot, n, state);
  table.legal_points = CountPoints(n.legal, n.legal_at, rot);

  // A memory budget couples the tensors: walk the legal combinations and add up bytes.
  if (budget && table.legal_points > 0) {
    const int64_t over = OverBudget(nest, rotation, *state);
    table.legal_points -= over;
    if (over > 0) table.pruned[std::string(ir::kOverMemoryBudget)] += over;
  }
  state->built = true;
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
    ct = ir::Communicate(*ct, name, opt.comm_loop,
                         opt.comm_loop == rot.loop ? rot.by : std::vector<std::string>{},
                         rot.prefetch && opt.at_time_loop ? 1 : 0);
  }
  if (!ct.ok()) {
    st.reason = ReasonOf(ct.status());
    return st;
  }
  const ir::LegalityCache::TensorChecks& k = legality_.Get(*ct, name);
  if (!k.ownership.empty()) {
    st.reason = k.ownership.front().code;
  } else if (!k.access.empty()) {
    st.reason = k.access.front().code;
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

void Evaluator::CountRejections(const NestChoices& choices, const Rotation& rot,
                                const OptionCounts& n, NestState* state) {
  // Rejections, each point by its first failing tensor: tensors before it legal, after it
  // anything (minus, for a rotation, the points with nothing at the rotated loop).
  const size_t nt = n.all.size();
  for (size_t t = 0; t < nt; ++t) {
    for (size_t o = 0; o < choices.options[t].size(); ++o) {
      const OptionState& st = state->options[t][o];
      if (st.legal || !Admissible(choices.options[t][o], rot)) continue;
      const bool o_at = Distinct(choices.options[t][o], rot);
      int64_t points = 1, off = 1;
      for (size_t j = 0; j < nt; ++j) {
        if (j < t) {
          points *= n.legal[j];
          off *= n.legal[j] - n.legal_at[j];
        } else if (j > t) {
          points *= n.all[j];
          off *= n.all[j] - n.at[j];
        }
      }
      if (!Plain(rot) && !o_at) points -= off;
      state->table.pruned[st.reason] += points;
    }
  }
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
  NestState& s = State(g.nest, g.rotation);
  if (!s.table.usable) return false;
  for (size_t t = 0; t < g.options.size(); ++t) {
    if (!s.options[t][g.options[t]].legal) return false;
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
                    l.axis, ":", l.origin, ":", l.stride, ":", absl::StrJoin(l.rotate, ","), "\n");
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
  NestState& s = State(g.nest, g.rotation);
  MT_CHECK(s.table.usable);
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

absl::StatusOr<Candidate> Evaluator::Evaluate(const Genome& g) {
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
  absl::StatusOr<CostReport> cost = EstimateCostWithin(*p, params_, kMaxCostWork);
  if (!cost.ok()) return cost.status();
  Candidate out;
  out.genome = g;
  out.trace = space_.ToTrace(g).ToString();
  out.cost = *std::move(cost);
  for (const TransferCost& t : out.cost.transfers) {
    out.patterns.push_back(codegen::PatternLabel(t.tensor, t.loop, t.pattern));
  }
  out.program_key = ProgramKey(*p, c);
  return out;
}

}  // namespace meshtune::search
