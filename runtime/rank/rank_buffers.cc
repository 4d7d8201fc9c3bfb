// RankRuntime<T> (rank_runtime.h): transfer buffers. Double buffering (Async, Wait), a
// deferred Zero, and where a transfer into a buffer writes and how it lands.
#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/rank/rank_runtime.h"

namespace meshtune::runtime::internal {

template <typename T>
void RankRuntime<T>::Async(const std::string& buffer) {
  async_ = buffer;
}

template <typename T>
void RankRuntime<T>::Wait(const std::string& buffer) {
  TransferBuffer<T>& b = buffers_[buffer];
  if (!b.pending) return;
  for (std::unique_ptr<CommOp>& op : b.ops) op->Wait();
  b.ops.clear();
  if (b.finish) b.finish();
  b.finish = nullptr;
  if (b.switch_at_wait) b.cur = b.next;
  b.pending = false;
  --pending_;
}

template <typename T>
void RankRuntime<T>::Zero(const std::string& buffer) {
  TransferBuffer<T>& b = buffers_[buffer];
  if (!b.Owns(b.cur.ptr)) b.cur = b.Own(b.Free());
  b.zero_pending = true;  // the first kernel into it overwrites (beta 0), or zeros first
}

// Whether Async(buffer) was called for this transfer (and clears it).
template <typename T>
bool RankRuntime<T>::TakeAsync(const std::string& buffer) {
  if (async_ != buffer) return false;
  async_.clear();
  return true;
}

// Where a transfer into `b` writes: after Async the half kernels are not reading; else
// the current half (or the first, when the current data is a view of a shard).
template <typename T>
T* RankRuntime<T>::Target(TransferBuffer<T>& b, bool async) {
  if (!async && b.Owns(b.cur.ptr)) return b.cur.ptr;
  return b.Free();
}

// The box of `tensor`'s shard at `offset` of sizes `shape`, read in place.
template <typename T>
Slot<T> RankRuntime<T>::View(const std::string& tensor, const std::vector<int64_t>& offset,
                             const std::vector<int64_t>& shape) {
  Dense<T>& shard = shards_[tensor];
  // Whole boxes (a view, a broadcast's or a point-to-point source) move padding and all;
  // lowering keeps every such box in the shard's storage (codegen/program.h), and a box
  // that is not would read past it.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (offset[d] < 0 || offset[d] + shape[d] > shard.shape[d]) {
      throw std::out_of_range(absl::StrCat(
          "a box of ", absl::StrJoin(shape, "x"), " at [", absl::StrJoin(offset, ","), "] of ",
          tensor, "'s shard lies past its storage of ", absl::StrJoin(shard.shape, "x")));
    }
  }
  T* p = Data(tensor) + shard.Offset(offset);
  if (Contiguous(shape, shard.shape)) return Slot<T>{p, DenseStrides(shape), true};
  return Slot<T>{p, shard.strides, false};
}

// Completes a transfer into `b` whose data will be `slot`: at once (waiting for `ops`,
// then `finish`), or after Async at Wait.
template <typename T>
void RankRuntime<T>::Land(TransferBuffer<T>& b, bool async, Slot<T> slot, Ops ops,
                          std::function<void()> finish) {
  b.zero_pending = false;
  if (!async) {
    for (std::unique_ptr<CommOp>& op : ops) op->Wait();
    if (finish) finish();
    b.cur = std::move(slot);
    return;
  }
  b.pending = true;
  b.switch_at_wait = true;
  b.next = std::move(slot);
  b.ops = std::move(ops);
  b.finish = std::move(finish);
  ++pending_;
}

// Writes the zeros a Zero deferred, when something reads the buffer before a kernel
// overwrote it.
template <typename T>
void RankRuntime<T>::Materialize(TransferBuffer<T>& b) {
  if (!b.zero_pending) return;
  std::fill(b.cur.ptr, b.cur.ptr + b.size, T(0));
  b.zero_pending = false;
}

template class RankRuntime<float>;
template class RankRuntime<double>;

}  // namespace meshtune::runtime::internal
