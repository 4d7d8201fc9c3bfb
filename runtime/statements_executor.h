// The executor of a program of statements (ir::StatementProgram): each statement's lowered
// Program runs over shards this executor owns (BoundProgram), one after another on the same
// ranks, and each intermediate moves from the shards its producer leaves it in to the
// shards its consumer reads (runtime/redistribution.h) — or, where the two are the same
// boxes on every rank, is read in place and nothing moves. The program's inputs (and a `+=`
// output) are filled from runtime/fill.h; a repetition's time is the whole program's, the
// moves between statements included; after the last one every statement's output (the
// intermediates too) is checked on each rank against the serial reference of the whole
// program (runtime/program_values.h: the statements as stated and the fill, nothing of the
// lowered Programs) and for coverage (runtime/oracle.h). Collective: every rank calls it
// with the same statements. Not thread-safe.
#ifndef MESHTUNE_RUNTIME_STATEMENTS_EXECUTOR_H_
#define MESHTUNE_RUNTIME_STATEMENTS_EXECUTOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "codegen/program.h"
#include "runtime/bound_statements.h"
#include "runtime/comm.h"
#include "runtime/executor.h"
#include "runtime/oracle.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

// One statement of a program: as stated (what its output is checked against) and lowered.
struct StatementJob {
  ProblemSpec problem;
  codegen::Program program;
};

// Runs `statements` (at least one) as one program on this rank (runtime/bound_statements.h:
// one home shard per tensor; an input a later statement reads in another layout is moved
// from its first reader's shard, and timed with the rest). A tensor whose home statement's
// Program gives it a layout (an input's first reader, an output's writer) is held in that
// layout, moved into its home before the statements and an output back after, inside the
// time, and an output checked there. The result carries an error naming the statement when
// the statements' meshes or dtypes differ, a statement reads a tensor an earlier one wrote
// with another shape, or a check fails ("statement 2: rank (x=1): Y[0, 3] = ..."). The
// stats' bytes_sent_max counts the bytes the busiest rank sends between statements in one
// repetition (what the statements' own transfers send is theirs, not counted).
RunStats ExecuteStatements(const std::vector<StatementJob>& statements, const CommFor& comm_for,
                           const ExecOptions& options);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_STATEMENTS_EXECUTOR_H_
