// Internal to the rank runtime (runtime/rank/rank.h): RankRuntime<T>, the RankRuntimeBase of f32
// (T = float) or f64 (T = double) runs, and its transfer buffers. Its methods are defined by
// concept in rank_runtime.cc (construction, the factories, lookups), rank_buffers.cc
// (transfer buffers: double buffering, where a transfer lands), rank_transfers.cc (the
// transfers into buffers), rank_reduce.cc (sums of partial results into their holders),
// rank_kernel.cc (local kernels) and rank_run.cc (runs: the timing loop, the shards'
// contents, verification); each instantiates RankRuntime<float> and RankRuntime<double>.
// Not part of the `rank` library's interface.
#ifndef MESHTUNE_RUNTIME_RANK_RANK_RUNTIME_H_
#define MESHTUNE_RUNTIME_RANK_RANK_RUNTIME_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "runtime/box.h"
#include "runtime/comm.h"
#include "runtime/kernels.h"
#include "runtime/oracle.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime::internal {

// The Comm data type of T.
template <typename T>
DataType TypeOf();
template <>
inline DataType TypeOf<float>() {
  return DataType::kFloat;
}
template <>
inline DataType TypeOf<double>() {
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

// a - b, per dim.
inline std::vector<int64_t> Minus(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

// The parts of a box (a buffer's, at a global offset) that the ranks of a group hold, by
// group index: each one's element count (0: that rank holds none), first global index and
// sizes; `holders` ranks hold one, `total` elements in all, and `in_order`: contiguous in the
// buffer, one after another in group order.
struct HolderParts {
  std::vector<Coords> group;
  std::vector<int> counts;
  std::vector<std::vector<int64_t>> los, lens;
  int holders = 0;
  int64_t total = 0;
  bool in_order = true;
};

template <typename T>
class RankRuntime : public RankRuntimeBase {
 public:
  // Shards allocated and filled (their shapes only when `bound`: the caller's memory, bound
  // later), every buffer's first half allocated (rank_runtime.cc).
  RankRuntime(std::unique_ptr<Comm> comm, std::vector<std::string> axis_names,
              std::vector<TensorSpec> tensors, std::vector<BufferSpec> buffers, ProblemSpec problem,
              bool accumulate, uint64_t seed, bool bound = false);

  const Coords& coords() const override { return coords_; }

  // Transfer buffers (rank_buffers.cc).
  void Async(const std::string& buffer) override;
  void Wait(const std::string& buffer) override;
  void Zero(const std::string& buffer) override;

  // Transfers into buffers (rank_transfers.cc).
  // A box of a shard as a buffer's data: read in place, never copied.
  void Local(const std::string& tensor, const std::string& buffer,
             const std::vector<int64_t>& offset) override;
  void Broadcast(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes,
                 const Coords& root) override;
  void AllGather(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes) override;
  void ShiftStep(const std::string& buffer, int axis, int shift) override;
  void AllToAll(const std::string& tensor, const std::string& buffer,
                const CoordsFn& offset) override;
  void PointToPoint(const std::string& tensor, const std::string& buffer, const CoordsFn& source,
                    const CoordsFn& offset) override;

  // Reductions (rank_reduce.cc).
  void ReduceInto(const std::string& kind, const std::string& tensor, const std::string& buffer,
                  const std::vector<int64_t>& offset, const std::vector<int>& axes) override;

  // Local kernels (rank_kernel.cc).
  void Kernel(const std::string& kernel, bool sum, const std::vector<std::string>& indices,
              const std::vector<int64_t>& extents, const OperandSpec& out,
              const std::vector<OperandSpec>& in) override;

  // Runs (rank_run.cc).
  RunStats Measure(const std::function<void()>& body, int warmup, int reps,
                   const std::string& fault, RepetitionGate* gate) override;
  void Bind(const std::string& tensor, void* data) override;
  std::string Run(const std::function<void()>& body) override;

 private:
  // Lookups (rank_runtime.cc).
  // The tensor named `name` (the first tensor when there is none).
  const TensorSpec& Tensor(const std::string& name) const;
  // The output tensor.
  const TensorSpec& Output() const;
  // Whether the rank at `coords` holds a part of the box at `off` of sizes `size` of `t`:
  // its first global index `*lo` and sizes `*len` (empty for a scalar), the box clipped to
  // the rank's block and to t.shape (what lies past it is padding, never data). Off an
  // output's layer a rank holds none.
  bool Held(const TensorSpec& t, const Coords& coords, const std::vector<int64_t>& off,
            const std::vector<int64_t>& size, std::vector<int64_t>* lo,
            std::vector<int64_t>* len) const;

  // Transfer buffers (rank_buffers.cc).
  // Whether Async(buffer) was called for this transfer (and clears it).
  bool TakeAsync(const std::string& buffer);
  // Where a transfer into `b` writes: after Async the half kernels are not reading; else
  // the current half (or the first, when the current data is a view of a shard).
  T* Target(TransferBuffer<T>& b, bool async);
  // The box of `tensor`'s shard at `offset` of sizes `shape`, read in place.
  Slot<T> View(const std::string& tensor, const std::vector<int64_t>& offset,
               const std::vector<int64_t>& shape);
  // Completes a transfer into `b` whose data will be `slot`: at once (waiting for `ops`,
  // then `finish`), or after Async at Wait.
  void Land(TransferBuffer<T>& b, bool async, Slot<T> slot, Ops ops, std::function<void()> finish);
  // Writes the zeros a Zero deferred, when something reads the buffer before a kernel
  // overwrote it.
  void Materialize(TransferBuffer<T>& b);

  // Transfers (rank_transfers.cc).
  // Per block of `t` (its start), the ranks holding it, ascending; worked out once.
  const std::map<std::vector<int64_t>, std::vector<int>>& Holders(const TensorSpec& t);
  // Of `ranks` (ascending), the one sharing the most mesh coordinates with `reader` (the
  // lowest on ties).
  int Nearest(const std::vector<int>& ranks, const Coords& reader) const;
  // An all-to-all's sends from this rank's shard of `tensor` (`t`, its block at `mine`,
  // `holders` from Holders) into `b` on every rank, whose box is at offset(its coords).
  std::vector<Message> AllToAllSends(
      const std::string& tensor, const TensorSpec& t, TransferBuffer<T>& b,
      const std::map<std::vector<int64_t>, std::vector<int>>& holders,
      const std::vector<int64_t>& mine, const CoordsFn& offset);

  // Reductions (rank_reduce.cc).
  // Starts (or, unless `async`, runs) the sum of `b`'s current data into the ranks along
  // `axes` that hold its parts; returns what adds this rank's sum into its shard.
  std::function<void()> ReduceToHolders(const TensorSpec& t, TransferBuffer<T>& b,
                                        const std::vector<int64_t>& offset,
                                        const std::vector<int>& axes, bool async, Ops* ops);
  // The parts of `b`'s box at `offset` of `t` that the ranks along `axes` hold.
  HolderParts PartsHeld(const TensorSpec& t, const TransferBuffer<T>& b,
                        const std::vector<int64_t>& offset, const std::vector<int>& axes) const;
  // Adds the part of the box at `off` (dense, sizes `shape`, at `part`) that this rank
  // holds into its shard of `t`.
  void AddHeld(const TensorSpec& t, const T* part, const std::vector<int64_t>& shape,
               const std::vector<int64_t>& off);

  // Local kernels (rank_kernel.cc).
  // A kernel operand: its address and its stride along each tile index.
  TileOperand<T> Tile(const OperandSpec& o, const std::vector<std::string>& indices);

  // Runs (rank_run.cc).
  // Fills `t`'s shard from the global indices.
  void Fill(const TensorSpec& t);
  // The application's storage of `t` in its given layout, filled from the global indices.
  void FillGiven(const TensorSpec& t);
  // The redistributions of tensors in given layouts: into the shards (`in`) before the
  // body, out of the output's shard after it.
  void MoveGiven(bool in);
  // Replicated inputs' copies and off-layer output shards made wrong before a run.
  void PoisonCopies();
  // Whether this rank holds the copy of input `t` the others are made from, or output `t`'s
  // result (AtCoordinateZero).
  bool IsCopySource(const TensorSpec& t) const;
  // Every replicated input broadcast along its replicated axes from coordinate 0.
  void MakeCopies();
  // The output as a run starts: filled (`+=`) or zeroed.
  void ResetOutput();
  // Collective: the output this rank holds checked against the problem's reference, then
  // the coverage of every rank's. "" or the first problem, the same on every rank.
  std::string Verify(const TensorSpec& spec, const T* out);

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

}  // namespace meshtune::runtime::internal

#endif  // MESHTUNE_RUNTIME_RANK_RANK_RUNTIME_H_
