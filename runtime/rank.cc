#include "runtime/rank.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/fill.h"
#include "runtime/kernels.h"

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

// A dense row-major buffer.
template <typename T>
struct Buffer {
  std::vector<int64_t> shape, strides;
  std::vector<T> data;

  void Resize(const std::vector<int64_t>& s) {
    shape = s;
    strides.assign(s.size(), 1);
    for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * s[d + 1];
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    data.assign(n, T(0));
  }
  int64_t Offset(const std::vector<int64_t>& idx) const {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
    return o;
  }
};

// Calls fn(index) for every point of the box `size`, last dim fastest.
void ForEachPoint(const std::vector<int64_t>& size,
                  const std::function<void(const std::vector<int64_t>&)>& fn) {
  for (int64_t s : size) {
    if (s <= 0) return;
  }
  std::vector<int64_t> idx(size.size(), 0);
  while (true) {
    fn(idx);
    int d = static_cast<int>(size.size()) - 1;
    while (d >= 0 && ++idx[d] == size[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

template <typename T>
void CopyBox(const Buffer<T>& src, const std::vector<int64_t>& src_off, Buffer<T>& dst,
             const std::vector<int64_t>& dst_off, const std::vector<int64_t>& size) {
  if (size.empty()) {
    dst.data[0] = src.data[0];
    return;
  }
  const std::vector<int64_t> outer(size.begin(), size.end() - 1);
  std::vector<int64_t> s(size.size()), d(size.size());
  ForEachPoint(outer, [&](const std::vector<int64_t>& idx) {
    for (size_t k = 0; k + 1 < size.size(); ++k) {
      s[k] = src_off[k] + idx[k];
      d[k] = dst_off[k] + idx[k];
    }
    s.back() = src_off.back();
    d.back() = dst_off.back();
    std::memcpy(&dst.data[dst.Offset(d)], &src.data[src.Offset(s)], size.back() * sizeof(T));
  });
}

// Copies the dense row-major box of sizes `len` at `src` into `dst` at `dst_off`.
template <typename T>
void CopyDenseInto(const T* src, const std::vector<int64_t>& len, Buffer<T>& dst,
                   const std::vector<int64_t>& dst_off) {
  if (len.empty()) {
    dst.data[0] = src[0];
    return;
  }
  const std::vector<int64_t> outer(len.begin(), len.end() - 1);
  std::vector<int64_t> d(len.size());
  int64_t row = 0;
  ForEachPoint(outer, [&](const std::vector<int64_t>& idx) {
    for (size_t k = 0; k + 1 < len.size(); ++k) d[k] = dst_off[k] + idx[k];
    d.back() = dst_off.back();
    std::memcpy(&dst.data[dst.Offset(d)], src + row * len.back(), len.back() * sizeof(T));
    ++row;
  });
}

int64_t Linear(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o = o * shape[d] + idx[d];
  return o;
}

// Whether the box of sizes `len` in a row-major array of `shape` is one contiguous run of
// elements: every dim after the first one longer than 1 is whole.
bool Contiguous(const std::vector<int64_t>& len, const std::vector<int64_t>& shape) {
  size_t d = 0;
  while (d < len.size() && len[d] == 1) ++d;
  for (++d; d < len.size(); ++d) {
    if (len[d] != shape[d]) return false;
  }
  return true;
}

template <typename T>
class RankRuntime : public RankRuntimeBase {
 public:
  RankRuntime(std::unique_ptr<Comm> comm, std::vector<std::string> axis_names,
              std::vector<TensorSpec> tensors, std::vector<BufferSpec> buffers,
              StatementSpec statement, bool accumulate, uint64_t seed)
      : comm_(std::move(comm)),
        names_(std::move(axis_names)),
        tensors_(std::move(tensors)),
        statement_(std::move(statement)),
        accumulate_(accumulate),
        seed_(seed) {
    rank_ = comm_->rank();
    size_ = comm_->size();
    coords_ = comm_->CoordsOf(rank_);
    for (const TensorSpec& t : tensors_) {
      shards_[t.name].Resize(t.local_shape);
      if (!t.is_output) Fill(t);
    }
    for (const BufferSpec& b : buffers) buffers_[b.name].Resize(b.shape);
  }

  const Coords& coords() const override { return coords_; }

  void Async(const std::string& buffer) override { async_.insert(buffer); }

  void Wait(const std::string& buffer) override {
    auto it = pending_.find(buffer);
    if (it == pending_.end()) return;
    buffers_[buffer].data.swap(spare_[buffer]);  // the filled half becomes current
    pending_.erase(it);
  }

  void Zero(const std::string& buffer) override {
    std::fill(buffers_[buffer].data.begin(), buffers_[buffer].data.end(), T(0));
  }

  void Local(const std::string& tensor, const std::string& buffer,
             const std::vector<int64_t>& offset) override {
    IntoBuffer(buffer, [&] { LocalNow(tensor, buffer, offset); });
  }

  void Broadcast(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes,
                 const Coords& root) override {
    IntoBuffer(buffer, [&] { BroadcastNow(tensor, buffer, offset, axes, root); });
  }

  void AllGather(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes) override {
    IntoBuffer(buffer, [&] { AllGatherNow(tensor, buffer, offset, axes); });
  }

  void PointToPoint(const std::string& tensor, const std::string& buffer, const CoordsFn& source,
                    const CoordsFn& offset) override {
    IntoBuffer(buffer, [&] { PointToPointNow(tensor, buffer, source, offset); });
  }

  void LocalNow(const std::string& tensor, const std::string& buffer,
                const std::vector<int64_t>& offset) {
    Buffer<T>& buf = buffers_[buffer];
    CopyBox(shards_[tensor], offset, buf, std::vector<int64_t>(buf.shape.size(), 0), buf.shape);
    copied_ += static_cast<int64_t>(buf.data.size()) * sizeof(T);
  }

  void BroadcastNow(const std::string& tensor, const std::string& buffer,
                    const std::vector<int64_t>& offset, const std::vector<int>& axes,
                    const Coords& root) {
    Buffer<T>& buf = buffers_[buffer];
    if (comm_->GroupIndex(axes, coords_) == comm_->GroupIndex(axes, root)) {
      LocalNow(tensor, buffer, offset);
      bytes_ += static_cast<int64_t>(buf.data.size()) * sizeof(T);
    }
    comm_->Bcast(buf.data.data(), static_cast<int64_t>(buf.data.size()), TypeOf<T>(), axes, root);
  }

  void AllGatherNow(const std::string& tensor, const std::string& buffer,
                    const std::vector<int64_t>& offset, const std::vector<int>& axes) {
    const TensorSpec& t = Tensor(tensor);
    Buffer<T>& buf = buffers_[buffer];
    const std::vector<Coords> group = comm_->Group(axes);
    std::vector<int> counts(group.size(), 0), displs(group.size(), 0);
    std::vector<std::vector<int64_t>> los(group.size()), lens(group.size());
    for (size_t i = 0; i < group.size(); ++i) {
      const int r = comm_->GroupIndex(axes, group[i]);
      int64_t n = 0;
      if (Held(t, group[i], offset, buf.shape, &los[r], &lens[r])) {
        n = 1;
        for (int64_t l : lens[r]) n *= l;
      }
      counts[r] = static_cast<int>(n);
    }
    const int me = comm_->GroupIndex(axes, coords_);
    // Send straight from the shard when this rank's part is contiguous in it; else pack it.
    const T* send = nullptr;
    Buffer<T> mine;
    if (counts[me] > 0) {
      const std::vector<int64_t> start = t.block_start(coords_);
      std::vector<int64_t> local(los[me].size());
      for (size_t d = 0; d < local.size(); ++d) local[d] = los[me][d] - start[d];
      const Buffer<T>& shard = shards_[tensor];
      if (Contiguous(lens[me], shard.shape)) {
        send = shard.data.data() + shard.Offset(local);
      } else {
        mine.Resize(lens[me]);
        CopyBox(shard, local, mine, std::vector<int64_t>(local.size(), 0), lens[me]);
        copied_ += static_cast<int64_t>(counts[me]) * sizeof(T);
        send = mine.data.data();
      }
    }
    // Receive straight into the buffer when every part lands contiguously in it (each at
    // its own displacement); else into one staging array, then each part to its place.
    std::vector<std::vector<int64_t>> at(group.size());
    bool direct = true;
    for (size_t r = 0; r < group.size(); ++r) {
      if (counts[r] == 0) continue;
      at[r].resize(los[r].size());
      for (size_t d = 0; d < at[r].size(); ++d) at[r][d] = los[r][d] - offset[d];
      direct = direct && Contiguous(lens[r], buf.shape);
    }
    if (direct) {
      for (size_t r = 0; r < group.size(); ++r) {
        displs[r] = counts[r] == 0 ? 0 : static_cast<int>(buf.Offset(at[r]));
      }
      comm_->Allgatherv(send, counts[me], buf.data.data(), counts, displs, TypeOf<T>(), axes);
    } else {
      for (size_t r = 1; r < group.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
      Buffer<T> all;
      all.Resize({displs.back() + counts.back()});
      comm_->Allgatherv(send, counts[me], all.data.data(), counts, displs, TypeOf<T>(), axes);
      for (size_t r = 0; r < group.size(); ++r) {
        if (counts[r] == 0) continue;
        CopyDenseInto(all.data.data() + displs[r], lens[r], buf, at[r]);
        copied_ += static_cast<int64_t>(counts[r]) * sizeof(T);
      }
    }
    bytes_ += static_cast<int64_t>(counts[me]) * sizeof(T);
  }

  void ShiftStep(const std::string& buffer, int axis, int shift) override {
    Buffer<T>& buf = buffers_[buffer];
    // Receive from the neighbour at +shift into a second buffer while sending this one to
    // the neighbour at -shift (a ring), then swap the two by pointer: no copy.
    Coords from = coords_, to = coords_;
    from[axis] += shift;
    to[axis] -= shift;
    std::vector<T>& spare = spare_[buffer];
    spare.resize(buf.data.size());
    const int64_t n = static_cast<int64_t>(buf.data.size());
    comm_->Exchange({{comm_->RankOf(to), buf.data.data(), n}},
                    {comm_->RankOf(from), spare.data(), n}, TypeOf<T>());
    if (async_.erase(buffer) > 0) {
      pending_.insert(buffer);  // Wait swaps the halves
    } else {
      buf.data.swap(spare);
    }
    bytes_ += n * static_cast<int64_t>(sizeof(T));
  }

  void PointToPointNow(const std::string& tensor, const std::string& buffer, const CoordsFn& source,
                       const CoordsFn& offset) {
    Buffer<T>& buf = buffers_[buffer];
    const Buffer<T>& shard = shards_[tensor];
    const std::vector<int64_t> zeros(buf.shape.size(), 0);
    std::vector<Message> sends;
    std::vector<Buffer<T>> packed;
    packed.reserve(size_);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const Coords c = comm_->CoordsOf(r);
      if (source(c) != coords_) continue;
      packed.emplace_back();
      packed.back().Resize(buf.shape);
      CopyBox(shard, offset(c), packed.back(), zeros, buf.shape);
      copied_ += static_cast<int64_t>(packed.back().data.size()) * sizeof(T);
      sends.push_back(
          {r, packed.back().data.data(), static_cast<int64_t>(packed.back().data.size())});
      bytes_ += static_cast<int64_t>(packed.back().data.size()) * sizeof(T);
    }
    const Coords src = source(coords_);
    Message recv;
    if (src == coords_) {
      CopyBox(shard, offset(coords_), buf, zeros, buf.shape);
      copied_ += static_cast<int64_t>(buf.data.size()) * sizeof(T);
    } else {
      recv = {comm_->RankOf(src), buf.data.data(), static_cast<int64_t>(buf.data.size())};
    }
    comm_->Exchange(sends, recv, TypeOf<T>());
  }

  void ReduceInto(const std::string& kind, const std::string& tensor, const std::string& buffer,
                  const std::vector<int64_t>& offset, const std::vector<int>& axes) override {
    ReduceNow(kind, tensor, buffer, offset, axes);
    if (async_.erase(buffer) > 0) {
      // Done already: the next kernels and Zero use the other half.
      std::vector<T>& other = spare_[buffer];
      other.resize(buffers_[buffer].data.size());
      buffers_[buffer].data.swap(other);
    }
  }

  void ReduceNow(const std::string& kind, const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes) {
    const TensorSpec& t = Tensor(tensor);
    Buffer<T>& part = buffers_[buffer];
    if (kind == "AllReduce") {
      comm_->Allreduce(part.data.data(), static_cast<int64_t>(part.data.size()), TypeOf<T>(),
                       ReduceOp::kSum, axes);
      bytes_ += static_cast<int64_t>(part.data.size()) * sizeof(T);
      AddHeld(t, part, offset);
    } else if (kind == "Reduce" || kind == "ReduceScatter") {
      for (const Coords& g : comm_->Group(axes)) {
        std::vector<int64_t> lo, len;
        if (!Held(t, g, offset, part.shape, &lo, &len)) continue;
        std::vector<int64_t> rel(lo.size());
        for (size_t d = 0; d < lo.size(); ++d) rel[d] = lo[d] - offset[d];
        int64_t n = 1;
        for (int64_t l : len) n *= l;
        // The piece goes straight from the partial buffer when it is contiguous there;
        // else it is packed first. Only the holder receives the sum.
        const T* send = part.data.data() + part.Offset(rel);
        Buffer<T> piece, sum;
        if (!Contiguous(len, part.shape)) {
          piece.Resize(len);
          CopyBox(part, rel, piece, std::vector<int64_t>(len.size(), 0), len);
          copied_ += n * static_cast<int64_t>(sizeof(T));
          send = piece.data.data();
        }
        if (g == coords_) sum.Resize(len);
        comm_->ReduceSum(send, g == coords_ ? sum.data.data() : nullptr, n, TypeOf<T>(), axes, g);
        bytes_ += n * static_cast<int64_t>(sizeof(T));
        if (g == coords_) AddHeld(t, sum, lo);
      }
    } else {
      AddHeld(t, part, offset);
    }
  }

  void Kernel(const std::string& kernel, bool sum, const std::vector<std::string>& indices,
              const std::vector<int64_t>& extents, const OperandSpec& out,
              const std::vector<OperandSpec>& in) override {
    const double t0 = comm_->Now();
    ++kernel_calls_;
    struct Timer {
      const Comm& comm;
      double t0;
      double* acc;
      ~Timer() { *acc += comm.Now() - t0; }
    } timer{*comm_, t0, &kernel_time_};
    const TileOperand<T> o = Tile(out, indices);
    std::vector<TileOperand<T>> ins;
    for (const OperandSpec& x : in) ins.push_back(Tile(x, indices));
    if (kernel.rfind("matmul", 0) == 0 && in.size() == 2 && out.dims.size() >= 2) {
      auto pos = [&](const std::string& name) {
        return static_cast<int>(std::find(indices.begin(), indices.end(), name) - indices.begin());
      };
      std::string k;
      for (const std::string& d : in[0].dims) {
        if (std::find(out.dims.begin(), out.dims.end(), d) == out.dims.end()) k = d;
      }
      if (!k.empty() && GemmKernel(extents, pos(out.dims[out.dims.size() - 2]),
                                   pos(out.dims.back()), pos(k), o, ins[0], ins[1])) {
        return;
      }
    }
    GenericKernel(extents, o, ins, sum);
  }

  RunStats Measure(const std::function<void()>& body, int warmup, int reps,
                   const std::string& fault) override {
    RunStats m;
    for (int i = 0; i < warmup + reps; ++i) {
      ResetOutput();
      bytes_ = 0;
      copied_ = 0;
      kernel_time_ = 0;
      kernel_calls_ = 0;
      comm_->Barrier();
      const double t0 = comm_->Now();
      body();
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
    Buffer<T>& out = shards_[statement_.output];
    if (fault == "wrong" && rank_ == 0 && !out.data.empty()) out.data[out.data.size() / 2] += T(1);
    m.checksum = 0;
    for (T v : out.data) m.checksum += v;
    comm_->Allreduce(&m.checksum, 1, DataType::kDouble, ReduceOp::kSum, comm_->AllAxes());
    m.error = FirstError(Verify());
    m.verified = m.error.empty();
    return m;
  }

 private:
  // Runs `fill` (a transfer into `buffer`); after Async(buffer), into the buffer's other
  // half, which Wait makes current.
  void IntoBuffer(const std::string& buffer, const std::function<void()>& fill) {
    if (async_.erase(buffer) == 0) return fill();
    Buffer<T>& buf = buffers_[buffer];
    std::vector<T>& other = spare_[buffer];
    other.resize(buf.data.size());
    buf.data.swap(other);
    fill();
    buf.data.swap(other);
    pending_.insert(buffer);
  }

  const TensorSpec& Tensor(const std::string& name) const {
    for (const TensorSpec& t : tensors_) {
      if (t.name == name) return t;
    }
    return tensors_[0];
  }
  void Fill(const TensorSpec& t) {
    Buffer<T>& b = shards_[t.name];
    const std::vector<int64_t> start = t.block_start(coords_);
    std::vector<int64_t> g(start.size());
    int64_t i = 0;
    if (t.local_shape.empty()) b.data[0] = static_cast<T>(ElementValue(seed_, t.name, 0));
    ForEachPoint(t.local_shape, [&](const std::vector<int64_t>& l) {
      for (size_t d = 0; d < l.size(); ++d) g[d] = start[d] + l[d];
      b.data[i++] = static_cast<T>(ElementValue(seed_, t.name, Linear(g, t.shape)));
    });
  }
  void ResetOutput() {
    const TensorSpec& out = Tensor(statement_.output);
    if (accumulate_) {
      Fill(out);
    } else {
      std::fill(shards_[out.name].data.begin(), shards_[out.name].data.end(), T(0));
    }
  }

  // The part of the box (offset, size) that the rank at `coords` holds; false if none.
  bool Held(const TensorSpec& t, const Coords& coords, const std::vector<int64_t>& off,
            const std::vector<int64_t>& size, std::vector<int64_t>* lo,
            std::vector<int64_t>* len) const {
    const std::vector<int64_t> start = t.block_start(coords);
    lo->clear();
    len->clear();
    for (size_t d = 0; d < off.size(); ++d) {
      const int64_t a = std::max(off[d], start[d]);
      const int64_t b = std::min(off[d] + size[d], start[d] + t.local_shape[d]);
      if (b <= a) return false;
      lo->push_back(a);
      len->push_back(b - a);
    }
    return true;
  }
  void AddHeld(const TensorSpec& t, const Buffer<T>& part, const std::vector<int64_t>& off) {
    std::vector<int64_t> lo, len;
    if (!Held(t, coords_, off, part.shape, &lo, &len)) return;
    const std::vector<int64_t> start = t.block_start(coords_);
    Buffer<T>& shard = shards_[t.name];
    if (lo.empty()) {
      shard.data[0] += part.data[0];
      return;
    }
    // Row by row: the last dim is contiguous in both buffers.
    const std::vector<int64_t> outer(len.begin(), len.end() - 1);
    std::vector<int64_t> s(lo.size()), d(lo.size());
    ForEachPoint(outer, [&](const std::vector<int64_t>& i) {
      for (size_t k = 0; k + 1 < lo.size(); ++k) {
        s[k] = lo[k] + i[k] - off[k];
        d[k] = lo[k] + i[k] - start[k];
      }
      s.back() = lo.back() - off.back();
      d.back() = lo.back() - start.back();
      T* to = &shard.data[shard.Offset(d)];
      const T* from = &part.data[part.Offset(s)];
      for (int64_t j = 0; j < len.back(); ++j) to[j] += from[j];
    });
  }

  TileOperand<T> Tile(const OperandSpec& o, const std::vector<std::string>& indices) {
    Buffer<T>& b = o.buffer == o.tensor ? shards_[o.buffer] : buffers_[o.buffer];
    TileOperand<T> t;
    t.base = b.data.data() + b.Offset(o.offset);
    for (const std::string& idx : indices) {
      int64_t s = 0;
      for (size_t d = 0; d < o.dims.size(); ++d) {
        if (o.dims[d] == idx) s += b.strides[d];
      }
      t.strides.push_back(s);
    }
    return t;
  }

  // Checks this rank's output shard (or a deterministic sample when the reference would
  // cost more than 4e6 multiply-adds) against the f64 reference; "" when it matches.
  std::string Verify() {
    const TensorSpec& out = Tensor(statement_.output);
    std::map<std::string, int64_t> extent;
    for (const TensorSpec& t : tensors_) {
      for (size_t d = 0; d < t.dims.size(); ++d) extent[t.dims[d]] = t.shape[d];
    }
    std::vector<std::string> reduction;
    std::vector<int64_t> red_extent;
    int64_t red_size = 1;
    for (const auto& [idx, e] : extent) {
      if (std::find(out.dims.begin(), out.dims.end(), idx) != out.dims.end()) continue;
      reduction.push_back(idx);
      red_extent.push_back(e);
      red_size *= e;
    }
    const Buffer<T>& shard = shards_[out.name];
    const int64_t local = static_cast<int64_t>(shard.data.size());
    constexpr int64_t kLimit = 4'000'000;
    const int64_t step =
        local * red_size > kLimit ? std::max<int64_t>(1, local * red_size / kLimit) : 1;
    const std::vector<int64_t> start = out.block_start(coords_);
    const double tol = sizeof(T) == 4 ? 2e-4 : 1e-10;
    std::map<std::string, int64_t> at;
    int64_t flat = -1;
    std::string error;
    ForEachPoint(out.local_shape.empty() ? std::vector<int64_t>{1} : out.local_shape,
                 [&](const std::vector<int64_t>& l) {
                   ++flat;
                   if (!error.empty() || flat % step != 0) return;
                   std::vector<int64_t> g;
                   for (size_t d = 0; d < out.dims.size(); ++d) {
                     g.push_back(start[d] + l[d]);
                     at[out.dims[d]] = g.back();
                   }
                   double ref =
                       accumulate_ ? ElementValue(seed_, out.name, Linear(g, out.shape)) : 0.0;
                   double mag = std::abs(ref);
                   ForEachPoint(red_extent.empty() ? std::vector<int64_t>{1} : red_extent,
                                [&](const std::vector<int64_t>& ri) {
                                  for (size_t k = 0; k < reduction.size(); ++k)
                                    at[reduction[k]] = ri[k];
                                  double term = statement_.sum ? 0.0 : 1.0;
                                  for (const auto& [tensor, dims] : statement_.operands) {
                                    std::vector<int64_t> e;
                                    for (const std::string& d : dims) e.push_back(at[d]);
                                    const double v = ElementValue(seed_, tensor,
                                                                  Linear(e, Tensor(tensor).shape));
                                    term = statement_.sum ? term + v : term * v;
                                  }
                                  ref += term;
                                  mag += std::abs(term);
                                });
                   const double got = shard.data[flat];
                   if (!(std::abs(got - ref) <= tol * mag + 1e-6)) {
                     std::vector<std::string> coord;
                     for (size_t a = 0; a < coords_.size(); ++a)
                       coord.push_back(absl::StrCat(names_[a], "=", coords_[a]));
                     error = absl::StrFormat("rank (%s): %s[%s] = %.6g but the reference is %.6g",
                                             absl::StrJoin(coord, ", "), out.name,
                                             absl::StrJoin(g, ", "), got, ref);
                   }
                 });
    return error;
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
  StatementSpec statement_;
  bool accumulate_;
  uint64_t seed_;
  int rank_ = 0, size_ = 1;
  Coords coords_;
  std::map<std::string, Buffer<T>> shards_, buffers_;
  std::map<std::string, std::vector<T>> spare_;  // a buffer's second half (rings, prefetch)
  std::set<std::string> async_;    // buffers whose next transfer goes to the other half
  std::set<std::string> pending_;  // buffers whose other half Wait makes current
  int64_t copied_ = 0;             // bytes packed or copied on this rank in this repetition
  int64_t bytes_ = 0;
  double kernel_time_ = 0;
  int64_t kernel_calls_ = 0;
};

}  // namespace

std::unique_ptr<RankRuntimeBase> MakeRankRuntime(int dtype_bytes, std::unique_ptr<Comm> comm,
                                                 const std::vector<std::string>& axis_names,
                                                 std::vector<TensorSpec> tensors,
                                                 std::vector<BufferSpec> buffers,
                                                 StatementSpec statement, bool accumulate,
                                                 uint64_t seed) {
  if (dtype_bytes == 8) {
    return std::make_unique<RankRuntime<double>>(std::move(comm), axis_names, std::move(tensors),
                                                 std::move(buffers), std::move(statement),
                                                 accumulate, seed);
  }
  return std::make_unique<RankRuntime<float>>(std::move(comm), axis_names, std::move(tensors),
                                              std::move(buffers), std::move(statement), accumulate,
                                              seed);
}

}  // namespace meshtune::runtime
