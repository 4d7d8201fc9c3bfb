// The cost model's walk of a Program (cost_walker.h): loop modes, the statements it
// numbers, kernels, and what the walk adds up to.
#include "cost/cost_walker.h"

#include <algorithm>
#include <set>
#include <utility>
#include <variant>

namespace meshtune::cost::internal {

namespace {

bool RefersTo(const std::vector<Expr>& exprs, const std::set<std::string>& vars) {
  std::vector<std::string> used;
  for (const Expr& e : exprs) e.CollectVars(&used);
  for (const std::string& u : used) {
    if (vars.count(u) > 0) return true;
  }
  return false;
}

// Whether the cost of `s` may change with the variables in `varying` (the loop variables of
// inner loops whose start refers to them vary too). A Shift timed by `first_only` is taken
// as invariant: its source matters only where that loop is 0.
bool Varies(const StmtPtr& s, std::set<std::string> varying, const std::string& first_only) {
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& c : b->body) {
      if (Varies(c, varying, first_only)) return true;
    }
    return false;
  }
  if (const auto* f = std::get_if<For>(&s->node)) {
    if (RefersTo({f->lo}, varying)) varying.insert(f->var);
    return Varies(f->body, std::move(varying), first_only);
  }
  if (const auto* t = std::get_if<Transfer>(&s->node)) {
    const codegen::StepCalls steps = codegen::PatternOf(t->pattern.kind).Fetch(*t);
    const codegen::RuntimeCall* data = codegen::DataCall(steps);
    switch (codegen::ShapeOf(steps)) {
      case codegen::StepShape::kBroadcast:
      case codegen::StepShape::kPointToPoint:
        return RefersTo(data->source, varying);
      case codegen::StepShape::kRing:
        if (steps.loop == first_only) return false;
        return varying.count(steps.loop) > 0 || RefersTo(data->source, varying);
      case codegen::StepShape::kAllToAll:
        return RefersTo(data->offset_at, varying);
      default:
        return false;
    }
  }
  return false;
}

LoopMode Classify(const For& f) {
  if (!Varies(f.body, {f.var}, "")) return LoopMode::kOnce;
  if (f.lo.IsConst() && f.lo.value() == 0 && !Varies(f.body, {f.var}, f.var))
    return LoopMode::kFirstThenRest;
  return LoopMode::kEach;
}

// Seconds of one kernel call `c`. A product of two operands with a GEMM table is (loops
// of) GEMMs: its tile's indices group into M (output and first operand), N (output and
// second), K (both operands, not the output) and batch (all three; anything else loops
// too), and each call takes the table's time for (M, N, K); inside a loop that drives
// prefetched statements (`chunked`) the runtime splits it into up to 8 calls of at least 64
// rows each (runtime/rank/rank_kernel.cc). Every other kernel: gamma per flop, flops = (operands)
// per tile point for a product, one per point for a sum.
double KernelSeconds(const Compute& c, const CostParams& params, bool chunked) {
  if (params.gemm.Empty() || c.sum || c.in.size() != 2) {
    double points = 1;
    for (const auto& [index, extent] : c.tile) points *= static_cast<double>(extent);
    const double flops_per_point = c.sum ? 1.0 : static_cast<double>(c.in.size());
    return flops_per_point * points * params.gamma;
  }
  auto uses = [](const codegen::Operand& o, const std::string& index) {
    return std::find(o.dims.begin(), o.dims.end(), index) != o.dims.end();
  };
  int64_t m = 1, n = 1, k = 1, loops = 1;
  for (const auto& [index, extent] : c.tile) {
    const bool out = uses(c.out, index), a = uses(c.in[0], index), b = uses(c.in[1], index);
    if (out && a && !b) {
      m *= extent;
    } else if (out && b && !a) {
      n *= extent;
    } else if (a && b && !out) {
      k *= extent;
    } else {
      loops *= extent;
    }
  }
  const int64_t chunks = chunked ? std::max<int64_t>(1, std::min<int64_t>(8, m / 64)) : 1;
  return static_cast<double>(loops * chunks) * params.gemm.Seconds(m / chunks, n, k);
}

}  // namespace

