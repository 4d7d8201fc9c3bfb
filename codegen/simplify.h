// Simplify: quasi-affine Exprs folded to a shorter equal form, given the ranges of their
// variables.
//
// Sums, differences, negations and products by constants are collected into one linear
// combination (like terms merged, zero terms dropped). A floor division or modulo by a
// constant d is rewritten with what the variables' ranges prove:
//   floord(d*q + r, d)  = q + floord(r, d)      (q linear with integer coefficients)
//   floord(r, d)        = k                     when r's range lies in [k*d, (k+1)*d)
//   floormod(d*q + r, d) = floormod(r, d)
//   floormod(r, d)      = r - k*d               when r's range lies in [k*d, (k+1)*d)
// e.g. floord(x * 256, 256) is x, floormod(floormod(no + y, 32) - x, 32) keeps its shape
// and floormod(x, 32) with x in [0, 31] is x. Other operators have their operands
// simplified. The result equals `e` for every assignment within `ranges` (variables not in
// `ranges` are unbounded, so only range-free rewrites apply to them). Pure; thread-safe.
#ifndef MESHTUNE_CODEGEN_SIMPLIFY_H_
#define MESHTUNE_CODEGEN_SIMPLIFY_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "codegen/expr.h"

namespace meshtune::codegen {

// Inclusive [lo, hi] per variable name.
using VarRanges = std::map<std::string, std::pair<int64_t, int64_t>>;

// `e` simplified under `ranges` (see the file comment).
Expr Simplify(const Expr& e, const VarRanges& ranges);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_SIMPLIFY_H_
