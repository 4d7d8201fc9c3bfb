#include "runtime/rank.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <set>
#include <utility>

#include "runtime/box.h"
#include "runtime/fill.h"
#include "runtime/kernels.h"
#include "runtime/oracle.h"

namespace meshtune::runtime {

namespace {

template <typename T>
DataType TypeOf();
template <>
DataType TypeOf<float>() {
  return DataType::kFloat;
}
template <>
DataType TypeOf<double>() {
  return DataType::kDouble;
}

using Ops = std::vector<std::unique_ptr<CommOp>>;

// Where a transfer buffer's current data lies: in one of its own two halves, or in a box of
// a shard read in place (a view). `dense`: the data is one contiguous row-major run.
template <typename T>
struct Slot {
  T* ptr = nullptr;
  std::vector<int64_t> strides;
  bool dense = true;
};

// A transfer buffer: two halves allocated once (the second on first need) and reused by
// every repetition, what the kernels read now, and at most one started transfer or
// reduction (Async/Wait).
// Zeroed memory from calloc: large blocks come as fresh pages that the kernel zeroes when
// they are first touched, so sizing a buffer at a plan's creation costs no pass over it
// (std::vector would write every element there).
template <typename T>
class ZeroedArray {
 public:
  ZeroedArray() = default;
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ~ZeroedArray() { std::free(data_); }
  T* data() const { return data_; }
  // `n` zero elements (nothing happens when there are already `n`).
  void resize(int64_t n) {
    if (n == size_ && data_ != nullptr) return;
    std::free(data_);
    data_ = static_cast<T*>(std::calloc(static_cast<size_t>(std::max<int64_t>(n, 1)), sizeof(T)));
    if (data_ == nullptr) throw std::bad_alloc();
    size_ = n;
  }

 private:
  T* data_ = nullptr;
  int64_t size_ = 0;
};

template <typename T>
struct TransferBuffer {
  std::vector<int64_t> shape, strides;  // strides: dense row-major
  int64_t size = 0;
  ZeroedArray<T> half[2];
  Slot<T> cur;
  bool zero_pending = false;  // Zero was called: the first kernel overwrites, or zeros first
  // The started operation: its requests, what completes it, and the slot Wait makes current
  // (unless it is a reduction, which moved on to the other half at once).
  bool pending = false, switch_at_wait = false;
  Ops ops;
  std::function<void()> finish;
  Slot<T> next;
  // Scratch kept across calls: packing, staging, a reduction's sum, point-to-point sends.
  std::vector<T> pack, stage, sum;
  std::vector<std::vector<T>> packs;