CostWalker::CostWalker(const Program& p, const CostParams& params, bool classes, int64_t max_ranks)
    : p_(p),
      params_(params),
      shortcuts_(classes),
      values_(p, classes, max_ranks),
      comm_(values_.ranks()),
      hidden_(values_.ranks()),
      words_(values_.ranks()) {
  outer_ = OuterAxes(p, params);
  CostCopies();
  CostGiven();
  if (p.body) Index(p.body);
}

void CostWalker::Walk(const StmtPtr& s, int64_t times) {
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& c : b->body) Walk(c, times);
  } else if (const auto* f = std::get_if<For>(&s->node)) {
    WalkFor(*f, times);
  } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
    CostTransfer(*t, tallies_[index_.at(s.get())], times);
  } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
    CostReduce(*r, tallies_[index_.at(s.get())], times);
  } else if (std::holds_alternative<Compute>(s->node)) {
    compute_ += kernels_.at(s.get())[inflight_ > 0 ? 1 : 0] * static_cast<double>(times);
  }
}

int64_t CostWalker::Work(const StmtPtr& s, int64_t visits) const {
  auto mul = [](int64_t a, int64_t b) {
    int64_t out = 0;
    return __builtin_mul_overflow(a, b, &out) ? INT64_MAX : out;
  };
  auto add = [](int64_t a, int64_t b) {
    int64_t out = 0;
    return __builtin_add_overflow(a, b, &out) ? INT64_MAX : out;
  };
  if (const auto* b = std::get_if<Block>(&s->node)) {
    int64_t sum = 0;
    for (const StmtPtr& c : b->body) sum = add(sum, Work(c, visits));
    return sum;
  }
  if (const auto* f = std::get_if<For>(&s->node)) {
    switch (modes_.at(f)) {
      case LoopMode::kOnce:
        return Work(f->body, visits);
      case LoopMode::kFirstThenRest:
        return mul(Work(f->body, visits), 2);
      case LoopMode::kEach: {
        const Parts parts = Split(*f);
        int64_t sum = 0;
        for (const StmtPtr& c : parts.invariant) sum = add(sum, Work(c, visits));
        for (const StmtPtr& c : parts.varying) sum = add(sum, Work(c, mul(visits, f->extent)));
        return sum;
      }
    }
  }
  if (std::holds_alternative<Transfer>(s->node) || std::holds_alternative<Reduce>(s->node))
    return mul(visits, values_.ranks());
  return 0;
}

double CostWalker::LowerBound() const {
  double out = 0;
  for (int64_t r = 0; r < values_.ranks(); ++r)
    out = std::max(out, comm_[r] + compute_ - hidden_[r]);
  return out;
}

CostReport CostWalker::Report() const {
  CostReport out;
  const int64_t n = values_.ranks();
  std::vector<double> seconds(n);
  int64_t critical = 0;
  for (int64_t r = 0; r < n; ++r) {
    seconds[r] = comm_[r] + compute_ - hidden_[r];
    // Ties (within rounding: sums taken in another order) go to the lowest rank.
    if (seconds[r] > seconds[critical] * (1 + 1e-12)) critical = r;
    out.comm_words_per_rank = std::max(out.comm_words_per_rank, words_[r]);
  }
  // Every mesh rank costs what the costed rank standing for it does; the critical rank is
  // the lowest of the critical class (costed ranks are in mesh-rank order).
  out.rank_seconds.resize(p_.Ranks());
  for (int64_t id = 0; id < p_.Ranks(); ++id)
    out.rank_seconds[id] = seconds[values_.ClassOf(id, p_.axis_sizes)];
  out.critical_rank = static_cast<int>(values_.MeshRank(critical, p_.axis_sizes));
  const int64_t c = critical;
  out.seconds = n > 0 ? seconds[c] : 0;
  out.compute_seconds = compute_;
  out.comm_seconds = n > 0 ? comm_[c] : 0;
  out.overlap_seconds = n > 0 ? hidden_[c] : 0;
  for (const Tally& t : tallies_) {
    out.transfers.push_back({t.tensor, t.loop, t.pattern, t.seconds[c], t.messages[c],
                             t.words[c] * p_.dtype_bytes, t.prefetch});
    switch (t.term) {
      case TermClass::kPointToPoint:
        out.point_to_point_seconds += t.seconds[c];
        break;
      case TermClass::kCollective:
        out.collective_seconds += t.seconds[c];
        break;
      case TermClass::kReduction:
        out.reduction_seconds += t.seconds[c];
        break;
    }
  }
  return out;
}

