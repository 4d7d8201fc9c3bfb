// Shard targets: affine expressions of mesh axes, optionally modulo a constant.
//
// `x`, `(x+y)%8` (Cannon's skew), `(2*x+y)%4`. A target names, for every rank, which
// block of a tensor dim the rank holds. Plain value; thread-safe to read.
#ifndef MESHTUNE_IR_AXIS_EXPR_H_
#define MESHTUNE_IR_AXIS_EXPR_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/mesh.h"
#include "ir/scanner.h"

namespace meshtune::ir {

struct AxisExpr {
  std::vector<std::pair<std::string, int64_t>> terms;  // (axis, coefficient), no zeros
  int64_t constant = 0;
  int64_t modulus = 0;  // 0: no modulo

  // Canonical text: "x", "(x+y)%8", "x%4", "(2*x-y+1)".
  std::string ToString() const;
  // Value for the mesh coordinates `coords` (mod taken non-negative, as isl does).
  int64_t Evaluate(const Mesh& mesh, const std::vector<int64_t>& coords) const;
  // Smallest and largest value over the mesh box (before the modulo).
  std::pair<int64_t, int64_t> Range(const Mesh& mesh) const;
  bool IsPlainAxis() const {
    return terms.size() == 1 && terms[0].second == 1 && constant == 0 && modulus == 0;
  }
  bool operator==(const AxisExpr& o) const {
    return terms == o.terms && constant == o.constant && modulus == o.modulus;
  }
};

// Parses a target from `ts`: sum of terms (integer, axis, integer*axis, parenthesized sum)
// with '+'/'-', then optionally '%' and a positive integer. Axis names are not checked
// here (the mesh is not known); see CheckAxes.
absl::StatusOr<AxisExpr> ParseAxisExpr(TokenStream& ts);

// Fails with InvalidArgument naming the first axis of `e` that `mesh` lacks.
absl::Status CheckAxes(const AxisExpr& e, const Mesh& mesh);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_AXIS_EXPR_H_