  bool Owns(const T* p) const { return p == half[0].data() || p == half[1].data(); }
  // The own half that `cur` does not use.
  T* Free() {
    const int i = cur.ptr == half[0].data() ? 1 : 0;
    half[i].resize(size);
    return half[i].data();
  }
  Slot<T> Own(T* p) const { return Slot<T>{p, strides, true}; }
};

// Resizes `v` to `n` elements (keeping its storage when it is large enough) and returns it.
template <typename T>
T* Scratch(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

template <typename T>
class RankRuntime : public RankRuntimeBase {
 public:
  RankRuntime(std::unique_ptr<Comm> comm, std::vector<std::string> axis_names,
              std::vector<TensorSpec> tensors, std::vector<BufferSpec> buffers, ProblemSpec problem,
              bool accumulate, uint64_t seed, bool bound = false)
      : comm_(std::move(comm)),
        names_(std::move(axis_names)),
        tensors_(std::move(tensors)),
        problem_(std::move(problem)),
        accumulate_(accumulate),
        seed_(seed),
        bound_(bound) {
    rank_ = comm_->rank();
    size_ = comm_->size();
    coords_ = comm_->CoordsOf(rank_);
    for (const TensorSpec& t : tensors_) {
      Dense<T>& shard = shards_[t.name];
      if (bound_) {  // the caller's memory, bound later
        shard.shape = t.local_shape;
        shard.strides = DenseStrides(t.local_shape);
        bound_data_[t.name] = nullptr;
        // The caller's memory is in its given layout: the shard is this runtime's own.
        if (t.given) {
          shard.Resize(t.local_shape);
          internal_.insert(t.name);
        }
        continue;
      }
      shard.Resize(t.local_shape);
      if (t.given) {
        given_[t.name].assign(t.given->global.size(), T(0));
        if (!t.is_output) FillGiven(t);
      } else if (!t.is_output) {
        Fill(t);
      }
    }
    for (const BufferSpec& spec : buffers) {
      TransferBuffer<T>& b = buffers_[spec.name];
      b.shape = spec.shape;
      b.strides = DenseStrides(spec.shape);
      b.size = Elements(spec.shape);
      b.half[0].resize(b.size);
      b.cur = b.Own(b.half[0].data());
    }
  }

  const Coords& coords() const override { return coords_; }

  void Async(const std::string& buffer) override { async_ = buffer; }

  void Wait(const std::string& buffer) override {
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

  void Zero(const std::string& buffer) override {
    TransferBuffer<T>& b = buffers_[buffer];
    if (!b.Owns(b.cur.ptr)) b.cur = b.Own(b.Free());
    b.zero_pending = true;  // the first kernel into it overwrites (beta 0), or zeros first
  }

  // A box of a shard as a buffer's data: read in place, never copied.
  void Local(const std::string& tensor, const std::string& buffer,
             const std::vector<int64_t>& offset) override {
    TransferBuffer<T>& b = buffers_[buffer];
    Land(b, TakeAsync(buffer), View(tensor, offset, b.shape), {}, nullptr);
  }

  void Broadcast(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes,
                 const Coords& root) override {
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

  void ShiftStep(const std::string& buffer, int axis, int shift) override {
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

 private:
  // Whether Async(buffer) was called for this transfer (and clears it).
  bool TakeAsync(const std::string& buffer) {
    if (async_ != buffer) return false;
    async_.clear();
    return true;
  }

  // Where a transfer into `b` writes: after Async the half kernels are not reading; else
  // the current half (or the first, when the current data is a view of a shard).
  T* Target(TransferBuffer<T>& b, bool async) {
    if (!async && b.Owns(b.cur.ptr)) return b.cur.ptr;
    return b.Free();
  }

  // The box of `tensor`'s shard at `offset` of sizes `shape`, read in place.
  Slot<T> View(const std::string& tensor, const std::vector<int64_t>& offset,
               const std::vector<int64_t>& shape) {
    Dense<T>& shard = shards_[tensor];
    T* p = Data(tensor) + shard.Offset(offset);
    if (Contiguous(shape, shard.shape)) return Slot<T>{p, DenseStrides(shape), true};
    return Slot<T>{p, shard.strides, false};
  }

  // Completes a transfer into `b` whose data will be `slot`: at once (waiting for `ops`,
  // then `finish`), or after Async at Wait.
  void Land(TransferBuffer<T>& b, bool async, Slot<T> slot, Ops ops, std::function<void()> finish) {
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
  void Materialize(TransferBuffer<T>& b) {
    if (!b.zero_pending) return;
    std::fill(b.cur.ptr, b.cur.ptr + b.size, T(0));
    b.zero_pending = false;
  }

 public:
  void AllGather(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes) override {
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

  void AllToAll(const std::string& tensor, const std::string& buffer,
                const CoordsFn& offset) override {
    const bool async = TakeAsync(buffer);
    const TensorSpec& t = Tensor(tensor);
    TransferBuffer<T>& b = buffers_[buffer];
    const std::map<std::vector<int64_t>, std::vector<int>>& holders = Holders(t);
    const std::vector<int64_t> mine = t.block_start(coords_);
    std::vector<int64_t> lo, len;
    // Sends: to every rank that does not hold this block, the part of its box in it, when
    // this rank is the block's holder nearest to it.
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

  void PointToPoint(const std::string& tensor, const std::string& buffer, const CoordsFn& source,
                    const CoordsFn& offset) override {
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

  void ReduceInto(const std::string& kind, const std::string& tensor, const std::string& buffer,
                  const std::vector<int64_t>& offset, const std::vector<int>& axes) override {
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

  void Kernel(const std::string& kernel, bool sum, const std::vector<std::string>& indices,
              const std::vector<int64_t>& extents, const OperandSpec& out,
              const std::vector<OperandSpec>& in) override {
    const double t0 = comm_->Now();
    ++kernel_calls_;
    for (const OperandSpec& x : in) {
      if (x.buffer != x.tensor) Materialize(buffers_[x.buffer]);
    }
    // A buffer just zeroed that the kernel covers whole is overwritten (GEMM with beta 0)
    // instead of being filled with zeros first.
    TransferBuffer<T>* zeroed = nullptr;
    if (out.buffer != out.tensor && buffers_[out.buffer].zero_pending) {
      zeroed = &buffers_[out.buffer];
      if (!Covers(*zeroed, out, indices, extents)) {
        Materialize(*zeroed);
        zeroed = nullptr;
      }
    }
    const TileOperand<T> o = Tile(out, indices);
    std::vector<TileOperand<T>> ins;
    for (const OperandSpec& x : in) ins.push_back(Tile(x, indices));
    // Products of two operands go to (loops of) GEMMs when their indices allow it.
    const bool gemm = !sum && in.size() == 2;
    // While a transfer is in flight, the tile runs in row chunks with MPI progress between
    // them (MPI moves data only inside its calls).
    const int rows_at = out.dims.empty() ? -1 : Position(indices, out.dims[0]);
    const int64_t rows = rows_at < 0 ? 1 : extents[rows_at];
    const int64_t chunks =
        pending_ > 0 && rows_at >= 0 ? std::max<int64_t>(1, std::min<int64_t>(8, rows / 64)) : 1;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
      std::vector<int64_t> sub = extents;
      TileOperand<T> oc = o;
      std::vector<TileOperand<T>> inc = ins;
      if (rows_at >= 0) {
        sub[rows_at] = r1 - r0;
        oc.base += r0 * o.strides[rows_at];
        for (size_t x = 0; x < ins.size(); ++x) inc[x].base += r0 * ins[x].strides[rows_at];
      }
      if (!(gemm && ContractionGemm(sub, oc, inc[0], inc[1], zeroed != nullptr))) {
        // The rows this chunk covers of a zeroed buffer: zeros first, then accumulate.
        if (zeroed != nullptr)
          std::fill(oc.base, oc.base + (r1 - r0) * (zeroed->size / rows), T(0));
        GenericKernel(sub, oc, inc, sum);
      }
      if (c + 1 < chunks) comm_->Progress();
    }
    if (zeroed != nullptr) zeroed->zero_pending = false;
    kernel_time_ += comm_->Now() - t0;
  }

  RunStats Measure(const std::function<void()>& body, int warmup, int reps,
                   const std::string& fault) override {
    RunStats m;
    if (bound_) {
      m.error = "Measure needs a runtime that owns its shards (MakeRankRuntime)";
      return m;
    }
    for (int i = 0; i < warmup + reps; ++i) {
      ResetOutput();
      PoisonCopies();
      bytes_ = 0;
      copied_ = 0;
      kernel_time_ = 0;
      kernel_calls_ = 0;
      comm_->Barrier();
      const double t0 = comm_->Now();
      MakeCopies();
      MoveGiven(true);
      body();
      for (auto& [name, b] : buffers_) Wait(name);  // a body that left one started
      MoveGiven(false);
      double worst[2] = {comm_->Now() - t0, kernel_time_};
      comm_->Allreduce(worst, 2, DataType::kDouble, ReduceOp::kMax, comm_->AllAxes());
      if (i >= warmup) {
        m.seconds.push_back(worst[0]);
        m.kernel_seconds.push_back(worst[1]);
      }
      m.kernel_calls = kernel_calls_;
    }
    long long most[2] = {bytes_, copied_};
    comm_->Allreduce(most, 2, DataType::kLongLong, ReduceOp::kMax, comm_->AllAxes());
    m.bytes_sent_max = most[0];
    m.bytes_copied_max = most[1];
    const TensorSpec& spec = Output();
    std::vector<T>& out = spec.given ? given_[spec.name] : shards_[spec.name].data;
    if (fault == "wrong" && rank_ == 0 && !out.empty()) out[out.size() / 2] += T(1);
    m.checksum = 0;
    // Off the output's layer a shard holds no result (its given storage, if any, does).
    const bool holds = spec.given || IsCopySource(spec);
    for (size_t i = 0; i < out.size() && holds; ++i) {
      if (!spec.given || spec.given->global[i] >= 0) m.checksum += out[i];
    }
    comm_->Allreduce(&m.checksum, 1, DataType::kDouble, ReduceOp::kSum, comm_->AllAxes());
    m.error = Verify(spec, holds ? out.data() : nullptr);
    m.verified = m.error.empty();
    return m;
  }

 private:
  // Collective: the output this rank holds (`out`, its shard or given storage; nullptr when
  // it holds none) checked against the problem's reference, then the coverage of every
  // rank's (runtime/oracle.h). "" or the first problem, the same on every rank.
  std::string Verify(const TensorSpec& spec, const T* out) {
    HeldOutput held;
    held.value = [out](int64_t i) { return static_cast<double>(out[i]); };
    if (out == nullptr) {
      held.global = [](int64_t) { return int64_t{-1}; };
    } else if (spec.given) {
      const std::vector<int64_t>& global = spec.given->global;
      held.slots = static_cast<int64_t>(global.size());
      held.global = [&global](int64_t i) { return global[i]; };
    } else {
      const std::vector<int64_t> start = spec.block_start(coords_);
      held.slots = Elements(spec.local_shape);
      held.global = [&spec, start](int64_t i) {
        std::vector<int64_t> g = Unlinear(i, spec.local_shape);
        for (size_t d = 0; d < g.size(); ++d) g[d] += start[d];
        return Linear(g, spec.shape);
      };
    }
    const double tolerance = sizeof(T) == 4 ? 2e-4 : 1e-10;
    std::string error =
        FirstError(CheckHeldValues(problem_, seed_, held, tolerance, RankName(names_, coords_)));
    if (!error.empty()) return error;
    return CheckCoverage(problem_, held, tolerance, *comm_);
  }

  // The output tensor.
  const TensorSpec& Output() const {
    for (const TensorSpec& t : tensors_) {
      if (t.is_output) return t;
    }
    return tensors_[0];
  }

  static std::vector<int64_t> Minus(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> d(a.size());
    for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
    return d;
  }
  static int Position(const std::vector<std::string>& indices, const std::string& name) {
    const auto it = std::find(indices.begin(), indices.end(), name);
    return it == indices.end() ? -1 : static_cast<int>(it - indices.begin());
  }

  // Whether the tile writes every element of `b` (the operand is the whole buffer).
  static bool Covers(const TransferBuffer<T>& b, const OperandSpec& out,
                     const std::vector<std::string>& indices, const std::vector<int64_t>& extents) {
    for (size_t d = 0; d < out.dims.size(); ++d) {
      const int at = Position(indices, out.dims[d]);
      if (out.offset[d] != 0 || at < 0 || extents[at] != b.shape[d]) return false;
      for (size_t e = 0; e < d; ++e) {
        if (out.dims[e] == out.dims[d]) return false;
      }
    }
    return true;
  }

  // Starts (or, unless `async`, runs) the sum of `b`'s current data into the ranks along
  // `axes` that hold its parts: one MPI reduce-scatter when the parts lie in group order,
  // one after another, in the buffer; else one reduce per holder. Returns what adds this
  // rank's sum into its shard (nullptr when it holds no part).
  std::function<void()> ReduceToHolders(const TensorSpec& t, TransferBuffer<T>& b,
                                        const std::vector<int64_t>& offset,
                                        const std::vector<int>& axes, bool async, Ops* ops) {
    const T* part = b.cur.ptr;
    const std::vector<Coords> group = comm_->Group(axes);
    const size_t g = group.size();
    std::vector<int> counts(g, 0);
    std::vector<std::vector<int64_t>> los(g), lens(g);
    int64_t next = 0;
    int holders = 0;
    bool in_order = true;
    for (size_t r = 0; r < g; ++r) {
      if (!Held(t, group[r], offset, b.shape, &los[r], &lens[r])) continue;
      counts[r] = static_cast<int>(Elements(lens[r]));
      ++holders;
      in_order = in_order && Contiguous(lens[r], b.shape) &&
                 OffsetOf(Minus(los[r], offset), b.strides) == next;
      next += counts[r];
    }
    const int me = comm_->GroupIndex(axes, coords_);
    T* sum = counts[me] > 0 ? Scratch(b.sum, counts[me]) : nullptr;
    if (in_order && holders > 1) {
      if (async) {
        ops->push_back(comm_->StartReduceScatterSum(part, sum, counts, TypeOf<T>(), axes));
      } else {
        comm_->ReduceScatterSum(part, sum, counts, TypeOf<T>(), axes);
      }
      bytes_ += next * static_cast<int64_t>(sizeof(T));
    } else {
      size_t packed = 0;
      for (size_t r = 0; r < g; ++r) {
        if (counts[r] == 0) continue;
        // A piece goes straight from the partial buffer when it is contiguous there.
        const std::vector<int64_t> rel = Minus(los[r], offset);
        const T* send = part + OffsetOf(rel, b.strides);
        if (!Contiguous(lens[r], b.shape)) {
          if (b.packs.size() <= packed) b.packs.emplace_back();
          T* p = Scratch(b.packs[packed++], counts[r]);
          CopyStrided(send, b.strides, p, DenseStrides(lens[r]), lens[r]);
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
    return [this, &t, sum, len = lens[me], lo = los[me]] { AddHeld(t, sum, len, lo); };
  }

  void Bind(const std::string& tensor, void* data) override {
    bound_data_[tensor] = static_cast<T*>(data);
  }

  std::string Run(const std::function<void()>& body) override {
    if (!bound_) return "Run needs a runtime over the caller's memory (MakeBoundRankRuntime)";
    for (const TensorSpec& t : tensors_) {
      const int64_t held =
          t.given ? static_cast<int64_t>(t.given->global.size()) : Elements(t.local_shape);
      if (bound_data_[t.name] == nullptr && held > 0) return "tensor " + t.name + " is not bound";
    }
    if (!accumulate_) {
      const TensorSpec& out = Output();
      std::fill(Data(out.name), Data(out.name) + Elements(out.local_shape), T(0));
    }
    MoveGiven(true);
    body();
    for (auto& [name, b] : buffers_) Wait(name);  // a body that left one started
    MoveGiven(false);
    return "";
  }

  const TensorSpec& Tensor(const std::string& name) const {
    for (const TensorSpec& t : tensors_) {
      if (t.name == name) return t;
    }
    return tensors_[0];
  }
  void Fill(const TensorSpec& t) {
    Dense<T>& b = shards_[t.name];
    const std::vector<int64_t> start = t.block_start(coords_);
    std::vector<int64_t> g(start.size());
    int64_t i = 0;
    if (t.local_shape.empty()) b.data[0] = static_cast<T>(ElementValue(seed_, t.name, 0));
    ForEachPoint(t.local_shape, [&](const std::vector<int64_t>& l) {
      for (size_t d = 0; d < l.size(); ++d) g[d] = start[d] + l[d];
      b.data[i++] = static_cast<T>(ElementValue(seed_, t.name, Linear(g, t.shape)));
    });
  }
  // The application's storage of `t` in its given layout, filled from the global indices.
  void FillGiven(const TensorSpec& t) {
    std::vector<T>& data = given_[t.name];
    for (size_t i = 0; i < data.size(); ++i) {
      const int64_t g = t.given->global[i];
      data[i] = g < 0 ? T(0) : static_cast<T>(ElementValue(seed_, t.name, g));
    }
  }
  // The redistributions of tensors in given layouts: into the shards (`in`) before the
  // body, out of the output's shard after it.
  void MoveGiven(bool in) {
    for (const TensorSpec& t : tensors_) {
      if (!t.given) continue;
      const GivenSpec::Move& move = in ? t.given->in : t.given->out;
      if (!move) continue;
      bytes_ += in ? t.given->in_bytes_sent : t.given->out_bytes_sent;
      T* shard = shards_[t.name].data.data();
      T* given = bound_ ? bound_data_[t.name] : given_[t.name].data();
      if (in) {
        move(given, shard, *comm_);
      } else {
        move(shard, given, *comm_);
      }
    }
  }
  // The copies of replicated inputs (TensorSpec::replicated_axes) made wrong before a run,
  // on every rank off coordinate 0 of those axes, so that a run without MakeCopies cannot
  // verify; so are an output's shards off its layer, which hold no result.
  void PoisonCopies() {
    for (const TensorSpec& t : tensors_) {
      if (t.given && t.given->in) {  // the shard comes from the given layout at each run
        std::fill(shards_[t.name].data.begin(), shards_[t.name].data.end(),
                  std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      if (t.replicated_axes.empty() || IsCopySource(t)) continue;
      std::vector<T>& data = shards_[t.name].data;
      std::fill(data.begin(), data.end(), std::numeric_limits<T>::quiet_NaN());
    }
  }
  // Whether this rank holds the copy of input `t` the others are made from, or output `t`'s
  // result (AtCoordinateZero).
  bool IsCopySource(const TensorSpec& t) const { return AtCoordinateZero(t, coords_); }
  // Every replicated input broadcast along its replicated axes from coordinate 0 (timed:
  // the copies are part of the schedule's cost).
  void MakeCopies() {
    for (const TensorSpec& t : tensors_) {
      if (t.replicated_axes.empty() || t.is_output) continue;
      Coords root = coords_;
      for (int a : t.replicated_axes) root[static_cast<size_t>(a)] = 0;
      std::vector<T>& data = shards_[t.name].data;
      comm_->Bcast(data.data(), static_cast<int64_t>(data.size()), TypeOf<T>(), t.replicated_axes,
                   root);
      if (IsCopySource(t)) bytes_ += static_cast<int64_t>(data.size() * sizeof(T));  // sent
    }
  }
  void ResetOutput() {
    const TensorSpec& out = Output();
    if (out.given) {  // a `+=` output's shard comes from the given storage (PoisonCopies)
      if (accumulate_) {
        FillGiven(out);
      } else {
        std::fill(given_[out.name].begin(), given_[out.name].end(),
                  std::numeric_limits<T>::quiet_NaN());
        std::fill(shards_[out.name].data.begin(), shards_[out.name].data.end(), T(0));
      }
      return;
    }
    if (accumulate_) {
      Fill(out);
    } else {
      std::fill(shards_[out.name].data.begin(), shards_[out.name].data.end(), T(0));
    }
  }
  // Per block of `t` (its start), the ranks holding it, ascending; worked out once.
  const std::map<std::vector<int64_t>, std::vector<int>>& Holders(const TensorSpec& t) {
    std::map<std::vector<int64_t>, std::vector<int>>& out = holders_[t.name];
    if (out.empty()) {
      for (int r = 0; r < size_; ++r) out[t.block_start(comm_->CoordsOf(r))].push_back(r);
    }
    return out;
  }

  // Of `ranks` (ascending), the one sharing the most mesh coordinates with `reader` (the
  // lowest on ties): an all-to-all reads each block from the copy nearest to the reader, so
  // ranks with copies along some axes serve the readers that share their coordinate there.
  int Nearest(const std::vector<int>& ranks, const Coords& reader) const {
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

  bool Held(const TensorSpec& t, const Coords& coords, const std::vector<int64_t>& off,
            const std::vector<int64_t>& size, std::vector<int64_t>* lo,
            std::vector<int64_t>* len) const {
    lo->clear();
    len->clear();
    if (t.is_output && !AtCoordinateZero(t, coords)) return false;  // off the output's layer
    const std::vector<int64_t> start = t.block_start(coords);
    for (size_t d = 0; d < off.size(); ++d) {
      const int64_t a = std::max(off[d], start[d]);
      const int64_t b = std::min(off[d] + size[d], start[d] + t.local_shape[d]);
      if (b <= a) return false;
      lo->push_back(a);
      len->push_back(b - a);
    }
    return true;
  }

  // Adds the part of the box at `off` (dense, sizes `shape`, at `part`) that this rank
  // holds into its shard of `t`.
  void AddHeld(const TensorSpec& t, const T* part, const std::vector<int64_t>& shape,
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

  // A kernel operand: its address and its stride along each tile index.
  TileOperand<T> Tile(const OperandSpec& o, const std::vector<std::string>& indices) {
    T* base;
    const std::vector<int64_t>* strides;
    if (o.buffer == o.tensor) {
      Dense<T>& shard = shards_[o.buffer];
      base = Data(o.buffer);
      strides = &shard.strides;
    } else {
      const Slot<T>& cur = buffers_[o.buffer].cur;
      base = cur.ptr;
      strides = &cur.strides;
    }
    TileOperand<T> t;
    t.base = base + OffsetOf(o.offset, *strides);
    for (const std::string& idx : indices) {
      int64_t s = 0;
      for (size_t d = 0; d < o.dims.size(); ++d) {
        if (o.dims[d] == idx) s += (*strides)[d];
      }
      t.strides.push_back(s);
    }
    return t;
  }

  // The error of the lowest rank that has one, on every rank.
  std::string FirstError(const std::string& mine) {
    int first = mine.empty() ? size_ : rank_;
    comm_->Allreduce(&first, 1, DataType::kInt, ReduceOp::kMin, comm_->AllAxes());
    if (first == size_) return "";
    std::vector<char> text(512, 0);
    if (rank_ == first) std::strncpy(text.data(), mine.c_str(), text.size() - 1);
    comm_->Bcast(text.data(), static_cast<int64_t>(text.size()), DataType::kChar, comm_->AllAxes(),
                 comm_->CoordsOf(first));
    return std::string(text.data());
  }

  std::unique_ptr<Comm> comm_;
  std::vector<std::string> names_;
  std::vector<TensorSpec> tensors_;
  ProblemSpec problem_;  // what Measure checks the output against (unused when bound_)
  bool accumulate_;
  uint64_t seed_;
  int rank_ = 0, size_ = 1;
  Coords coords_;
  // The shard of a tensor on this rank: the caller's memory when bound_, else shards_'s.
  T* Data(const std::string& tensor) {
    return bound_ && internal_.count(tensor) == 0 ? bound_data_[tensor]
                                                  : shards_[tensor].data.data();
  }

  bool bound_ = false;                      // MakeBoundRankRuntime: shards are the caller's (Bind)
  std::map<std::string, Dense<T>> shards_;  // when bound_, shapes and strides only
  std::map<std::string, std::map<std::vector<int64_t>, std::vector<int>>> holders_;  // Holders
  std::map<std::string, std::vector<T>> given_;  // storage in given layouts (TensorSpec::given)
  std::map<std::string, T*> bound_data_;
  std::set<std::string> internal_;  // bound_, in a given layout: the shard is shards_'s
  std::map<std::string, TransferBuffer<T>> buffers_;
  std::string async_;   // the buffer named by the last Async, until its transfer starts
  int pending_ = 0;     // buffers with a started transfer or reduction
  int64_t copied_ = 0;  // bytes packed or copied on this rank in this repetition
  int64_t bytes_ = 0;
  double kernel_time_ = 0;
  int64_t kernel_calls_ = 0;
};

}  // namespace

bool AtCoordinateZero(const TensorSpec& t, const Coords& coords) {
  for (int a : t.replicated_axes) {
    if (coords[static_cast<size_t>(a)] != 0) return false;
  }
  return true;
}

std::unique_ptr<RankRuntimeBase> MakeRankRuntime(int dtype_bytes, std::unique_ptr<Comm> comm,
                                                 const std::vector<std::string>& axis_names,
                                                 std::vector<TensorSpec> tensors,
                                                 std::vector<BufferSpec> buffers,
                                                 ProblemSpec problem, bool accumulate,
                                                 uint64_t seed) {
  if (dtype_bytes == 8) {
    return std::make_unique<RankRuntime<double>>(std::move(comm), axis_names, std::move(tensors),
                                                 std::move(buffers), std::move(problem), accumulate,
                                                 seed);
  }
  return std::make_unique<RankRuntime<float>>(std::move(comm), axis_names, std::move(tensors),
                                              std::move(buffers), std::move(problem), accumulate,
                                              seed);
}

std::unique_ptr<RankRuntimeBase> MakeBoundRankRuntime(int dtype_bytes, std::unique_ptr<Comm> comm,
                                                      const std::vector<std::string>& axis_names,
                                                      std::vector<TensorSpec> tensors,
                                                      std::vector<BufferSpec> buffers,
                                                      bool accumulate) {
  if (dtype_bytes == 8) {
    return std::make_unique<RankRuntime<double>>(std::move(comm), axis_names, std::move(tensors),
                                                 std::move(buffers), ProblemSpec{}, accumulate, 0,
                                                 /*bound=*/true);
  }
  return std::make_unique<RankRuntime<float>>(std::move(comm), axis_names, std::move(tensors),
                                              std::move(buffers), ProblemSpec{}, accumulate, 0,
                                              /*bound=*/true);
}

}  // namespace meshtune::runtime
