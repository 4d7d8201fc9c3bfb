// RankRuntime<T> (rank_runtime.h): the transfers into buffers. A shard's box read in place
// (Local), broadcasts, all-gathers, ring shifts, all-to-all exchanges and general
// point-to-point transfers, blocking or started (Async); each moves data straight between
// shards, buffers and the network where it can, and packs or stages it (counted in
// copied_) where it cannot.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/rank/rank_runtime.h"

namespace meshtune::runtime::internal {

// A box of a shard as a buffer's data: read in place, never copied.
template <typename T>
void RankRuntime<T>::Local(const std::string& tensor, const std::string& buffer,
                           const std::vector<int64_t>& offset) {
  TransferBuffer<T>& b = buffers_[buffer];
  Land(b, TakeAsync(buffer), View(tensor, offset, b.shape), {}, nullptr);
}

template <typename T>
void RankRuntime<T>::Broadcast(const std::string& tensor, const std::string& buffer,
                               const std::vector<int64_t>& offset, const std::vector<int>& axes,
                               const Coords& root) {
  const bool async = TakeAsync(buffer);
  TransferBuffer<T>& b = buffers_[buffer];
  Slot<T> slot;
  if (comm_->GroupIndex(axes, coords_) == comm_->GroupIndex(axes, root)) {
    // The root sends its block in place when it is contiguous in its shard (and reads
    // it there), else packs it into the buffer first.
    slot = View(tensor, offset, b.shape);
    if (!slot.dense) {
      T* to = Target(b, async);
      CopyStrided(slot.ptr, slot.strides, to, b.strides, b.shape);
      copied_ += b.size * static_cast<int64_t>(sizeof(T));
      slot = b.Own(to);
    }
    bytes_ += b.size * static_cast<int64_t>(sizeof(T));
  } else {
    slot = b.Own(Target(b, async));
  }
  Ops ops;
  if (async) {
    ops.push_back(comm_->StartBcast(slot.ptr, b.size, TypeOf<T>(), axes, root));
  } else {
    comm_->Bcast(slot.ptr, b.size, TypeOf<T>(), axes, root);
  }
  Land(b, async, slot, std::move(ops), nullptr);
}

template <typename T>
void RankRuntime<T>::ShiftStep(const std::string& buffer, int axis, int shift) {
  const bool async = TakeAsync(buffer);
  TransferBuffer<T>& b = buffers_[buffer];
  Materialize(b);  // a ring reduction's partial sums, still all zeros
  // Receive from the neighbour at +shift into the other half while sending the current
  // one to the neighbour at -shift (a ring): no copy, unless the current data is a
  // non-contiguous box of a shard, which is packed to be sent.
  Coords from = coords_, to = coords_;
  from[axis] += shift;
  to[axis] -= shift;
  T* send = b.cur.ptr;
  if (!b.cur.dense) {
    send = Scratch(b.pack, b.size);
    CopyStrided(b.cur.ptr, b.cur.strides, send, b.strides, b.shape);
    copied_ += b.size * static_cast<int64_t>(sizeof(T));
  }
  T* recv = b.Free();
  Ops ops;
  const std::vector<Message> sends = {{comm_->RankOf(to), send, b.size}};
  const Message in = {comm_->RankOf(from), recv, b.size};
  if (async) {
    ops.push_back(comm_->StartExchange(sends, in, TypeOf<T>()));
  } else {
    comm_->Exchange(sends, in, TypeOf<T>());
  }
  bytes_ += b.size * static_cast<int64_t>(sizeof(T));
  Land(b, async, b.Own(recv), std::move(ops), nullptr);
}

template <typename T>
void RankRuntime<T>::AllGather(const std::string& tensor, const std::string& buffer,
                               const std::vector<int64_t>& offset, const std::vector<int>& axes) {
  const bool async = TakeAsync(buffer);
  const TensorSpec& t = Tensor(tensor);
  TransferBuffer<T>& b = buffers_[buffer];
  const std::vector<Coords> group = comm_->Group(axes);
  const size_t g = group.size();
  std::vector<int> counts(g, 0), displs(g, 0);
  std::vector<std::vector<int64_t>> los(g), lens(g), at(g);
  for (size_t r = 0; r < g; ++r) {
    if (!Held(t, group[r], offset, b.shape, &los[r], &lens[r])) continue;
    counts[r] = static_cast<int>(Elements(lens[r]));
    at[r] = Minus(los[r], offset);
  }
  const int me = comm_->GroupIndex(axes, coords_);
  // Sent straight from the shard when this rank's part is contiguous there; else packed.
  const T* send = nullptr;
  if (counts[me] > 0) {
    const Slot<T> mine = View(tensor, Minus(los[me], t.block_start(coords_)), lens[me]);
    send = mine.ptr;
    if (!mine.dense) {
      T* p = Scratch(b.pack, counts[me]);
      CopyStrided(mine.ptr, mine.strides, p, DenseStrides(lens[me]), lens[me]);
      copied_ += static_cast<int64_t>(counts[me]) * sizeof(T);
      send = p;
    }
  }
  // Received straight into the buffer when every part lands contiguously there (each at
  // its own displacement); else into one staging array, each part then copied to its box.
  T* to = Target(b, async);
  bool direct = true;
  for (size_t r = 0; r < g; ++r)
    direct = direct && (counts[r] == 0 || Contiguous(lens[r], b.shape));
  T* recv = to;
  std::function<void()> finish;
  if (direct) {
    for (size_t r = 0; r < g; ++r)
      displs[r] = counts[r] == 0 ? 0 : static_cast<int>(OffsetOf(at[r], b.strides));
  } else {
    for (size_t r = 1; r < g; ++r) displs[r] = displs[r - 1] + counts[r - 1];
    recv = Scratch(b.stage, displs.back() + counts.back());
    finish = [this, &b, to, recv, counts, displs, lens, at] {
      for (size_t r = 0; r < counts.size(); ++r) {
        if (counts[r] == 0) continue;
        CopyStrided(recv + displs[r], DenseStrides(lens[r]), to + OffsetOf(at[r], b.strides),
                    b.strides, lens[r]);
        copied_ += static_cast<int64_t>(counts[r]) * sizeof(T);
      }
    };
  }
  Ops ops;
  if (async) {
    ops.push_back(
        comm_->StartAllgatherv(send, counts[me], recv, counts, displs, TypeOf<T>(), axes));
  } else {
    comm_->Allgatherv(send, counts[me], recv, counts, displs, TypeOf<T>(), axes);
  }
  bytes_ += static_cast<int64_t>(counts[me]) * sizeof(T);
  Land(b, async, b.Own(to), std::move(ops), std::move(finish));
}

template <typename T>
void RankRuntime<T>::AllToAll(const std::string& tensor, const std::string& buffer,
                              const CoordsFn& offset) {
  const bool async = TakeAsync(buffer);
  const TensorSpec& t = Tensor(tensor);
  TransferBuffer<T>& b = buffers_[buffer];
  const std::map<std::vector<int64_t>, std::vector<int>>& holders = Holders(t);
  const std::vector<int64_t> mine = t.block_start(coords_);
  std::vector<int64_t> lo, len;
  const std::vector<Message> sends = AllToAllSends(tensor, t, b, holders, mine, offset);
  // Receives: each block the box meets, from its holder nearest to this rank (or this
  // shard, in place), staged and then copied to its position in the buffer.
  const std::vector<int64_t> off = offset(coords_);
  T* to = Target(b, async);
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pieces;  // (lo, len)
  std::vector<Message> recvs;
  int64_t staged = 0;
  for (const auto& [start, ranks] : holders) {
    const int holder = Nearest(ranks, coords_);
    if (!Held(t, comm_->CoordsOf(holder), off, b.shape, &lo, &len)) continue;
    if (start == mine) {
      const Slot<T> box = View(tensor, Minus(lo, mine), len);
      CopyStrided(box.ptr, box.strides, to + OffsetOf(Minus(lo, off), b.strides), b.strides, len);
      copied_ += Elements(len) * static_cast<int64_t>(sizeof(T));
      continue;
    }
    recvs.push_back({holder, nullptr, Elements(len)});
    pieces.emplace_back(lo, len);
    staged += Elements(len);
  }
  T* stage = Scratch(b.stage, std::max<int64_t>(staged, 1));
  for (size_t i = 0, at = 0; i < recvs.size(); at += recvs[i].count, ++i)
    recvs[i].data = stage + at;
  Ops ops;
  if (async) {
    ops.push_back(comm_->StartAlltoallv(sends, recvs, TypeOf<T>()));
  } else {
    comm_->Alltoallv(sends, recvs, TypeOf<T>());
  }
  // Once the pieces are in: each from its staging place to its box in the buffer.
  std::function<void()> finish = [this, &b, to, off, recvs, pieces] {
    for (size_t i = 0; i < recvs.size(); ++i) {
      const auto& [plo, plen] = pieces[i];
      CopyStrided(static_cast<const T*>(recvs[i].data), DenseStrides(plen),
                  to + OffsetOf(Minus(plo, off), b.strides), b.strides, plen);
      copied_ += recvs[i].count * static_cast<int64_t>(sizeof(T));
    }
  };
  Land(b, async, b.Own(to), std::move(ops), std::move(finish));
}

// Sends: to every rank that does not hold this block, the part of its box in it, when
// this rank is the block's holder nearest to it.
template <typename T>
std::vector<Message> RankRuntime<T>::AllToAllSends(
    const std::string& tensor, const TensorSpec& t, TransferBuffer<T>& b,
    const std::map<std::vector<int64_t>, std::vector<int>>& holders,
    const std::vector<int64_t>& mine, const CoordsFn& offset) {
  std::vector<int64_t> lo, len;
  std::vector<Message> sends;
  size_t packed = 0;
  for (int r = 0; r < size_; ++r) {
    const Coords c = comm_->CoordsOf(r);
    if (r == rank_ || t.block_start(c) == mine || Nearest(holders.at(mine), c) != rank_) continue;
    if (!Held(t, coords_, offset(c), b.shape, &lo, &len)) continue;
    const Slot<T> box = View(tensor, Minus(lo, mine), len);
    const int64_t n = Elements(len);
    T* data = box.ptr;
    if (!box.dense) {
      if (b.packs.size() <= packed) b.packs.emplace_back();
      data = Scratch(b.packs[packed++], n);
      CopyStrided(box.ptr, box.strides, data, DenseStrides(len), len);
      copied_ += n * static_cast<int64_t>(sizeof(T));
    }
    sends.push_back({r, data, n});
    bytes_ += n * static_cast<int64_t>(sizeof(T));
  }
  return sends;
}

template <typename T>
void RankRuntime<T>::PointToPoint(const std::string& tensor, const std::string& buffer,
                                  const CoordsFn& source, const CoordsFn& offset) {
  const bool async = TakeAsync(buffer);
  TransferBuffer<T>& b = buffers_[buffer];
  // Each box this rank is the source of goes out straight from its shard when it is
  // contiguous there, else packed; its own box, when it is its own source, is read in
  // place.
  std::vector<Message> sends;
  size_t packed = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const Coords c = comm_->CoordsOf(r);
    if (source(c) != coords_) continue;
    const Slot<T> box = View(tensor, offset(c), b.shape);
    T* data = box.ptr;
    if (!box.dense) {
      if (b.packs.size() <= packed) b.packs.emplace_back();
      data = Scratch(b.packs[packed++], b.size);
      CopyStrided(box.ptr, box.strides, data, b.strides, b.shape);
      copied_ += b.size * static_cast<int64_t>(sizeof(T));
    }
    sends.push_back({r, data, b.size});
    bytes_ += b.size * static_cast<int64_t>(sizeof(T));
  }
  const Coords src = source(coords_);
  Slot<T> slot;
  Message recv;
  if (src == coords_) {
    slot = View(tensor, offset(coords_), b.shape);
  } else {
    T* to = Target(b, async);
    slot = b.Own(to);
    recv = {comm_->RankOf(src), to, b.size};
  }
  Ops ops;
  if (async) {
    ops.push_back(comm_->StartExchange(sends, recv, TypeOf<T>()));
  } else {
    comm_->Exchange(sends, recv, TypeOf<T>());
  }
  Land(b, async, std::move(slot), std::move(ops), nullptr);
}

