#include "engine/job.h"

#include <string>
#include <utility>

#include "base/status_macros.h"
#include "engine/requests.h"
#include "ir/layout.h"
#include "ir/program_trace.h"

namespace meshtune::engine {

absl::StatusOr<ir::StatementProgram> ProgramOf(const v1::Problem& problem) {
  MT_ASSIGN_OR_RETURN(
      ir::StatementProgram program,
      ir::ParseStatementProgram(problem.expr(), problem.extents(), problem.dtype()));
  if (!program.single()) {
    if (problem.layouts_size() > 0)
      return absl::InvalidArgumentError(std::string(kLayoutsTakeOneStatement));
    return program;
  }
  ir::Problem& statement = program.statements[0];
  MT_RETURN_IF_ERROR(ir::SetLayouts(LayoutFlagsOf(problem), &statement));
  statement.result_on_layer = problem.result_on_layer();
  return program;
}

absl::StatusOr<ir::Problem> ProblemOf(const v1::Problem& problem) {
  MT_ASSIGN_OR_RETURN(ir::StatementProgram program, ProgramOf(problem));
  if (!program.single()) {
    return absl::InvalidArgumentError(
        "this takes one statement (programs of several statements are taken by tune, run, "
        "explain, batch, lookup, records, codegen, report, fidelity and the plan API)");
  }
  return std::move(program.statements[0]);
}

absl::StatusOr<ir::Computation> BaseComputation(const v1::Problem& problem, const v1::Mesh& mesh) {
  MT_ASSIGN_OR_RETURN(ir::Problem p, ProblemOf(problem));
  MT_ASSIGN_OR_RETURN(ir::Mesh m, MeshOf(mesh));
  return ir::Computation::Create(p, m);
}

absl::StatusOr<ir::Mesh> MeshOf(const v1::Mesh& mesh) {
  MT_ASSIGN_OR_RETURN(ir::Mesh m, MeshAxesOf(mesh));
  MT_ASSIGN_OR_RETURN(m.mem_per_rank_bytes, MemPerRankOf(mesh));
  return m;
}

absl::StatusOr<ScheduleJob> JobOf(const v1::Problem& problem, const v1::Mesh& mesh,
                                  const v1::Trace& trace) {
  MT_ASSIGN_OR_RETURN(ir::StatementProgram program, ProgramOf(problem));
  return JobOf(std::move(program), mesh, trace);
}

absl::StatusOr<ScheduleJob> JobOf(ir::StatementProgram program, const v1::Mesh& mesh,
                                  const v1::Trace& trace) {
  ScheduleJob job;
  job.program = std::move(program);
  MT_ASSIGN_OR_RETURN(job.mesh, MeshOf(mesh));
  MT_ASSIGN_OR_RETURN(
      job.traces,
      ir::ParseProgramTrace(trace.text(), static_cast<int>(job.program.statements.size())));
  return job;
}

absl::StatusOr<ir::Computation> StatementBase(const ScheduleJob& job, int s) {
  return ir::Computation::Create(job.program.statements[s], job.mesh);
}

}  // namespace meshtune::engine
