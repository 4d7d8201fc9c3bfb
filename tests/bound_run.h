// Programs run on the caller's memory (runtime::BoundProgram), checked on the mesh
// simulator: the path a library user and a generated callable kernel take.
#ifndef MESHTUNE_TESTS_BOUND_RUN_H_
#define MESHTUNE_TESTS_BOUND_RUN_H_

#include <string>

#include "codegen/program.h"
#include "ir/problem.h"

namespace meshtune::testing {

// Runs `program` through BoundProgram on every rank of a simulated mesh, on arrays this
// function allocates per rank (each tensor's shard, filled with runtime/fill.h's values at
// the shard's global indices; the output with its own values for '+=', garbage for '='),
// twice (the output refilled in between, the same BoundProgram reused), and checks each
// rank's output shard against the reference of `problem` (the problem as stated, not as
// lowered) after each run, then that every output element is held (runtime/oracle.h). ""
// when every check passes; else the first mismatch or error.
std::string CheckBoundRun(const ir::Problem& problem, const codegen::Program& program);

// CheckBoundRun without the coverage step: each rank's own output elements against the
// reference, the check every run had before coverage (tests show what coverage adds).
std::string CheckBoundRunPerRank(const ir::Problem& problem, const codegen::Program& program);

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_BOUND_RUN_H_
