// The one place where codegen/ calls isl's C API: building an isl AST from a 2d+1
// schedule and turning isl AST nodes and expressions into Program nodes and Exprs.
// Uses the isl context of the maps it is given; one thread at a time.
#ifndef MESHTUNE_CODEGEN_ISL_AST_H_
#define MESHTUNE_CODEGEN_ISL_AST_H_

#include <isl/cpp.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/expr.h"
#include "codegen/program.h"

namespace meshtune::codegen {

// Moves every input dim of `m` into parameters named `names` (appended after the existing
// parameters), leaving a zero-dimensional domain.
isl::map InputsToParams(const isl::map& m, const std::vector<std::string>& names);

// The single-valued `m` ({ [] -> [f_0, ..., f_k] } over parameters only) as Exprs over the
// parameter names, simplified within `context` (a parameter set).
absl::StatusOr<std::vector<Expr>> FunctionToExprs(const isl::map& m, const isl::set& context);

// Generates the loop nest of `schedule` (a 2d+1 union map over statements whose dims are
// loops and constants, with parameters) within `context`, naming schedule dims
// `iterators`, and converts it: For and Block nodes become Program nodes; each statement
// instance becomes leaf(statement name).
absl::StatusOr<StmtPtr> GenerateLoops(
    const isl::union_map& schedule, const isl::set& context,
    const std::vector<std::string>& iterators,
    const std::function<absl::StatusOr<StmtPtr>(const std::string&)>& leaf);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_ISL_AST_H_
