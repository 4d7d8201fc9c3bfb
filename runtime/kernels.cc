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

template void GenericKernel<float>(const std::vector<int64_t>&, const TileOperand<float>&,
                                   const std::vector<TileOperand<float>>&, bool);
template void GenericKernel<double>(const std::vector<int64_t>&, const TileOperand<double>&,
                                    const std::vector<TileOperand<double>>&, bool);
template bool GemmKernel<float>(const std::vector<int64_t>&, int, int, int,
                                const TileOperand<float>&, const TileOperand<float>&,
                                const TileOperand<float>&, bool);
template bool GemmKernel<double>(const std::vector<int64_t>&, int, int, int,
                                 const TileOperand<double>&, const TileOperand<double>&,
                                 const TileOperand<double>&, bool);

}  // namespace meshtune::runtime
