// A schedule made ready to run: every statement's trace judged, lowered and translation-
// validated (codegen/pipeline.h) on the job's mesh, made into one runtime::RunSpec (a
// program's statements after the first in `later`, run with the moves between them and
// checked against the serial reference of the whole program). Stateless and thread-safe.
#ifndef MESHTUNE_ENGINE_PREPARE_H_
#define MESHTUNE_ENGINE_PREPARE_H_

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "engine/job.h"
#include "ir/footprint.h"
#include "proto/meshtune.pb.h"
#include "runtime/launch/launcher.h"

namespace meshtune::engine {

// A run of a job, ready to launch (runtime::Launch) or simulate.
struct PreparedRun {
  // The statements as stated, their validated Programs and the ranks; measurement settings
  // at their defaults.
  runtime::RunSpec spec;
  // Per rank, what runtime::CheckRunFitsMemory checks: the statement's footprint, or a
  // program's (ir/program_footprint.h: it holds its statements' tensors at once).
  ir::Footprint footprint;
};

// The job's statements judged, lowered and validated for a run. InvalidArgument for an
// illegal schedule ("the schedule is illegal: [code] message"), FailedPrecondition "the
// schedule is refused: <reason>" when lowering or translation validation refuses a Program;
// for a program of several statements each after "statement N: ", and InvalidArgument
// "the schedule is illegal: [over_memory_budget] program footprint ..." when the statements
// together exceed the mesh's memory budget.
absl::StatusOr<PreparedRun> PrepareRun(const ScheduleJob& job);

// The same for the job a request states (JobOf's errors first).
absl::StatusOr<PreparedRun> PrepareRun(const v1::ExplainRequest& request);

// The validated Program every rank runs for a statement's trace (one statement: ProblemOf's
// errors for a program). InvalidArgument for bad input or an illegal schedule, as PrepareRun;
// Unimplemented when it cannot be lowered.
absl::StatusOr<codegen::Program> LowerTrace(const v1::Problem& problem, const v1::Mesh& mesh,
                                            const v1::Trace& trace);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_PREPARE_H_
