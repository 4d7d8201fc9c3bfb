// The engine's door: a request's problem, mesh and trace read into values once.
//
// A statement is a program of one (ir::StatementProgram) and its trace a program trace of
// one (ir/program_trace.h), so every command — explain, run, codegen, the library's plans —
// takes a ScheduleJob and walks its statements; nothing below the door writes a value to
// text to parse it again. Plain values; thread-safe to read.
#ifndef MESHTUNE_ENGINE_JOB_H_
#define MESHTUNE_ENGINE_JOB_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/computation.h"
#include "ir/mesh.h"
#include "ir/statement_program.h"
#include "ir/trace.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// Why a program of several statements takes no --in-place: it is tuned into the layouts its
// schedules choose, and its given layouts (--layout) name where its inputs come from and its
// outputs go.
inline constexpr absl::string_view kInPlaceTakesOneStatement =
    "--in-place takes one statement: a program of several statements takes its inputs' and "
    "outputs' layouts with --layout";

// Why a program of several statements takes no result_on_layer.
inline constexpr absl::string_view kResultOnLayerTakesOneStatement =
    "result_on_layer takes one statement; a program's outputs are held on every copy";

// The program `problem` states (ir::ParseStatementProgram's errors), with its given layouts
// (--layout; ir::SetLayouts' errors): for one statement on it, with result_on_layer; for a
// program, a layout of an input is attached to the first statement reading it and one of an
// output to the statement writing it (where the tensor lives, runtime/bound_statements.h),
// and InvalidArgument names a tensor the program does not have, a tensor given twice, and an
// intermediate ("H is an intermediate of the program (statement 1 writes it, statement 2
// reads it): its layout is the schedules'; give layouts of the program's inputs and outputs"),
// and result_on_layer is InvalidArgument kResultOnLayerTakesOneStatement.
absl::StatusOr<ir::StatementProgram> ProgramOf(const v1::Problem& problem);

// The one statement `problem` states, with its given layouts and result_on_layer:
// ProgramOf's errors, and InvalidArgument for a program of several statements (for what
// takes one statement only: the library's kernel, calibration).
absl::StatusOr<ir::Problem> ProblemOf(const v1::Problem& problem);

// The one statement's base Computation on the mesh (memory budget included): ProblemOf's and
// MeshOf's errors.
absl::StatusOr<ir::Computation> BaseComputation(const v1::Problem& problem, const v1::Mesh& mesh);

// The mesh a request gives: its axes (as text or dims, MeshAxesOf's errors) and its memory
// budget (MemPerRankOf's).
absl::StatusOr<ir::Mesh> MeshOf(const v1::Mesh& mesh);

// A schedule as a request states it: the program, the mesh and a trace per statement.
struct ScheduleJob {
  ir::StatementProgram program;
  ir::Mesh mesh;                  // with its memory budget
  std::vector<ir::Trace> traces;  // traces[s] schedules program.statements[s]
};

// The job of `problem`, `mesh` and `trace` (the statement's trace, or for a program a trace
// per statement between lines ---: ir::ParseProgramTrace). ProgramOf's, MeshOf's and the
// trace parser's errors, all InvalidArgument.
absl::StatusOr<ScheduleJob> JobOf(const v1::Problem& problem, const v1::Mesh& mesh,
                                  const v1::Trace& trace);

// The job of a program already read, with the request's mesh and trace.
absl::StatusOr<ScheduleJob> JobOf(ir::StatementProgram program, const v1::Mesh& mesh,
                                  const v1::Trace& trace);

// Statement `s`'s base computation on the job's mesh (ir::Computation::Create's errors).
absl::StatusOr<ir::Computation> StatementBase(const ScheduleJob& job, int s);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_JOB_H_
