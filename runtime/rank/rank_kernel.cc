// RankRuntime<T> (rank_runtime.h): local kernels. A tile over shards and buffers, to (loops
// of) GEMMs or the generic loop (runtime/kernels.h), in row chunks with communication
// progress between them while a transfer is in flight.
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/rank/rank_runtime.h"

namespace meshtune::runtime::internal {

namespace {

int Position(const std::vector<std::string>& indices, const std::string& name) {
  const auto it = std::find(indices.begin(), indices.end(), name);
  return it == indices.end() ? -1 : static_cast<int>(it - indices.begin());
}

// Whether the tile writes every element of `b` (the operand is the whole buffer).
template <typename T>
bool Covers(const TransferBuffer<T>& b, const OperandSpec& out,
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

}  // namespace

template <typename T>
void RankRuntime<T>::Kernel(const std::string& kernel, bool sum,
                            const std::vector<std::string>& indices,
                            const std::vector<int64_t>& extents, const OperandSpec& out,
                            const std::vector<OperandSpec>& in) {
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
      if (zeroed != nullptr) std::fill(oc.base, oc.base + (r1 - r0) * (zeroed->size / rows), T(0));
      GenericKernel(sub, oc, inc, sum);
    }
    if (c + 1 < chunks) comm_->Progress();
  }
  if (zeroed != nullptr) zeroed->zero_pending = false;
  kernel_time_ += comm_->Now() - t0;
}

// A kernel operand: its address and its stride along each tile index.
template <typename T>
TileOperand<T> RankRuntime<T>::Tile(const OperandSpec& o, const std::vector<std::string>& indices) {
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

template class RankRuntime<float>;
template class RankRuntime<double>;

}  // namespace meshtune::runtime::internal
