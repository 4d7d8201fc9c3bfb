// Local kernels: one tile of a contraction or element-wise operation on this rank.
//
// Matmul-shaped tiles go to OpenBLAS (sgemm/dgemm, transposed operands included), and so do
// other two-operand contractions whose indices map to (loops of) GEMMs; the rest (three or
// more operands, element-wise sums) runs in a generic strided loop. Thread-compatible.
#ifndef MESHTUNE_RUNTIME_KERNELS_H_
#define MESHTUNE_RUNTIME_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace meshtune::runtime {

// A tile operand: the address of its first element and, per tile index, the stride (in
// elements) along that index (0 when the operand does not use the index).
template <typename T>
struct TileOperand {
  T* base = nullptr;
  std::vector<int64_t> strides;
};

// out += prod(in) (or sum(in) when `sum`), over every point of the tile `extents`.
template <typename T>
void GenericKernel(const std::vector<int64_t>& extents, const TileOperand<T>& out,
                   const std::vector<TileOperand<T>>& in, bool sum);

// out[i,j] += sum_k a * b through BLAS (out = ... when `overwrite`: beta 0, whatever out
// held), when the strides allow it (each operand's minor dim contiguous, transposed or
// not). `i`, `j`, `k` are positions in `extents`. Returns false (doing nothing) when the
// layout does not fit BLAS; the caller falls back to GenericKernel.
template <typename T>
bool GemmKernel(const std::vector<int64_t>& extents, int i, int j, int k, const TileOperand<T>& out,
                const TileOperand<T>& a, const TileOperand<T>& b, bool overwrite = false);

// out += a * b over the tile `extents` for any two-operand product whose index structure
// fits GEMMs: the tile's indices (extent > 1) group into M (out and a only), N (out and b
// only) and K (a and b, not out); each group's indices that merge into one strided dim (in
// both operands that use it) become a GEMM dim, every other index (batch indices, the rest
// of a group, indices of one operand only) a loop of GEMM calls around it, when each call
// has at least 4096 multiply-adds. `overwrite`:
// out = a * b (beta 0) instead of +=; applied only where a loop does not revisit out.
// Returns false (doing nothing) when no GEMM fits; the caller falls back to GenericKernel.
template <typename T>
bool ContractionGemm(const std::vector<int64_t>& extents, const TileOperand<T>& out,
                     const TileOperand<T>& a, const TileOperand<T>& b, bool overwrite = false);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_KERNELS_H_
