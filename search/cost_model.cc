#include "search/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/expr.h"
#include "codegen/pattern.h"
#include "search/given_cost.h"

namespace meshtune::search {

namespace {

using codegen::Block;
using codegen::CommPattern;
using codegen::Compute;
using codegen::Expr;
using codegen::For;
using codegen::Program;
using codegen::Reduce;
using codegen::StmtPtr;
using codegen::Transfer;
using Kind = CommPattern::Kind;
using Values = std::vector<int64_t>;  // one value per rank, by row-major rank id

// Which mesh axes the cost can depend on: an axis that no cost-relevant expression mentions
// (a broadcast root, a point-to-point or shift source, a loop's start) other than as the
// source's own coordinate along it gives every rank the same cost as its neighbours along
// it: the data moves within the rank's line along that axis the same way on every line.
// Ranks are then costed at coordinate 0 on such axes only (one class for the whole axis).
}  // namespace

int64_t NodeRanks(const Program& p, const CostParams& params) {
  for (size_t a = 0; a < p.axis_names.size(); ++a) {
    if (p.axis_names[a] != "node") continue;
    int64_t inner = 1;
    for (size_t b = a + 1; b < p.axis_sizes.size(); ++b) inner *= p.axis_sizes[b];
    return inner;
  }
  return params.node_ranks;
}

std::vector<bool> OuterAxes(const Program& p, const CostParams& params) {
  std::vector<bool> outer(p.axis_sizes.size(), false);
  const int64_t node = NodeRanks(p, params);
  if (node <= 0 || (params.alpha_node == 0 && params.beta_node == 0)) return outer;
  int64_t stride = 1;  // of the axis, row-major (the last fastest)
  for (size_t a = p.axis_sizes.size(); a-- > 0;) {
    const int64_t span = stride * p.axis_sizes[a];
    // Inside a node when every run of `span` ranks it moves along lies in one node.
    outer[a] = p.axis_sizes[a] > 1 && node % span != 0;
    stride = span;
  }
  return outer;
}

namespace {

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

// Variables bound to one value per costed rank: the mesh coordinates, then the enclosing
// loops. The costed ranks are those at coordinate 0 along the axes CostAxes leaves out,
// numbered row-major over the others.
class RankValues {
 public:
  // With `max_ranks` > 0 and more classes than that, only `max_ranks` of them are costed,
  // evenly spaced over the class ids (the first among them): a subset, for lower bounds.
  RankValues(const Program& p, bool classes, int64_t max_ranks = 0)
      : relevant_(classes ? CostAxes(p) : std::vector<bool>(p.axis_sizes.size(), true)) {
    int64_t classes_n = 1;
    for (size_t a = 0; a < p.axis_sizes.size(); ++a) {
      sizes_.push_back(relevant_[a] ? p.axis_sizes[a] : 1);
      classes_n *= sizes_.back();
    }
    subset_ = max_ranks > 0 && classes_n > max_ranks;
    ranks_ = subset_ ? max_ranks : classes_n;
    for (int64_t r = 0; r < ranks_; ++r)
      self_.push_back(
          subset_ ? static_cast<int64_t>((static_cast<__int128>(r) * classes_n) / ranks_) : r);
    for (size_t a = 0; a < sizes_.size(); ++a) vars_.emplace_back(p.axis_names[a], Values(ranks_));
    for (int64_t r = 0; r < ranks_; ++r) {
      int64_t rest = self_[r];
      for (size_t a = sizes_.size(); a-- > 0;) {
        vars_[a].second[r] = rest % sizes_[a];
        rest /= sizes_[a];
      }
    }
  }

  int64_t ranks() const { return ranks_; }
  // Whether only a subset of the classes is costed (see the constructor).
  bool subset() const { return subset_; }
  // The class id (row-major over the class grid, as RankIds gives) of costed rank `r`.
  int64_t Self(int64_t r) const { return self_[r]; }