void CostWalker::Index(const StmtPtr& s) {
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& c : b->body) Index(c);
  } else if (const auto* f = std::get_if<For>(&s->node)) {
    modes_[f] = Classify(*f);
    Index(f->body);
  } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
    const codegen::StepShape shape =
        codegen::ShapeOf(codegen::PatternOf(t->pattern.kind).Fetch(*t));
    const bool collective =
        shape == codegen::StepShape::kBroadcast || shape == codegen::StepShape::kAllGather;
    AddTally(s, t->tensor, t->loop, t->pattern, t->prefetch, CopySeconds(*t),
             collective ? TermClass::kCollective : TermClass::kPointToPoint);
  } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
    AddTally(s, r->tensor, r->loop, r->pattern, r->prefetch, 0, TermClass::kReduction);
  } else if (const auto* c = std::get_if<Compute>(&s->node)) {
    const double scale = params_.scales.compute;
    kernels_[s.get()] = {scale * KernelSeconds(*c, params_, false),
                         scale * KernelSeconds(*c, params_, true)};
  }
}

void CostWalker::AddTally(const StmtPtr& s, const std::string& tensor, const std::string& loop,
                          const CommPattern& pattern, int prefetch, double copy, TermClass term) {
  const int64_t n = values_.ranks();
  index_[s.get()] = tallies_.size();
  tallies_.push_back({tensor, loop, pattern, prefetch, term == TermClass::kReduction, 1, copy,
                      std::vector<double>(n), Values(n), Values(n), term});
  Tally& t = tallies_.back();
  const TermScales& k = params_.scales;
  switch (t.term) {
    case TermClass::kPointToPoint:
      t.scale = k.point_to_point;
      break;
    case TermClass::kCollective:
      t.scale = k.collective;
      break;
    case TermClass::kReduction:
      t.scale = k.reduction;
      break;
  }
}

void CostWalker::WalkFor(const For& f, int64_t times) {
  if (f.extent <= 0) return;
  Values lo;
  values_.Eval(f.lo, &lo);
  const size_t slot = values_.Push(f.var, lo);
  fors_.push_back(&f);
  CostRings(f, times);
  const std::vector<const codegen::Stmt*> driven = codegen::PrefetchedIn(f);
  if (!driven.empty()) {
    WalkOverlapped(f, driven, slot, times);
    fors_.pop_back();
    values_.Pop();
    return;
  }
  switch (modes_.at(&f)) {
    case LoopMode::kOnce:
      Walk(f.body, times * f.extent);
      break;
    case LoopMode::kFirstThenRest:
      Walk(f.body, times);
      if (f.extent > 1) {
        for (int64_t& v : values_.Slot(slot)) v += 1;
        Walk(f.body, times * (f.extent - 1));
      }
      break;
    case LoopMode::kEach: {
      // What does not vary with the loop is costed once for every iteration.
      const Parts parts = Split(f);
      for (const StmtPtr& s : parts.invariant) Walk(s, times * f.extent);
      for (int64_t i = 0; i < f.extent; ++i) {
        if (i > 0) {
          for (int64_t& v : values_.Slot(slot)) v += 1;
        }
        for (const StmtPtr& s : parts.varying) Walk(s, times);
      }
      break;
    }
  }
  fors_.pop_back();
  values_.Pop();
}

CostWalker::Parts CostWalker::Split(const For& f) const {
  Parts out;
  const auto* b = std::get_if<Block>(&f.body->node);
  if (b == nullptr || !shortcuts_) {
    out.varying.push_back(f.body);
    return out;
  }
  for (const StmtPtr& s : b->body)
    (Varies(s, {f.var}, "") ? out.varying : out.invariant).push_back(s);
  return out;
}

}  // namespace meshtune::cost::internal
