// Dense row-major arrays and the boxes the runtime moves between them: a rank's shards and
// transfer buffers are Dense; CopyBox and CopyDenseInto are the only element copies the
// runtime makes (every caller counts what it copies); Contiguous says when a box is one run
// of elements and can be sent or read in place. Header-only; thread-compatible.
#ifndef MESHTUNE_RUNTIME_BOX_H_
#define MESHTUNE_RUNTIME_BOX_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace meshtune::runtime {

// Row-major strides of an array of `shape` (in elements).
inline std::vector<int64_t> DenseStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

// The number of elements of a box of sizes `shape` (1 for a scalar).
inline int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t x : shape) n *= x;
  return n;
}

// Offset of `idx` under `strides`.
inline int64_t OffsetOf(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

// A dense row-major array.
template <typename T>
struct Dense {
  std::vector<int64_t> shape, strides;
  std::vector<T> data;

  void Resize(const std::vector<int64_t>& s) {
    shape = s;
    strides = DenseStrides(s);
    data.assign(Elements(s), T(0));
  }
  int64_t Offset(const std::vector<int64_t>& idx) const { return OffsetOf(idx, strides); }
};

// Calls fn(index) for every point of the box `size`, last dim fastest.
inline void ForEachPoint(const std::vector<int64_t>& size,
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

// Copies the box of sizes `size` at `src` (strides `src_strides`) to `dst` (strides
// `dst_strides`), row by row; the last dim must have stride 1 in both.
template <typename T>
void CopyStrided(const T* src, const std::vector<int64_t>& src_strides, T* dst,
                 const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& size) {
  if (size.empty()) {
    *dst = *src;
    return;
  }
  const std::vector<int64_t> outer(size.begin(), size.end() - 1);
  ForEachPoint(outer, [&](const std::vector<int64_t>& idx) {
    std::memcpy(dst + OffsetOf(idx, dst_strides), src + OffsetOf(idx, src_strides),
                size.back() * sizeof(T));
  });
}

// Copies the box of sizes `size` at `src_off` in `src` to `dst_off` in `dst`.
template <typename T>
void CopyBox(const Dense<T>& src, const std::vector<int64_t>& src_off, Dense<T>& dst,
             const std::vector<int64_t>& dst_off, const std::vector<int64_t>& size) {
  CopyStrided(src.data.data() + src.Offset(src_off), src.strides,
              dst.data.data() + dst.Offset(dst_off), dst.strides, size);
}

// Row-major linear index of `idx` in an array of `shape`.
inline int64_t Linear(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o = o * shape[d] + idx[d];
  return o;
}

// The index (one per dim) of row-major linear index `linear` in an array of `shape`.
inline std::vector<int64_t> Unlinear(int64_t linear, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  return idx;
}

// Shards where blocks do not divide an extent (codegen/program.h, "ragged"): a shard is
// stored at its local shape on every rank, and its local element l is the tensor's element
// start + l when that lies within the tensor's `shape` on every dim, else padding (never
// data: not filled, not checked, not counted).

// The row-major global index (in a tensor of `shape`) of element `local` of a shard whose
// first element is the tensor's element `start`; -1 when it is padding.
inline int64_t GlobalOf(const std::vector<int64_t>& local, const std::vector<int64_t>& start,
                        const std::vector<int64_t>& shape) {
  int64_t o = 0;
  for (size_t d = 0; d < local.size(); ++d) {
    const int64_t g = start[d] + local[d];
    if (g < 0 || g >= shape[d]) return -1;
    o = o * shape[d] + g;
  }
  return o;
}

// GlobalOf the shard's element at row-major linear index `slot` of its `local_shape`.
inline int64_t SlotGlobal(int64_t slot, const std::vector<int64_t>& local_shape,
                          const std::vector<int64_t>& start, const std::vector<int64_t>& shape) {
  return GlobalOf(Unlinear(slot, local_shape), start, shape);
}

// Calls row(offset, data, length) for every row (the run along the last dim) of a shard of
// `local_shape` whose first element is the tensor's element `start` in a tensor of `shape`:
// the row's first local offset, how many of its first elements are data (the rest is
// padding; 0 for a row past `shape` on another dim) and its length. A scalar is one row of
// one element, data.
inline void ForEachShardRow(const std::vector<int64_t>& local_shape,
                            const std::vector<int64_t>& start, const std::vector<int64_t>& shape,
                            const std::function<void(int64_t, int64_t, int64_t)>& row) {
  if (local_shape.empty()) {
    row(0, 1, 1);
    return;
  }
  const size_t last = local_shape.size() - 1;
  const int64_t length = local_shape[last];
  int64_t data = shape[last] - start[last];
  data = data < 0 ? 0 : (data > length ? length : data);
  const std::vector<int64_t> outer(local_shape.begin(), local_shape.end() - 1);
  int64_t offset = 0;
  ForEachPoint(outer, [&](const std::vector<int64_t>& idx) {
    bool inside = true;
    for (size_t d = 0; d < idx.size(); ++d) {
      const int64_t g = start[d] + idx[d];
      inside = inside && g >= 0 && g < shape[d];
    }
    row(offset, inside ? data : 0, length);
    offset += length;
  });
}

// Whether the box of sizes `len` in a row-major array of `shape` is one contiguous run of
// elements: every dim after the first one longer than 1 is whole.
inline bool Contiguous(const std::vector<int64_t>& len, const std::vector<int64_t>& shape) {
  size_t d = 0;
  while (d < len.size() && len[d] == 1) ++d;
  for (++d; d < len.size(); ++d) {
    if (len[d] != shape[d]) return false;
  }
  return true;
}

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_BOX_H_
