// The tune of a program of several statements (search::Tune's branch for
// TuneOptions::program not single()): the fastest verified set of schedules, one per
// statement, with the layouts between them chosen together.
//
//   per statement: SearchStatement (search/statement_search.h) ──▶ costed candidates
//        │  each candidate keyed by the layouts of its intermediates (LayoutKey: per dim
//        ▼  the mesh axes its shard splits the dim over) — what it reads and what it leaves
//   Pareto sets: per statement and mesh, the best schedules per key of its intermediates
//        │
//        ▼  dynamic programming in statement order, the state the layouts of the
//   joint:  intermediates still to be read, each step adding a statement's schedule and the
//        │  moves of what it reads (runtime::PlanRedistribution, costed per rank by
//        │  cost::MoveSeconds; nothing when the consumer's shards are the producer's) — exact
//        ▼  along chains and over small DAGs, the k best per state
//   ranked programs + "separate" (each statement's own best on the mesh, then the moves)
//        │
//        ▼  Runner::RunSideBySide (one MPI job: every program, every statement and move, checked)
//   winner: the fastest verified; unmeasured, the model's best checked in the simulator
//
// Not thread-safe (isl contexts); runs on the calling thread.
#ifndef MESHTUNE_SEARCH_PROGRAM_SEARCH_H_
#define MESHTUNE_SEARCH_PROGRAM_SEARCH_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "ir/trace.h"
#include "search/checker.h"
#include "search/program_candidate.h"
#include "search/runner.h"
#include "search/tune_types.h"

namespace meshtune::search {

// Tunes `options.program` (of several statements); SearchResult::program holds the
// answer, and mesh, measured_s, verified, checked, choice, refused, counts (summed over
// the statements), strategy and seconds are set as for one statement. Errors as Tune's;
// also FailedPrecondition when a statement has no legal schedule (its message prefixed
// with "statement N: "), when no mesh holds a schedule of every statement, or when no
// program measured or passed the checks.
// Makes a statement's schedule runnable: its validated Program and footprint.
using MakeRunnable = std::function<absl::StatusOr<Runnable>(
    const ir::Problem& statement, const ir::Mesh& mesh, const ir::Trace& schedule)>;

// Every statement of `c` (a schedule of `program` on `mesh`) made runnable by `runnable`,
// as one job's input: the Programs in statement order, the footprints summed. The first
// refusal's error, with its code, after "statement N: ".
absl::StatusOr<ProgramMeasureInput> ProgramInputOf(const ir::StatementProgram& program,
                                                   const ir::Mesh& mesh, const ProgramCandidate& c,
                                                   const MakeRunnable& runnable);

absl::StatusOr<SearchResult> TuneStatements(const TuneOptions& options, Runner& runner,
                                            const std::vector<SearchCallback*>& callbacks);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_PROGRAM_SEARCH_H_
