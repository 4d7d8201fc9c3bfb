// GemmTable: the local GEMM's speed as a function of its tile shape, from the rates
// `meshtune calibrate` measured on a grid of shapes (HardwareProfile.gemm_rates).
//
// The rate (flops per second) is interpolated trilinearly in log2(m), log2(n), log2(k)
// between the grid's values, which must form a full grid (every combination of the m, n
// and k values measured). Beyond the largest value of a dim the rate stays that of the
// largest (a bigger GEMM runs no faster per flop); below the smallest it falls in
// proportion (a call of fewer rows costs what one of the smallest measured size does, the
// per-call overhead dominating). Plain value; thread-safe to read.
#ifndef MESHTUNE_COST_GEMM_TABLE_H_
#define MESHTUNE_COST_GEMM_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace meshtune::cost {

// One measured shape.
struct GemmSample {
  int64_t m = 0, n = 0, k = 0;
  double flops_per_s = 0;
};

class GemmTable {
 public:
  GemmTable() = default;  // empty: no rates (Empty() is true)

  // The table of `samples`. InvalidArgument naming the problem when a size or rate is not
  // positive and finite, a shape is measured twice, or the shapes do not form a full grid.
  static absl::StatusOr<GemmTable> Create(const std::vector<GemmSample>& samples);

  bool Empty() const { return rates_.empty(); }

  // Flops per second of one m x n x k GEMM call (see the file comment); 0 when Empty(). m, n
  // and k below 1 count as 1.
  double Rate(int64_t m, int64_t n, int64_t k) const;

  // Seconds of one m x n x k call: 2 m n k / Rate (0 when Empty()).
  double Seconds(int64_t m, int64_t n, int64_t k) const;

  // This table with every rate multiplied by `factor` (> 0).
  GemmTable Scaled(double factor) const;

  const std::vector<int64_t>& ms() const { return axis_[0]; }
  const std::vector<int64_t>& ns() const { return axis_[1]; }
  const std::vector<int64_t>& ks() const { return axis_[2]; }

 private:
  double At(size_t i, size_t j, size_t l) const {
    return rates_[(i * axis_[1].size() + j) * axis_[2].size() + l];
  }

  std::vector<int64_t> axis_[3];  // the grid's sizes per dim, ascending
  std::vector<double> rates_;     // row-major over (m, n, k)
};

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_GEMM_TABLE_H_
