#include "engine/prepare.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/pipeline.h"
#include "ir/program_footprint.h"
#include "ir/reason.h"
#include "runtime/executor.h"

namespace meshtune::engine {

namespace {

// Statement `s` of `job` judged legal, lowered and validated (its Program, or why lowering
// or validation refused it) with its judged computation. InvalidArgument for an illegal
// schedule.
absl::StatusOr<codegen::Prepared> PrepareStatement(const ScheduleJob& job, int s) {
  MT_ASSIGN_OR_RETURN(ir::Computation base, StatementBase(job, s));
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, codegen::Prepare(base, job.traces[s]));
  if (!prepared.verdict.legal) return ir::IllegalSchedule(prepared.verdict.reasons[0]);
  return prepared;
}

// Statement `s` ready to run: PrepareStatement, and FailedPrecondition "the schedule is
// refused: <reason>" when its Program was refused.
absl::StatusOr<codegen::Prepared> PrepareRunnable(const ScheduleJob& job, int s) {
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, PrepareStatement(job, s));
  if (!prepared.program.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the schedule is refused: ", prepared.program.status().message()));
  }
  return prepared;
}

}  // namespace

absl::StatusOr<PreparedRun> PrepareRun(const ScheduleJob& job) {
  const int n = static_cast<int>(job.program.statements.size());
  PreparedRun out;
  out.spec.ranks = job.mesh.Ranks();
  std::vector<ir::Computation> judged;
  for (int s = 0; s < n; ++s) {
    absl::StatusOr<codegen::Prepared> prepared = PrepareRunnable(job, s);
    if (!prepared.ok() && job.program.single()) return prepared.status();
    if (!prepared.ok()) {
      return absl::Status(prepared.status().code(),
                          absl::StrCat("statement ", s + 1, ": ", prepared.status().message()));
    }
    runtime::StatementJob statement{runtime::ProblemSpecOf(job.program.statements[s]),
                                    *std::move(prepared->program)};
    if (s == 0) {
      out.spec.problem = std::move(statement.problem);
      out.spec.program = std::move(statement.program);
      out.footprint = prepared->footprint;
    } else {
      out.spec.later.push_back(std::move(statement));
    }
    judged.push_back(std::move(prepared->verdict.computation));
  }
  if (job.program.single()) return out;
  std::vector<const ir::Computation*> statements;
  for (const ir::Computation& c : judged) statements.push_back(&c);
  size_t most = 0;
  out.footprint = ir::ProgramFootprint(job.program, statements, &most);
  if (std::optional<std::string> over =
          ir::ProgramOverBudget(out.footprint, most, job.mesh.mem_per_rank_bytes)) {
    return ir::IllegalSchedule({std::string(ir::kOverMemoryBudget), *over});
  }
  return out;
}

absl::StatusOr<PreparedRun> PrepareRun(const v1::ExplainRequest& request) {
  MT_ASSIGN_OR_RETURN(const ScheduleJob job,
                      JobOf(request.problem(), request.mesh(), request.trace()));
  return PrepareRun(job);
}

absl::StatusOr<codegen::Program> LowerTrace(const v1::Problem& problem, const v1::Mesh& mesh,
                                            const v1::Trace& trace) {
  MT_ASSIGN_OR_RETURN(const ir::Problem statement, ProblemOf(problem));
  MT_ASSIGN_OR_RETURN(const ScheduleJob job, JobOf(ir::ProgramOf(statement), mesh, trace));
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, PrepareStatement(job, 0));
  return std::move(prepared.program);
}

}  // namespace meshtune::engine
