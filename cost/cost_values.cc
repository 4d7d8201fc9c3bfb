// The costed ranks of the cost model and the values of expressions on them (cost_values.h).
#include "cost/cost_values.h"

#include <algorithm>
#include <functional>
#include <variant>

#include "codegen/pattern.h"

namespace meshtune::cost::internal {

using codegen::Block;
using codegen::Expr;
using codegen::For;
using codegen::Program;
using codegen::StmtPtr;
using codegen::Transfer;

namespace {

// Which mesh axes the cost can depend on: an axis that no cost-relevant expression mentions
// (a broadcast root, a point-to-point or shift source, a loop's start) other than as the
// source's own coordinate along it gives every rank the same cost as its neighbours along
// it: the data moves within the rank's line along that axis the same way on every line.
// Ranks are then costed at coordinate 0 on such axes only (one class for the whole axis).
std::vector<bool> CostAxes(const Program& p) {
  std::vector<bool> relevant(p.axis_names.size(), false);
  // A given layout's redistribution loads differ from rank to rank (one in place has none).
  for (const codegen::TensorInfo& t : p.tensors) {
    if (codegen::Redistributed(p, t)) return std::vector<bool>(p.axis_names.size(), true);
  }
  auto mention = [&](const Expr& e) {
    std::vector<std::string> used;
    e.CollectVars(&used);
    for (size_t a = 0; a < p.axis_names.size(); ++a) {
      if (std::find(used.begin(), used.end(), p.axis_names[a]) != used.end()) relevant[a] = true;
    }
  };
  std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) walk(c);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      mention(f->lo);
      walk(f->body);
    } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
      const codegen::StepCalls steps = codegen::PatternOf(t->pattern.kind).Fetch(*t);
      const codegen::StepShape shape = codegen::ShapeOf(steps);
      const codegen::RuntimeCall* data = codegen::DataCall(steps);
      // An all-to-all's pieces differ from rank to rank (where its box meets the blocks).
      if (shape == codegen::StepShape::kAllToAll) relevant.assign(relevant.size(), true);
      if (data == nullptr || data->source.empty()) return;  // the own shard, or the holders
      for (size_t a = 0; a < data->source.size(); ++a) {
        const Expr& e = data->source[a];
        if (a < p.axis_names.size() && e.op() == Expr::Op::kVar && e.name() == p.axis_names[a])
          continue;  // the reader's own coordinate
        if (a < relevant.size()) relevant[a] = true;
        mention(e);
      }
    }
  };
  if (p.body) walk(p.body);
  return relevant;
}
}  // namespace

RankValues::RankValues(const Program& p, bool classes, int64_t max_ranks)
    : relevant_(classes ? CostAxes(p) : std::vector<bool>(p.axis_sizes.size(), true)) {
  int64_t classes_n = 1;
  for (size_t a = 0; a < p.axis_sizes.size(); ++a) {
    sizes_.push_back(relevant_[a] ? p.axis_sizes[a] : 1);
    classes_n *= sizes_.back();
  }
  subset_ = max_ranks > 0 && classes_n > max_ranks;
  ranks_ = subset_ ? max_ranks : classes_n;
  for (int64_t r = 0; r < ranks_; ++r)
    self_.push_back(subset_ ? static_cast<int64_t>((static_cast<__int128>(r) * classes_n) / ranks_)
                            : r);
  for (size_t a = 0; a < sizes_.size(); ++a) vars_.emplace_back(p.axis_names[a], Values(ranks_));
  for (int64_t r = 0; r < ranks_; ++r) {
    int64_t rest = self_[r];
    for (size_t a = sizes_.size(); a-- > 0;) {
      vars_[a].second[r] = rest % sizes_[a];
      rest /= sizes_[a];
    }
  }
}

int64_t RankValues::ClassOf(int64_t id, const std::vector<int64_t>& all_sizes) const {
  int64_t out = 0, stride = 1;
  for (size_t a = all_sizes.size(); a-- > 0;) {
    const int64_t c = id % all_sizes[a];
    id /= all_sizes[a];
    if (relevant_[a]) {
      out += c * stride;
      stride *= sizes_[a];
    }
  }
  return out;
}

int64_t RankValues::MeshRank(int64_t r, const std::vector<int64_t>& all_sizes) const {
  int64_t id = 0;
  for (size_t a = 0; a < all_sizes.size(); ++a) id = id * all_sizes[a] + vars_[a].second[r];
  return id;
}

void RankValues::RankIds(const std::vector<Expr>& coords, Values* out) {
  out->assign(ranks_, 0);
  Values& c = coord_;
  for (size_t a = 0; a < sizes_.size(); ++a) {
    if (a < coords.size()) {
      Eval(coords[a], &c);
    } else {
      c.assign(ranks_, 0);
    }
    for (int64_t r = 0; r < ranks_; ++r) {
      int64_t& id = (*out)[r];
      id = (id < 0 || c[r] < 0 || c[r] >= sizes_[a]) ? -1 : id * sizes_[a] + c[r];
    }
  }
}

void RankValues::EvalAt(const Expr& e, Values* out, size_t depth) {
  if (e.op() == Expr::Op::kConst) {
    out->assign(ranks_, e.value());
    return;
  }
  if (e.op() == Expr::Op::kVar) {
    const Values* v = Find(e.name());
    if (v != nullptr) {
      *out = *v;
    } else {
      out->assign(ranks_, 0);
    }
    return;
  }
  if (scratch_.size() <= depth) scratch_.resize(depth + 1);
  std::array<Values, 3>& a = scratch_[depth];
  const std::vector<Expr>& args = e.args();
  out->resize(ranks_);
  int64_t* o = out->data();
  // The common shapes in tight loops: an operation with a constant right operand, a sum
  // or difference; the rest through ApplyOp.
  if (args.size() == 2 && args[1].IsConst()) {
    EvalAt(args[0], &a[0], depth + 1);
    const int64_t* x = a[0].data();
    const int64_t k = args[1].value();
    switch (e.op()) {
      case Expr::Op::kAdd:
        for (int64_t r = 0; r < ranks_; ++r) o[r] = x[r] + k;
        return;
      case Expr::Op::kMul:
        for (int64_t r = 0; r < ranks_; ++r) o[r] = x[r] * k;
        return;
      case Expr::Op::kFloorDiv:
        for (int64_t r = 0; r < ranks_; ++r) o[r] = codegen::FloorDiv(x[r], k);
        return;
      case Expr::Op::kMod:
        for (int64_t r = 0; r < ranks_; ++r) o[r] = codegen::FloorMod(x[r], k);
        return;
      default:
        for (int64_t r = 0; r < ranks_; ++r) o[r] = codegen::ApplyOp(e.op(), x[r], k);
        return;
    }
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (i < args.size()) {
      EvalAt(args[i], &a[i], depth + 1);
    } else {
      a[i].assign(ranks_, 0);
    }
  }
  const int64_t *x = a[0].data(), *y = a[1].data(), *z = a[2].data();
  switch (e.op()) {
    case Expr::Op::kAdd:
      for (int64_t r = 0; r < ranks_; ++r) o[r] = x[r] + y[r];
      return;
    case Expr::Op::kSub:
      for (int64_t r = 0; r < ranks_; ++r) o[r] = x[r] - y[r];
      return;
    default:
      for (int64_t r = 0; r < ranks_; ++r) o[r] = codegen::ApplyOp(e.op(), x[r], y[r], z[r]);
  }
}

}  // namespace meshtune::cost::internal