  // The costed rank standing for mesh rank `id` (row-major over `all_sizes`).
  int64_t ClassOf(int64_t id, const std::vector<int64_t>& all_sizes) const {
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
  // The lowest mesh rank that costed rank `r` stands for.
  int64_t MeshRank(int64_t r, const std::vector<int64_t>& all_sizes) const {
    int64_t id = 0;
    for (size_t a = 0; a < all_sizes.size(); ++a) id = id * all_sizes[a] + vars_[a].second[r];
    return id;
  }

  // Binds `name` to `values` until the matching Pop; returns its slot for Set.
  size_t Push(const std::string& name, Values values) {
    vars_.emplace_back(name, std::move(values));
    return vars_.size() - 1;
  }
  Values& Slot(size_t slot) { return vars_[slot].second; }
  void Pop() { vars_.pop_back(); }

  // The innermost binding of `name`, or null.
  const Values* Find(const std::string& name) const {
    for (size_t i = vars_.size(); i-- > 0;) {
      if (vars_[i].first == name) return &vars_[i].second;
    }
    return nullptr;
  }

  // `e` on every rank; unbound variables are 0, as in the executor.
  void Eval(const Expr& e, Values* out) { EvalAt(e, out, 0); }

  // Each rank's row-major id of the coordinates `coords` (one per axis) among the costed
  // ranks; -1 off the mesh.
  void RankIds(const std::vector<Expr>& coords, Values* out) {
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

 private:
  // Eval with scratch vectors per recursion depth (no allocation once they have grown).
  void EvalAt(const Expr& e, Values* out, size_t depth) {
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

  std::vector<bool> relevant_;
  std::vector<int64_t> sizes_;  // per axis: its size, or 1 when left out
  int64_t ranks_ = 1;
  bool subset_ = false;
  Values self_;  // per costed rank, its class id
  std::vector<std::pair<std::string, Values>> vars_;
  Values coord_;                               // RankIds' scratch
  std::deque<std::array<Values, 3>> scratch_;  // a deque: deeper levels keep references valid
};

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

// How a For is costed: once times its extent, first iteration plus one representative of
// the rest, or every iteration.
enum class LoopMode { kOnce, kFirstThenRest, kEach };

LoopMode Classify(const For& f) {
  if (!Varies(f.body, {f.var}, "")) return LoopMode::kOnce;
  if (f.lo.IsConst() && f.lo.value() == 0 && !Varies(f.body, {f.var}, f.var))
    return LoopMode::kFirstThenRest;
  return LoopMode::kEach;
}

// Whether a box of sizes `len` is one contiguous run in a row-major array of `shape` (as
// the runtime decides whether to pack it): after its leading dims of size 1, every dim
// but the first is whole. Unknown shapes (`shape` shorter than `len`) count as contiguous.
bool Contiguous(const std::vector<int64_t>& len, const std::vector<int64_t>& shape) {
  if (shape.size() < len.size()) return true;
  size_t d = 0;
  while (d < len.size() && len[d] == 1) ++d;
  for (++d; d < len.size(); ++d) {
    if (len[d] != shape[d]) return false;
  }
  return true;
}

// Seconds of one kernel call `c`. A product of two operands with a GEMM table is (loops
// of) GEMMs: its tile's indices group into M (output and first operand), N (output and
// second), K (both operands, not the output) and batch (all three; anything else loops
// too), and each call takes the table's time for (M, N, K); inside a loop that drives
// prefetched statements (`chunked`) the runtime splits it into up to 8 calls of at least 64
// rows each (runtime/rank.cc). Every other kernel: gamma per flop, flops = (operands) per
// tile point for a product, one per point for a sum.
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

int64_t GroupSize(const Program& p, const std::vector<int>& axes) {
  int64_t g = 1;
  for (int a : axes) g *= p.axis_sizes[a];
  return g;
}

// The classes of communication TermScales scales.
enum class TermClass { kPointToPoint, kCollective, kReduction };

// Per-rank totals of one Transfer or Reduce statement.
struct Tally {
  std::string tensor, loop;
  CommPattern pattern;
  int prefetch = 0;
  bool reduction = false;  // a Reduce statement (else a Transfer)
  double scale = 1;        // the TermScales multiplier of its class
  // Seconds of the local copies one instance makes (CostWalker::CopySeconds), fixed per
  // statement: worked out once, not at every visit of the walk.
  double copy = 0;
  std::vector<double> seconds;
  std::vector<int64_t> messages, words;
  // A point-to-point fetch or ring step, a collective (a broadcast or all-gather), or a
  // reduction: which TermScales multiplier applies and which total the seconds join.
  TermClass term = TermClass::kPointToPoint;
};

class CostWalker {
 public:
  // With `max_ranks` > 0, costs at most that many classes and charges a point-to-point
  // fetch only the receive (a lower bound on every costed rank: LowerBound).
  CostWalker(const Program& p, const CostParams& params, bool classes, int64_t max_ranks = 0)
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

  void Walk(const StmtPtr& s, int64_t times) {
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

  // Rank-steps the walk of `s` (visited `visits` times) evaluates: each Transfer or Reduce
  // visit costs one per costed rank. Saturates at INT64_MAX.
  int64_t Work(const StmtPtr& s, int64_t visits) const {
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

  // The largest total among the costed ranks.
  double LowerBound() const {
    double out = 0;
    for (int64_t r = 0; r < values_.ranks(); ++r)
      out = std::max(out, comm_[r] + compute_ - hidden_[r]);
    return out;
  }

  CostReport Report() const {
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

 private:
  // Numbers the Transfer and Reduce statements in program order.
  void Index(const StmtPtr& s) {
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

  void AddTally(const StmtPtr& s, const std::string& tensor, const std::string& loop,
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

  void WalkFor(const For& f, int64_t times) {
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

  // The statements of a loop's body whose cost does not change with its variable, and the
  // others.
  struct Parts {
    std::vector<StmtPtr> invariant, varying;
  };
  Parts Split(const For& f) const {
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

  // What one iteration of a loop with prefetched statements costs, per rank.
  struct Iteration {
    double compute = 0;           // kernels inside (the same on every rank)
    std::vector<double> nested;   // per rank: what loops inside already hide
    std::vector<double> in, out;  // per rank: the prefetched transfers / reductions
  };

  // Walks one iteration of `f`'s body (the loop variable set), counted `count` times, and
  // returns what a single one costs.
  Iteration WalkIteration(const std::vector<StmtPtr>& body,
                          const std::vector<const codegen::Stmt*>& driven, double count,
                          int64_t times) {
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

  // A loop that drives prefetched statements (codegen::PrefetchedIn). Everything is charged
  // as in a plain loop; what overlap hides is counted in hidden_: at step i the kernels
  // (less what inner loops already hide with them) run while step i+1's transfers and step
  // i-1's reductions are in flight, so per rank the loop saves
  //   overlap * sum over i of min(compute_i, in_{i+1} + out_{i-1})   (in_E = out_-1 = 0),
  // i.e. with overlap 1 it costs in_0 + sum_i max(compute_i, in_{i+1} + out_{i-1}) +
  // out_{E-1} plus its other communication, serial. The kernels of a step with something in
  // flight run in row chunks; without prefetched reductions the last step has nothing in
  // flight, so it is walked on its own, with whole kernels.
  void WalkOverlapped(const For& f, const std::vector<const codegen::Stmt*>& driven, size_t slot,
                      int64_t times) {
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

  // Adds `times` instances of `seconds` (scaled by the class) and `messages` received (each
  // with TermScales::message's wait) to rank r's tally.
  void Charge(Tally& t, int64_t r, double seconds, int64_t words, int64_t messages, int64_t times) {
    const double s = (t.scale * seconds + params_.scales.message * static_cast<double>(messages)) *
                     static_cast<double>(times);
    t.seconds[r] += s;
    comm_[r] += s;
    t.words[r] += words * times;
    words_[r] += words * times;
    t.messages[r] += messages * times;
  }

  // What the transfer's step runs (codegen/pattern.h), costed by its runtime calls.
  void CostTransfer(const Transfer& t, Tally& tally, int64_t times) {
    const int64_t n = values_.ranks();
    const int64_t elements = t.global.Elements();
    const double w = static_cast<double>(elements * p_.dtype_bytes);
    const codegen::StepCalls steps = codegen::PatternOf(t.pattern.kind).Fetch(t);
    const codegen::RuntimeCall* data = codegen::DataCall(steps);
    switch (codegen::ShapeOf(steps)) {
      case codegen::StepShape::kLocal:
        return;
      case codegen::StepShape::kBroadcast: {
        if (GroupSize(p_, data->axes) <= 1) return;
        const double seconds =
            CollectiveSeconds(Collective::kBroadcast, data->axes, w, t.prefetch != 0);
        const double pack = tally.copy;  // on the root, a box not contiguous in its shard
        Values& root = source_;
        values_.RankIds(data->source, &root);
        for (int64_t r = 0; r < n; ++r) {
          const bool receives = root[r] != values_.Self(r);
          Charge(tally, r, seconds + (receives ? 0 : pack), receives ? elements : 0,
                 receives ? 1 : 0, times);
        }
        return;
      }
      case codegen::StepShape::kAllGather: {
        const int64_t g = GroupSize(p_, data->axes);
        if (g <= 1) return;
        const double seconds =
            CollectiveSeconds(Collective::kAllGather, data->axes, w, t.prefetch != 0) + tally.copy;
        for (int64_t r = 0; r < n; ++r)
          Charge(tally, r, seconds, elements * (g - 1) / g, g - 1, times);
        return;
      }
      case codegen::StepShape::kRing: {
        const Values* time = values_.Find(steps.loop);
        std::vector<bool> first(n, true);
        bool any_first = false;
        for (int64_t r = 0; r < n; ++r) {
          first[r] = time == nullptr || (*time)[r] == 0;
          any_first = any_first || first[r];
        }
        if (any_first) PointToPoint(t, tally, first, times);
        const codegen::RuntimeCall& turn = steps.then[0];
        const int axis = turn.axis;
        const bool self = p_.axis_sizes.empty() || turn.shift % p_.axis_sizes[axis] == 0;
        if (self) return;
        // The first ring step sends the data the fetch left in place, a box of the shard,
        // packed first when it is not contiguous there: charged with the fetch, once for
        // the ring (the first iteration is costed on its own; later ones stand for many).
        for (int64_t r = 0; r < n; ++r) {
          if (first[r]) {
            if (tally.copy > 0 && time != nullptr) Charge(tally, r, tally.copy, 0, 0, times);
            continue;
          }
          Charge(tally, r, Message(Across({axis}), w), elements, 1, times);
        }
        return;
      }
      case codegen::StepShape::kAllToAll:
        AllToAll(t, tally, times);
        return;
      default:  // a point-to-point fetch
        PointToPoint(t, tally, std::vector<bool>(n, true), times);
        return;
    }
  }

  // An all-to-all fetch: each rank receives, one message from each, the pieces of its box
  // that the layout's other blocks hold (blocks lie at multiples of the shard's extent
  // along each dim), and sends about as much (its pieces to the others are alike), plus
  // the copies into the buffer (CopySeconds).
  void AllToAll(const Transfer& t, Tally& tally, int64_t times) {
    const codegen::TensorInfo* info = p_.Tensor(t.tensor);
    const int64_t n = values_.ranks();
    const size_t nd = t.global.offset.size();  // lowered with its offsets, always
    if (nd != t.global.size.size()) {          // a program without them: one message of the box
      const double w = static_cast<double>(t.global.Elements() * p_.dtype_bytes);
      for (int64_t r = 0; r < n; ++r)
        Charge(tally, r, Message(false, w), t.global.Elements(), 1, times);
      return;
    }
    std::vector<Values> off(nd), start(nd);
    Values index;
    for (size_t d = 0; d < nd; ++d) {
      values_.Eval(t.global.offset[d], &off[d]);
      start[d].assign(n, 0);
      if (info == nullptr || d >= info->layout.size()) continue;
      for (const auto& [block, expr] : info->layout[d].blocks) {
        values_.Eval(expr, &index);
        for (int64_t r = 0; r < n; ++r) start[d][r] += block * index[r];
      }
    }
    const bool across = Across(AllAxes());
    for (int64_t r = 0; r < n; ++r) {
      int64_t pieces = 1, own = 1;
      for (size_t d = 0; d < nd; ++d) {
        const int64_t extent = info != nullptr ? std::max<int64_t>(info->local_shape[d], 1) : 1;
        const int64_t o = off[d][r], s = t.global.size[d];
        pieces *= codegen::FloorDiv(o + s - 1, extent) - codegen::FloorDiv(o, extent) + 1;
        own *=
            std::max<int64_t>(0, std::min(o + s, start[d][r] + extent) - std::max(o, start[d][r]));
      }
      const int64_t received = t.global.Elements() - own;
      const int64_t messages = pieces - (own > 0 ? 1 : 0);
      double seconds = tally.copy;
      if (messages > 0) {
        seconds += static_cast<double>(messages - 1) * Message(across, 0) +
                   Message(across, static_cast<double>(received * p_.dtype_bytes));
      }
      Charge(tally, r, seconds, received, messages, times);
    }
  }

  // The copies of each input the layout replicates (codegen::ReplicatedAxes), made once a
  // run by a broadcast of the shard along those axes from their coordinate 0: charged to
  // every rank, as a transfer "TENSOR@copies".
  void CostCopies() {
    for (const codegen::TensorInfo& t : p_.tensors) {
      if (t.is_output || t.given.kind != ir::GivenLayout::Kind::kBlock) continue;
      const std::vector<int> axes = codegen::ReplicatedAxes(p_, t);
      if (axes.empty()) continue;
      int64_t elements = 1;
      for (int64_t e : t.local_shape) elements *= e;
      CommPattern pattern;
      pattern.kind = Kind::kBroadcast;
      pattern.axes = axes;
      const int64_t n = values_.ranks();
      tallies_.push_back({t.name, "copies", pattern, 0, false, params_.scales.collective, 0,
                          std::vector<double>(n), Values(n), Values(n), TermClass::kCollective});
      const double seconds = CollectiveSeconds(
          Collective::kBroadcast, axes, static_cast<double>(elements * p_.dtype_bytes), false);
      for (int64_t r = 0; r < n; ++r) Charge(tallies_.back(), r, seconds, elements, 1, 1);
    }
  }

  // The redistributions of tensors in given layouts (search/given_cost.h), each one
  // all-to-all exchange a run: a rank pays the calibrated all-to-all over the mesh for the
  // larger of the bytes it sends and receives (without a calibrated one, a message per
  // peer it exchanges with and those bytes at beta), and a copy pass over what it packs,
  // unpacks and copies locally (at the strided rate where a piece has a stride, as in a
  // ScaLAPACK local matrix). Charged as transfers
  // "TENSOR@layout" (into the shards) and "TENSOR@layout-out" (back), point-to-point.
  void CostGiven() {
    for (const codegen::TensorInfo& t : p_.tensors) {
      if (!codegen::Redistributed(p_, t)) continue;
      const std::shared_ptr<const GivenLoads> loads = LoadsOf(p_, t);
      ChargeLoads(t.name, "layout", loads->in);
      ChargeLoads(t.name, "layout-out", loads->out);
    }
  }
  void ChargeLoads(const std::string& tensor, const std::string& loop,
                   const std::vector<runtime::RankLoad>& loads) {
    if (loads.empty()) return;
    CommPattern pattern;
    pattern.kind = Kind::kSendRecv;
    pattern.axes = AllAxes();
    const int64_t n = values_.ranks();
    tallies_.push_back({tensor, loop, pattern, 0, false, params_.scales.point_to_point, 0,
                        std::vector<double>(n), Values(n), Values(n)});
    const double bytes = p_.dtype_bytes;
    // Between nodes when the mesh spans them (a rank's peers may be anywhere).
    const bool across = Across(pattern.axes);
    const double alpha = across ? params_.alpha_node : params_.alpha;
    const double beta = across ? params_.beta_node : params_.beta;
    // Where calibration timed MPI_Alltoall itself: its line over the mesh's ranks, for a
    // rank's box of which it sends and receives the larger share (the exchange waits
    // for its slowest pair as the collective does).
    const bool calibrated = params_.collectives.Has(Collective::kAllToAll);
    const int64_t g = p_.Ranks();
    for (int64_t r = 0; r < n; ++r) {
      const runtime::RankLoad& l = loads[static_cast<size_t>(values_.Self(r))];
      const double moved = bytes * static_cast<double>(std::max(l.sent, l.received));
      double exchange = alpha * static_cast<double>(std::max(l.sends, l.receives)) + beta * moved;
      if (calibrated && g > 1) {
        exchange = moved > 0 ? CollectiveSeconds(Collective::kAllToAll, pattern.axes,
                                                 moved * static_cast<double>(g) / (g - 1), false)
                             : 0;
      }
      const double passed = bytes * static_cast<double>(l.sent + l.received + l.copied);
      const double strided = bytes * static_cast<double>(l.strided);
      const double gather = params_.gather > 0 ? params_.gather : params_.copy;
      const double seconds = exchange + params_.copy * (passed - strided) + gather * strided;
      Charge(tallies_.back(), r, seconds, l.received, std::max(l.sends, l.receives), 1);
    }
  }

  // A general fetch on the ranks in `active`: each pays max(receives, sends) messages.
  void PointToPoint(const Transfer& t, Tally& tally, const std::vector<bool>& active,
                    int64_t times) {
    const int64_t n = values_.ranks();
    const int64_t elements = t.global.Elements();
    const double message =
        Message(Across(SourceAxes(t)), static_cast<double>(elements * p_.dtype_bytes));
    const double pack = tally.copy;  // on each box a rank sends not contiguous in its shard
    Values& source = source_;
    Values& sends = sends_;
    sends.assign(n, 0);
    values_.RankIds(t.source, &source);
    // On a subset of the ranks the senders are unknown: receives only (a lower bound).
    for (int64_t r = 0; r < n && !values_.subset(); ++r) {
      if (active[r] && source[r] >= 0 && source[r] != r) ++sends[source[r]];
    }
    for (int64_t r = 0; r < n; ++r) {
      if (!active[r]) continue;
      const int64_t receives = source[r] != values_.Self(r) ? 1 : 0;
      const int64_t messages = std::max(receives, sends[r]);
      if (messages > 0)
        Charge(tally, r, messages * message + sends[r] * pack, receives * elements, receives,
               times);
    }
  }

  // A reduction's collective, then its sums added into the holders' shards, charged to
  // every rank of the group: the whole box for a reduce (the root's add, on the critical
  // path) and an all-reduce (each adds what it holds, at most the box), a 1/g piece for a
  // reduce-scatter, the box alone for a local add (no communication).
  void CostReduce(const Reduce& red, Tally& tally, int64_t times) {
    const int64_t elements = red.global.Elements();
    const double w = static_cast<double>(elements * p_.dtype_bytes);
    const codegen::StepCalls steps = codegen::PatternOf(red.pattern.kind).Reduce(red);
    const codegen::StepShape shape = codegen::ShapeOf(steps);
    const std::vector<int>& axes =
        shape == codegen::StepShape::kReduceGroup ? steps.then[0].axes : red.pattern.axes;
    const int64_t g = GroupSize(p_, axes);
    double add = params_.add * w;
    // A ring in its loop's For is costed a pass at a time (CostRings); elsewhere it only
    // lands.
    if (shape == codegen::StepShape::kReduceRing && g > 1 && !fors_.empty() &&
        fors_.back()->var == red.loop) {
      return;
    }
    if (shape != codegen::StepShape::kReduceGroup || g <= 1) {  // a local add
      if (add > 0) {
        for (int64_t r = 0; r < values_.ranks(); ++r) Charge(tally, r, add, 0, 0, times);
      }
      return;
    }
    const std::string& kind = steps.then[0].reduce_kind;
    Collective collective = Collective::kReduce;
    if (kind == "AllReduce") {
      collective = Collective::kAllReduce;
    } else if (kind == "ReduceScatter") {
      collective = Collective::kReduceScatter;
      add /= static_cast<double>(g);
    }
    // A reduce (-scatter) into an output with copies along some of the group's axes (every
    // copy holds the result, codegen::LayerAxes) reaches each copy by a reduce of its own.
    const int64_t copies = kind == "AllReduce" ? 1 : CopiesIn(red.tensor, axes);
    const double seconds = copies * CollectiveSeconds(collective, axes, w, red.prefetch != 0) + add;
    for (int64_t r = 0; r < values_.ranks(); ++r)
      Charge(tally, r, seconds, copies * elements, copies, times);
  }

  // How many copies of each element of `tensor` hold its result within a group along
  // `axes`: the product of the sizes of those of `axes` it is replicated along but does not
  // end on one layer along.
  int64_t CopiesIn(const std::string& tensor, const std::vector<int>& axes) const {
    const codegen::TensorInfo* t = p_.Tensor(tensor);
    if (t == nullptr) return 1;
    const std::vector<int> layer = codegen::LayerAxes(p_, *t);
    int64_t copies = 1;
    for (int a : codegen::ReplicatedAxes(p_, *t)) {
      if (std::find(axes.begin(), axes.end(), a) != axes.end() &&
          std::find(layer.begin(), layer.end(), a) == layer.end())
        copies *= p_.axis_sizes[static_cast<size_t>(a)];
    }
    return copies;
  }

  // The ring reductions For `f` drives (CommPattern::Kind::kRingReduce, in its body), for
  // `times` passes of it: each pass sends the buffer to the next rank at every step but the
  // last (and at the last too with `hop`), then adds it into the shard: E - 1 (or E)
  // messages of the box and one add.
  void CostRings(const For& f, int64_t times) {
    const auto* body = std::get_if<Block>(&f.body->node);
    if (body == nullptr) return;
    for (const StmtPtr& s : body->body) {
      const auto* red = std::get_if<Reduce>(&s->node);
      if (red == nullptr || red->loop != f.var) continue;
      const codegen::StepCalls steps = codegen::PatternOf(red->pattern.kind).Reduce(*red);
      if (codegen::ShapeOf(steps) != codegen::StepShape::kReduceRing) continue;
      Tally& tally = tallies_[index_.at(s.get())];
      // A pass along every step but the last, and the last step's before it lands (`hop`).
      const int64_t messages = f.extent - 1 + static_cast<int64_t>(steps.otherwise.size()) - 1;
      const int64_t elements = red->global.Elements();
      const double w = static_cast<double>(elements * p_.dtype_bytes);
      const double send = Message(Across({steps.then[0].axis}), w);
      for (int64_t r = 0; r < values_.ranks(); ++r) {
        if (messages > 0) Charge(tally, r, send, elements, 1, times * messages);
        if (params_.add > 0) Charge(tally, r, params_.add * w, 0, 0, times);
      }
    }
  }

  // A collective over the ranks along `axes`, and at least its algorithm's form in the
  // inter-node numbers when the group spans nodes.
  double CollectiveSeconds(Collective c, const std::vector<int>& axes, double w,
                           bool nonblocking) const {
    const int64_t g = GroupSize(p_, axes);
    const double within = CollectiveSeconds(c, g, w, nonblocking);
    if (g <= 1 || !Across(axes)) return within;
    return std::max(
        within, params_.alpha_node * LatencyTerm(c, g) + params_.beta_node * VolumeTerm(c, g) * w);
  }

  // Every mesh axis, ascending.
  std::vector<int> AllAxes() const {
    std::vector<int> out(p_.axis_sizes.size());
    for (size_t a = 0; a < out.size(); ++a) out[a] = static_cast<int>(a);
    return out;
  }

  // Whether ranks along `axes` may sit on different nodes (OuterAxes).
  bool Across(const std::vector<int>& axes) const {
    for (int a : axes) {
      if (a >= 0 && static_cast<size_t>(a) < outer_.size() && outer_[static_cast<size_t>(a)])
        return true;
    }
    return false;
  }

  // One message of `bytes`, between nodes when `across`.
  double Message(bool across, double bytes) const {
    return across ? params_.alpha_node + params_.beta_node * bytes
                  : params_.alpha + params_.beta * bytes;
  }

  // The axes along which `t`'s source is not the reader's own coordinate.
  std::vector<int> SourceAxes(const Transfer& t) const {
    std::vector<int> out;
    for (size_t a = 0; a < t.source.size() && a < p_.axis_names.size(); ++a) {
      const Expr& e = t.source[a];
      if (!(e.op() == Expr::Op::kVar && e.name() == p_.axis_names[a]))
        out.push_back(static_cast<int>(a));
    }
    return out;
  }

  // One call of collective `c` (its nonblocking form for a prefetched statement) over `g`
  // ranks on `w` bytes: its own calibrated line, or the broadcast's numbers in the
  // algorithm's form (CostParams).
  double CollectiveSeconds(Collective c, int64_t g, double w, bool nonblocking) const {
    if (g <= 1) return 0;
    if (params_.collectives.Has(c)) return params_.collectives.Seconds(c, g, w, nonblocking);
    const double tree = params_.alpha_coll * std::log2(static_cast<double>(g));
    switch (c) {
      case Collective::kBroadcast:
      case Collective::kReduce:
        return tree + params_.beta_coll * w;
      case Collective::kAllGather:
        return (g - 1) * (params_.alpha_coll + params_.beta_coll * w / g);
      case Collective::kAllReduce:
        return 2 * (tree + params_.beta_coll * w);
      case Collective::kReduceScatter:
        return g * tree + params_.beta_coll * w;
      case Collective::kAllToAll:  // a message to each other rank
        return (g - 1) * (params_.alpha + params_.beta * w / g);
    }
    return 0;
  }

  // The local copies one instance of `t` makes on a rank, when copy costs anything. An
  // all-gather over g ranks of w bytes: each rank's part (the box split along the dims the
  // gathered axes lay out) packed when it is not contiguous in its shard (w/g), and the
  // parts received unpacked from a staging array when they are not contiguous in the
  // buffer (w(g-1)/g). A broadcast, point-to-point fetch or ring: the box, packed by its
  // sender when it is not contiguous in the sender's shard. 0 otherwise.
  double CopySeconds(const Transfer& t) const {
    const codegen::TensorInfo* info = p_.Tensor(t.tensor);
    const codegen::StepCalls steps = codegen::PatternOf(t.pattern.kind).Fetch(t);
    const codegen::StepShape shape = codegen::ShapeOf(steps);
    if (params_.copy == 0 || info == nullptr || shape == codegen::StepShape::kLocal) return 0;
    const double w = static_cast<double>(t.global.Elements() * p_.dtype_bytes);
    // An all-to-all copies its box into the buffer (from the shard or the received pieces),
    // and packs the pieces it sends where they are not contiguous in the shard.
    if (shape == codegen::StepShape::kAllToAll)
      return params_.copy * w * (Contiguous(t.global.size, info->local_shape) ? 1 : 2);
    if (shape != codegen::StepShape::kAllGather)
      return Contiguous(t.src.size, info->local_shape) ? 0 : params_.copy * w;
    const std::vector<int>& gathered = steps.then[0].axes;
    const int64_t g = GroupSize(p_, gathered);
    std::vector<std::string> axes;
    for (int a : gathered) axes.push_back(p_.axis_names[a]);
    std::vector<int64_t> part = t.global.size;
    for (size_t d = 0; d < part.size() && d < info->layout.size(); ++d) {
      int64_t split = 1;
      for (const auto& [block, index] : info->layout[d].blocks) {
        std::vector<std::string> used;
        index.CollectVars(&used);
        for (size_t a = 0; a < axes.size(); ++a) {
          if (std::find(used.begin(), used.end(), axes[a]) != used.end())
            split *= p_.axis_sizes[t.pattern.axes[a]];
        }
      }
      if (split > 1 && part[d] % split == 0) part[d] /= split;
    }
    double seconds = 0;
    if (!Contiguous(part, info->local_shape)) seconds += params_.copy * w / g;
    if (!Contiguous(part, t.global.size)) seconds += params_.copy * w * (g - 1) / g;
    return seconds;
  }

  const Program& p_;
  const CostParams& params_;
  const bool shortcuts_;  // rank classes and invariant statements hoisted out of loops
  RankValues values_;
  std::unordered_map<const For*, LoopMode> modes_;
  std::vector<const For*> fors_;  // the loops around the walk, outermost first
  std::unordered_map<const codegen::Stmt*, size_t> index_;
  // Per kernel statement: one call's seconds as is and in a prefetched loop's row chunks.
  std::unordered_map<const codegen::Stmt*, std::array<double, 2>> kernels_;
  std::vector<Tally> tallies_;
  std::vector<double> comm_;    // per rank
  std::vector<double> hidden_;  // per rank: communication and compute overlapping each other
  Values words_;                // per rank
  std::vector<bool> outer_;     // per mesh axis: whether ranks along it may be on two nodes
  Values source_, sends_;       // scratch of CostTransfer and PointToPoint
  double compute_ = 0;          // the same on every rank: one SPMD kernel sequence
  // Loops around the walk that drive prefetched statements and have one in flight at the
  // walked iteration: kernels then run in row chunks (runtime/rank.cc).
  int inflight_ = 0;
};

}  // namespace

int64_t EstimateCostWork(const Program& p, bool rank_classes) {
  const CostParams params;
  CostWalker walker(p, params, rank_classes);
  return p.body ? walker.Work(p.body, 1) : 0;
}

absl::StatusOr<CostReport> EstimateCostWithin(const Program& p, const CostParams& params,
                                              int64_t max_work) {
  CostWalker walker(p, params, /*classes=*/true);
  if (p.body) {
    const int64_t work = walker.Work(p.body, 1);
    if (work > max_work) {
      return absl::ResourceExhaustedError(
          absl::StrCat("costing it would take ", work, " rank-steps (more than ", max_work,
                       "): sources that change with every rank and step of long loops"));
    }
    walker.Walk(p.body, 1);
  }
  return walker.Report();
}

absl::StatusOr<double> EstimateCostLowerBound(const Program& p, const CostParams& params,
                                              int64_t max_ranks, int64_t max_work) {
  CostWalker walker(p, params, /*classes=*/true, max_ranks);
  if (p.body) {
    const int64_t work = walker.Work(p.body, 1);
    if (work > max_work) {
      return absl::ResourceExhaustedError(
          absl::StrCat("bounding it would take ", work, " rank-steps (more than ", max_work, ")"));
    }
    walker.Walk(p.body, 1);
  }
  return walker.LowerBound();
}

CostReport EstimateCost(const Program& p, const CostParams& params, bool rank_classes) {
  CostWalker walker(p, params, rank_classes);
  if (p.body) walker.Walk(p.body, 1);
  return walker.Report();
}

}  // namespace meshtune::search
