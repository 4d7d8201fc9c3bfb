// The cost model's transfers and reductions (cost_walker.h): messages, collectives,
// point-to-point and all-to-all fetches, rings, and the local copies they make.
#include <algorithm>
#include <cmath>
#include <variant>

#include "codegen/expr.h"
#include "cost/cost_walker.h"

namespace meshtune::cost::internal {

namespace {

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

int64_t GroupSize(const Program& p, const std::vector<int>& axes) {
  int64_t g = 1;
  for (int a : axes) g *= p.axis_sizes[a];
  return g;
}

}  // namespace

void CostWalker::Charge(Tally& t, int64_t r, double seconds, int64_t words, int64_t messages,
                        int64_t times) {
  const double s = (t.scale * seconds + params_.scales.message * static_cast<double>(messages)) *
                   static_cast<double>(times);
  t.seconds[r] += s;
  comm_[r] += s;
  t.words[r] += words * times;
  words_[r] += words * times;
  t.messages[r] += messages * times;
}

void CostWalker::CostTransfer(const Transfer& t, Tally& tally, int64_t times) {
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
        Charge(tally, r, seconds + (receives ? 0 : pack), receives ? elements : 0, receives ? 1 : 0,
               times);
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

void CostWalker::AllToAll(const Transfer& t, Tally& tally, int64_t times) {
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
      own *= std::max<int64_t>(0, std::min(o + s, start[d][r] + extent) - std::max(o, start[d][r]));
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

void CostWalker::PointToPoint(const Transfer& t, Tally& tally, const std::vector<bool>& active,
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
      Charge(tally, r, messages * message + sends[r] * pack, receives * elements, receives, times);
  }
}

void CostWalker::CostReduce(const Reduce& red, Tally& tally, int64_t times) {
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

int64_t CostWalker::CopiesIn(const std::string& tensor, const std::vector<int>& axes) const {
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

void CostWalker::CostRings(const For& f, int64_t times) {
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

double CostWalker::CollectiveSeconds(Collective c, const std::vector<int>& axes, double w,
                                     bool nonblocking) const {
  const int64_t g = GroupSize(p_, axes);
  const double within = CollectiveSeconds(c, g, w, nonblocking);
  if (g <= 1 || !Across(axes)) return within;
  return std::max(
      within, params_.alpha_node * LatencyTerm(c, g) + params_.beta_node * VolumeTerm(c, g) * w);
}

std::vector<int> CostWalker::AllAxes() const {
  std::vector<int> out(p_.axis_sizes.size());
  for (size_t a = 0; a < out.size(); ++a) out[a] = static_cast<int>(a);
  return out;
}

bool CostWalker::Across(const std::vector<int>& axes) const {
  for (int a : axes) {
    if (a >= 0 && static_cast<size_t>(a) < outer_.size() && outer_[static_cast<size_t>(a)])
      return true;
  }
  return false;
}

double CostWalker::Message(bool across, double bytes) const {
  return across ? params_.alpha_node + params_.beta_node * bytes
                : params_.alpha + params_.beta * bytes;
}

std::vector<int> CostWalker::SourceAxes(const Transfer& t) const {
  std::vector<int> out;
  for (size_t a = 0; a < t.source.size() && a < p_.axis_names.size(); ++a) {
    const Expr& e = t.source[a];
    if (!(e.op() == Expr::Op::kVar && e.name() == p_.axis_names[a]))
      out.push_back(static_cast<int>(a));
  }
  return out;
}

double CostWalker::CollectiveSeconds(Collective c, int64_t g, double w, bool nonblocking) const {
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

double CostWalker::CopySeconds(const Transfer& t) const {
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

}  // namespace meshtune::cost::internal
