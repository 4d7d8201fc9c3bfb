// RankRuntime<T> (rank_runtime.h): reductions. A buffer of partial results summed into the
// shards that hold its parts: an all-reduce, a reduce-scatter (or one reduce per holder),
// or a local add, blocking or started (Async).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/rank/rank_runtime.h"

namespace meshtune::runtime::internal {

template <typename T>
void RankRuntime<T>::ReduceInto(const std::string& kind, const std::string& tensor,
                                const std::string& buffer, const std::vector<int64_t>& offset,
                                const std::vector<int>& axes) {
  const bool async = TakeAsync(buffer);
  const TensorSpec& t = Tensor(tensor);
  TransferBuffer<T>& b = buffers_[buffer];
  Materialize(b);
  T* part = b.cur.ptr;
  Ops ops;
  std::function<void()> finish;
  if (kind == "AllReduce") {
    if (async) {
      ops.push_back(comm_->StartAllreduce(part, b.size, TypeOf<T>(), ReduceOp::kSum, axes));
    } else {
      comm_->Allreduce(part, b.size, TypeOf<T>(), ReduceOp::kSum, axes);
    }
    bytes_ += b.size * static_cast<int64_t>(sizeof(T));
    finish = [this, &t, &b, part, offset] { AddHeld(t, part, b.shape, offset); };
  } else if (kind == "Reduce" || kind == "ReduceScatter") {
    finish = ReduceToHolders(t, b, offset, axes, async, &ops);
  } else {
    AddHeld(t, part, b.shape, offset);
  }
  if (!async) {
    if (finish) finish();
    return;
  }
  // Started: it completes at Wait, while Zero and kernels move on to the other half.
  b.pending = true;
  b.switch_at_wait = false;
  b.ops = std::move(ops);
  b.finish = std::move(finish);
  ++pending_;
  b.cur = b.Own(b.Free());
  b.zero_pending = false;
}

// Starts (or, unless `async`, runs) the sum of `b`'s current data into the ranks along
// `axes` that hold its parts: one MPI reduce-scatter when the parts lie in group order,
// one after another, in the buffer; else one reduce per holder. Returns what adds this
// rank's sum into its shard (nullptr when it holds no part).
template <typename T>
std::function<void()> RankRuntime<T>::ReduceToHolders(const TensorSpec& t, TransferBuffer<T>& b,
                                                      const std::vector<int64_t>& offset,
                                                      const std::vector<int>& axes, bool async,
                                                      Ops* ops) {
  const T* part = b.cur.ptr;
  const HolderParts parts = PartsHeld(t, b, offset, axes);
  const std::vector<Coords>& group = parts.group;
  const std::vector<int>& counts = parts.counts;
  const size_t g = group.size();
  const int me = comm_->GroupIndex(axes, coords_);
  T* sum = counts[me] > 0 ? Scratch(b.sum, counts[me]) : nullptr;
  if (parts.in_order && parts.holders > 1) {
    if (async) {
      ops->push_back(comm_->StartReduceScatterSum(part, sum, counts, TypeOf<T>(), axes));
    } else {
      comm_->ReduceScatterSum(part, sum, counts, TypeOf<T>(), axes);
    }
    bytes_ += parts.total * static_cast<int64_t>(sizeof(T));
  } else {
    size_t packed = 0;
    for (size_t r = 0; r < g; ++r) {
      if (counts[r] == 0) continue;
      // A piece goes straight from the partial buffer when it is contiguous there.
      const std::vector<int64_t> rel = Minus(parts.los[r], offset);
      const T* send = part + OffsetOf(rel, b.strides);
      if (!Contiguous(parts.lens[r], b.shape)) {
        if (b.packs.size() <= packed) b.packs.emplace_back();
        T* p = Scratch(b.packs[packed++], counts[r]);
        CopyStrided(send, b.strides, p, DenseStrides(parts.lens[r]), parts.lens[r]);
        copied_ += static_cast<int64_t>(counts[r]) * sizeof(T);
        send = p;
      }
      T* recv = static_cast<int>(r) == me ? sum : nullptr;
      if (async) {
        ops->push_back(comm_->StartReduceSum(send, recv, counts[r], TypeOf<T>(), axes, group[r]));
      } else {
        comm_->ReduceSum(send, recv, counts[r], TypeOf<T>(), axes, group[r]);
      }
      bytes_ += static_cast<int64_t>(counts[r]) * sizeof(T);
    }
  }
  if (counts[me] == 0) return nullptr;
  return [this, &t, sum, len = parts.lens[me], lo = parts.los[me]] { AddHeld(t, sum, len, lo); };
}

// The parts of `b`'s box at `offset` of `t` that the ranks along `axes` hold, and whether
// they lie in group order, one after another, in the buffer.
template <typename T>
HolderParts RankRuntime<T>::PartsHeld(const TensorSpec& t, const TransferBuffer<T>& b,
                                      const std::vector<int64_t>& offset,
                                      const std::vector<int>& axes) const {
  HolderParts parts;
  parts.group = comm_->Group(axes);
  const size_t g = parts.group.size();
  parts.counts.assign(g, 0);
  parts.los.resize(g);
  parts.lens.resize(g);
  for (size_t r = 0; r < g; ++r) {
    if (!Held(t, parts.group[r], offset, b.shape, &parts.los[r], &parts.lens[r])) continue;
    parts.counts[r] = static_cast<int>(Elements(parts.lens[r]));
    ++parts.holders;
    parts.in_order = parts.in_order && Contiguous(parts.lens[r], b.shape) &&
                     OffsetOf(Minus(parts.los[r], offset), b.strides) == parts.total;
    parts.total += parts.counts[r];
  }
  return parts;
}

// Adds the part of the box at `off` (dense, sizes `shape`, at `part`) that this rank
// holds into its shard of `t`.
template <typename T>
void RankRuntime<T>::AddHeld(const TensorSpec& t, const T* part, const std::vector<int64_t>& shape,
                             const std::vector<int64_t>& off) {
  std::vector<int64_t> lo, len;
  if (!Held(t, coords_, off, shape, &lo, &len)) return;
  Dense<T>& shard = shards_[t.name];
  if (lo.empty()) {
    Data(t.name)[0] += part[0];
    return;
  }
  T* to = Data(t.name) + shard.Offset(Minus(lo, t.block_start(coords_)));
  const std::vector<int64_t> from_strides = DenseStrides(shape);
  const T* from = part + OffsetOf(Minus(lo, off), from_strides);
  // Row by row: the last dim is contiguous in both.
  ForEachPoint(std::vector<int64_t>(len.begin(), len.end() - 1),
               [&](const std::vector<int64_t>& i) {
                 T* x = to + OffsetOf(i, shard.strides);
                 const T* y = from + OffsetOf(i, from_strides);
                 for (int64_t j = 0; j < len.back(); ++j) x[j] += y[j];
               });
}

template class RankRuntime<float>;
template class RankRuntime<double>;

}  // namespace meshtune::runtime::internal