// Per block of `t` (its start), the ranks holding it, ascending; worked out once.
template <typename T>
const std::map<std::vector<int64_t>, std::vector<int>>& RankRuntime<T>::Holders(
    const TensorSpec& t) {
  std::map<std::vector<int64_t>, std::vector<int>>& out = holders_[t.name];
  if (out.empty()) {
    for (int r = 0; r < size_; ++r) out[t.block_start(comm_->CoordsOf(r))].push_back(r);
  }
  return out;
}

// Of `ranks` (ascending), the one sharing the most mesh coordinates with `reader` (the
// lowest on ties): an all-to-all reads each block from the copy nearest to the reader, so
// ranks with copies along some axes serve the readers that share their coordinate there.
template <typename T>
int RankRuntime<T>::Nearest(const std::vector<int>& ranks, const Coords& reader) const {
  int best = ranks.front(), best_shared = -1;
  for (int r : ranks) {
    const Coords c = comm_->CoordsOf(r);
    int shared = 0;
    for (size_t a = 0; a < c.size(); ++a) shared += c[a] == reader[a];
    if (shared > best_shared) {
      best = r;
      best_shared = shared;
    }
  }
  return best;
}

template class RankRuntime<float>;
template class RankRuntime<double>;

}  // namespace meshtune::runtime::internal
