#include "runtime/kernels.h"

#include <cblas.h>

#include <algorithm>

namespace meshtune::runtime {

namespace {

template <typename T>
void Recurse(const std::vector<int64_t>& extents, size_t d, T* out, std::vector<const T*>& in,
             const TileOperand<T>& o, const std::vector<TileOperand<T>>& ops, bool sum) {
  const int64_t n = extents[d];
  const int64_t so = o.strides[d];
  if (d + 1 == extents.size()) {
    for (int64_t x = 0; x < n; ++x) {
      T v = sum ? T(0) : T(1);
      for (size_t i = 0; i < ops.size(); ++i) {
        const T e = in[i][x * ops[i].strides[d]];
        v = sum ? v + e : v * e;
      }
      out[x * so] += v;
    }
    return;
  }
  std::vector<const T*> next = in;
  for (int64_t x = 0; x < n; ++x) {
    for (size_t i = 0; i < ops.size(); ++i) next[i] = in[i] + x * ops[i].strides[d];
    Recurse(extents, d + 1, out + x * so, next, o, ops, sum);
  }
}

void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

template <typename T>
void GenericKernel(const std::vector<int64_t>& extents, const TileOperand<T>& out,
                   const std::vector<TileOperand<T>>& in, bool sum) {
  if (extents.empty()) {
    T v = sum ? T(0) : T(1);
    for (const TileOperand<T>& op : in) v = sum ? v + *op.base : v * *op.base;
    *out.base += v;
    return;
  }
  std::vector<const T*> ptrs;
  for (const TileOperand<T>& op : in) ptrs.push_back(op.base);
  Recurse(extents, 0, out.base, ptrs, out, in, sum);
}

template <typename T>
bool GemmKernel(const std::vector<int64_t>& extents, int i, int j, int k, const TileOperand<T>& out,
                const TileOperand<T>& a, const TileOperand<T>& b, bool overwrite) {
  const int64_t m = extents[i], n = extents[j], kk = extents[k];
  if (out.strides[j] != 1 && n > 1) return false;
  // A leading dim only matters when its rows are more than one; otherwise any valid one.
  const int64_t ldc = m > 1 ? out.strides[i] : std::max<int64_t>(n, 1);
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  if (a.strides[k] == 1 || kk == 1) {
    ta = CblasNoTrans;
    lda = m > 1 ? a.strides[i] : std::max<int64_t>(kk, 1);
  } else if (a.strides[i] == 1 || m == 1) {
    ta = CblasTrans;
    lda = kk > 1 ? a.strides[k] : std::max<int64_t>(m, 1);
  } else {
    return false;
  }
  if (b.strides[j] == 1 || n == 1) {
    tb = CblasNoTrans;
    ldb = kk > 1 ? b.strides[k] : std::max<int64_t>(n, 1);
  } else if (b.strides[k] == 1 || kk == 1) {
    tb = CblasTrans;
    ldb = n > 1 ? b.strides[j] : std::max<int64_t>(kk, 1);
  } else {
    return false;
  }
  // BLAS wants leading dims of at least the row length.
  if (ldc < n || lda < (ta == CblasNoTrans ? kk : m) || ldb < (tb == CblasNoTrans ? n : kk))
    return false;
  Gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(kk), a.base,
       static_cast<int>(lda), b.base, static_cast<int>(ldb), overwrite ? T(0) : T(1), out.base,
       static_cast<int>(ldc));
  return true;
}

namespace {

// A group of tile indices (positions in the tile) that acts as one GEMM dim: merged when
// each index's stride is the next (inner) one's times its extent, in every operand given.
struct Merged {
  int64_t extent = 1;
  std::vector<int64_t> strides;  // per operand (0 when the group is empty)
  std::vector<int> loops;        // indices of the group left as loops
};

// Merges the innermost run of `group` (ordered by the first operand's stride, largest
// first) whose strides chain in every operand of `ops`; the others become loops.
template <typename T>
Merged Merge(std::vector<int> group, const std::vector<int64_t>& extents,
             const std::vector<const TileOperand<T>*>& ops) {
  Merged m;
  m.strides.assign(ops.size(), 0);
  if (group.empty()) return m;
  std::sort(group.begin(), group.end(),
            [&](int x, int y) { return ops[0]->strides[x] > ops[0]->strides[y]; });
  size_t first = group.size() - 1;  // the run is group[first..]
  while (first > 0) {
    const int outer = group[first - 1], inner = group[first];
    bool chains = true;
    for (const TileOperand<T>* op : ops)
      chains = chains && op->strides[outer] == op->strides[inner] * extents[inner];
    if (!chains) break;
    --first;
  }
  m.loops.assign(group.begin(), group.begin() + first);
  for (size_t g = first; g < group.size(); ++g) m.extent *= extents[group[g]];
  for (size_t o = 0; o < ops.size(); ++o) m.strides[o] = ops[o]->strides[group.back()];
  return m;
}

}  // namespace

template <typename T>
bool ContractionGemm(const std::vector<int64_t>& extents, const TileOperand<T>& out,
                     const TileOperand<T>& a, const TileOperand<T>& b, bool overwrite) {
  for (int64_t e : extents) {
    if (e <= 0) return true;  // an empty tile: nothing to do
  }
  std::vector<int> mg, ng, kg, loops;
  for (size_t p = 0; p < extents.size(); ++p) {
    if (extents[p] == 1) continue;
    const bool o = out.strides[p] != 0, x = a.strides[p] != 0, y = b.strides[p] != 0;
    const int i = static_cast<int>(p);
    if (o && x && !y) {
      mg.push_back(i);
    } else if (o && !x && y) {
      ng.push_back(i);
    } else if (!o && x && y) {
      kg.push_back(i);
    } else {
      loops.push_back(i);
    }
  }
  const Merged m = Merge<T>(mg, extents, {&out, &a});
  const Merged n = Merge<T>(ng, extents, {&out, &b});
  const Merged k = Merge<T>(kg, extents, {&a, &b});
  for (const Merged* g : {&m, &n, &k}) loops.insert(loops.end(), g->loops.begin(), g->loops.end());
  // Loops of tiny GEMMs (an element-wise product is a loop of 1x1x1 ones) are slower than
  // the generic loop.
  if (!loops.empty() && m.extent * n.extent * k.extent < 4096) return false;
  // The GEMM: tile indices 0 (M), 1 (N), 2 (K) over the merged strides.
  const std::vector<int64_t> gemm_extents = {m.extent, n.extent, k.extent};
  TileOperand<T> go{out.base, {m.strides[0], n.strides[0], 0}};
  TileOperand<T> ga{a.base, {m.strides[1], 0, k.strides[0]}};
  TileOperand<T> gb{b.base, {0, n.strides[1], k.strides[1]}};
  // Loops around it, the last fastest; out = a*b only where no loop index skips out.
  std::vector<int64_t> idx(loops.size(), 0);
  bool first_call = true;
  while (true) {
    bool revisit = false;
    go.base = out.base;
    ga.base = a.base;
    gb.base = b.base;
    for (size_t l = 0; l < loops.size(); ++l) {
      go.base += idx[l] * out.strides[loops[l]];
      ga.base += idx[l] * a.strides[loops[l]];
      gb.base += idx[l] * b.strides[loops[l]];
      revisit = revisit || (out.strides[loops[l]] == 0 && idx[l] > 0);
    }
    if (!GemmKernel(gemm_extents, 0, 1, 2, go, ga, gb, overwrite && !revisit)) {
      // C^T = B^T A^T: the same GEMM with the roles of M and N (and of a and b) swapped.
      TileOperand<T> to{go.base, {go.strides[1], go.strides[0], 0}};
      TileOperand<T> ta{gb.base, {gb.strides[1], 0, gb.strides[2]}};
      TileOperand<T> tb{ga.base, {0, ga.strides[0], ga.strides[2]}};
      const std::vector<int64_t> swapped = {n.extent, m.extent, k.extent};
      if (!GemmKernel(swapped, 0, 1, 2, to, ta, tb, overwrite && !revisit)) {
        if (first_call) return false;  // layouts are the same at every loop point
      }
    }
    first_call = false;
    int d = static_cast<int>(loops.size()) - 1;
    while (d >= 0 && ++idx[d] == extents[loops[d]]) idx[d--] = 0;
    if (d < 0) return true;
  }
}

template void GenericKernel<float>(const std::vector<int64_t>&, const TileOperand<float>&,
                                   const std::vector<TileOperand<float>>&, bool);
template void GenericKernel<double>(const std::vector<int64_t>&, const TileOperand<double>&,
                                    const std::vector<TileOperand<double>>&, bool);
template bool ContractionGemm<float>(const std::vector<int64_t>&, const TileOperand<float>&,
                                     const TileOperand<float>&, const TileOperand<float>&, bool);
template bool ContractionGemm<double>(const std::vector<int64_t>&, const TileOperand<double>&,
                                      const TileOperand<double>&, const TileOperand<double>&, bool);
template bool GemmKernel<float>(const std::vector<int64_t>&, int, int, int,
                                const TileOperand<float>&, const TileOperand<float>&,
                                const TileOperand<float>&, bool);
template bool GemmKernel<double>(const std::vector<int64_t>&, int, int, int,
                                 const TileOperand<double>&, const TileOperand<double>&,
                                 const TileOperand<double>&, bool);

}  // namespace meshtune::runtime
