// The cost model's loops that drive prefetched statements (cost_walker.h): what
// communication overlapping kernels hides.
#include <algorithm>
#include <utility>
#include <variant>

#include "cost/cost_walker.h"

namespace meshtune::cost::internal {

CostWalker::Iteration CostWalker::WalkIteration(const std::vector<StmtPtr>& body,
                                                const std::vector<const codegen::Stmt*>& driven,
                                                double count, int64_t times) {
  const int64_t n = values_.ranks();
  auto prefetched = [&](bool input) {
    std::vector<double> sum(n, 0);
    for (const codegen::Stmt* d : driven) {
      if (std::holds_alternative<Transfer>(d->node) != input) continue;
      const Tally& t = tallies_[index_.at(d)];
      for (int64_t r = 0; r < n; ++r) sum[r] += t.seconds[r];
    }
    return sum;
  };
  const double compute0 = compute_;
  const std::vector<double> hidden0 = hidden_, in0 = prefetched(true), out0 = prefetched(false);
  for (const StmtPtr& s : body) Walk(s, times * static_cast<int64_t>(count));
  const double m = count * static_cast<double>(times);
  Iteration it;
  it.compute = (compute_ - compute0) / m;
  const std::vector<double> in1 = prefetched(true), out1 = prefetched(false);
  for (int64_t r = 0; r < n; ++r) {
    it.nested.push_back((hidden_[r] - hidden0[r]) / m);
    it.in.push_back((in1[r] - in0[r]) / m);
    it.out.push_back((out1[r] - out0[r]) / m);
  }
  return it;
}

void CostWalker::WalkOverlapped(const For& f, const std::vector<const codegen::Stmt*>& driven,
                                size_t slot, int64_t times) {
  const LoopMode mode = modes_.at(&f);
  const int64_t e = f.extent;
  const bool reductions = std::any_of(driven.begin(), driven.end(), [](const codegen::Stmt* d) {
    return !std::holds_alternative<Transfer>(d->node);
  });
  // Whether the last step runs whole kernels; it is then walked on its own where it would
  // otherwise share a representative iteration.
  const bool whole_last = !reductions && e > 1;
  const bool last_apart = whole_last && mode != LoopMode::kEach;
  // Representative iterations: one for all (kOnce), the first and one for the rest
  // (kFirstThenRest), or each; then the last one if apart.
  std::vector<Iteration> reps;
  const std::vector<StmtPtr> body = {f.body};
  // Walked each: the statements that vary, once per iteration, plus the same share of
  // those that do not (walked once for all).
  const Parts parts = mode == LoopMode::kEach ? Split(f) : Parts{};
  auto walk = [&](const std::vector<StmtPtr>& stmts, double count, bool in_flight) {
    inflight_ += in_flight ? 1 : 0;
    Iteration it = WalkIteration(stmts, driven, count, times);
    inflight_ -= in_flight ? 1 : 0;
    return it;
  };
  // What does not vary, per iteration: with something in flight, and at the last step.
  Iteration invariant, invariant_last;
  if (mode == LoopMode::kEach) {
    invariant = walk(parts.invariant, static_cast<double>(whole_last ? e - 1 : e), true);
    invariant_last = whole_last ? walk(parts.invariant, 1, false) : invariant;
  }
  const double rest = static_cast<double>(last_apart ? e - 1 : e);
  for (int64_t i = 0; i < e; ++i) {
    if (i > 0) {
      for (int64_t& v : values_.Slot(slot)) v += 1;
    }
    if (mode == LoopMode::kOnce) {
      reps.push_back(walk(body, rest, true));
      break;
    }
    if (mode == LoopMode::kFirstThenRest && i == 1) {
      if (rest > 1) reps.push_back(walk(body, rest - 1, true));
      break;
    }
    if (mode == LoopMode::kFirstThenRest) {
      reps.push_back(walk(body, 1, e > 1));
      continue;
    }
    Iteration it = walk(parts.varying, 1, i + 1 < e || (reductions && i > 0));
    const Iteration& same = i + 1 < e ? invariant : invariant_last;
    it.compute += same.compute;
    for (int64_t r = 0; r < values_.ranks(); ++r) {
      it.nested[r] += same.nested[r];
      it.in[r] += same.in[r];
      it.out[r] += same.out[r];
    }
    reps.push_back(std::move(it));
  }
  if (last_apart) reps.push_back(walk(body, 1, false));
  const int64_t shared = static_cast<int64_t>(reps.size()) - (last_apart ? 2 : 1);
  auto rep = [&](int64_t i) -> const Iteration& {
    return last_apart && i == e - 1 ? reps.back() : reps[std::min<int64_t>(i, shared)];
  };
  // Steps 2 .. e-3 are alike unless each is walked; the others are summed one by one.
  std::vector<std::pair<int64_t, double>> steps;  // (step, how many like it)
  if (mode == LoopMode::kEach || e <= 4) {
    for (int64_t i = 0; i < e; ++i) steps.emplace_back(i, 1);
  } else {
    steps = {{0, 1}, {1, 1}, {2, static_cast<double>(e - 4)}, {e - 2, 1}, {e - 1, 1}};
  }
  for (int64_t r = 0; r < values_.ranks(); ++r) {
    double saved = 0;
    for (const auto& [i, like] : steps) {
      const Iteration& it = rep(i);
      const double in = i + 1 < e ? rep(i + 1).in[r] : 0;
      const double out = i > 0 ? rep(i - 1).out[r] : 0;
      saved += like * std::min(std::max(0.0, it.compute - it.nested[r]), in + out);
    }
    hidden_[r] += params_.overlap * saved * static_cast<double>(times);
  }
}

}  // namespace meshtune::cost::internal
