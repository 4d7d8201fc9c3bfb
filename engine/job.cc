#include "engine/job.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "engine/requests.h"
#include "ir/layout.h"
#include "ir/program_trace.h"

namespace meshtune::engine {

namespace {

// The statement of `program` a given layout of `tensor` attaches to: its writer, else its
// first reader; InvalidArgument for an intermediate (written, then read).
absl::StatusOr<size_t> LayoutHome(const ir::StatementProgram& program, const std::string& tensor) {
  std::optional<size_t> writer, reader;
  for (size_t s = 0; s < program.statements.size(); ++s) {
    const ir::Problem& p = program.statements[s];
    if (p.output.tensor == tensor && !writer) writer = s;
    for (const ir::TensorAccess& a : p.operands) {
      if (a.tensor != tensor) continue;
      if (writer && !reader) {
        return absl::InvalidArgumentError(absl::StrCat(
            tensor, " is an intermediate of the program (statement ", *writer + 1,
            " writes it, statement ", s + 1,
            " reads it): its layout is the schedules'; give layouts of the program's inputs and "
            "outputs"));
      }
      if (!reader) reader = s;
    }
  }
  return writer ? *writer : *reader;
}

// Each --layout flag of `flags` onto the statement of `program` its tensor lives in.
absl::Status SetProgramLayouts(const std::vector<std::string>& flags,
                               ir::StatementProgram* program) {
  const std::vector<std::string> tensors = program->Tensors();
  std::vector<std::vector<std::string>> per_statement(program->statements.size());
  std::set<std::string> given;
  for (const std::string& flag : flags) {
    std::string tensor, spec;
    MT_RETURN_IF_ERROR(ir::SplitLayoutFlag(flag, &tensor, &spec));
    if (std::find(tensors.begin(), tensors.end(), tensor) == tensors.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--layout ", base::Excerpt(flag), ": the program has no tensor ",
                       base::Excerpt(tensor), " (it has ", absl::StrJoin(tensors, ", "), ")"));
    }
    if (!given.insert(tensor).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--layout: tensor ", tensor, " is given twice"));
    }
    MT_ASSIGN_OR_RETURN(const size_t home, LayoutHome(*program, tensor));
    per_statement[home].push_back(flag);
  }
  for (size_t s = 0; s < per_statement.size(); ++s) {
    MT_RETURN_IF_ERROR(ir::SetLayouts(per_statement[s], &program->statements[s]));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::StatementProgram> ProgramOf(const v1::Problem& problem) {
  MT_ASSIGN_OR_RETURN(
      ir::StatementProgram program,
      ir::ParseStatementProgram(problem.expr(), problem.extents(), problem.dtype()));
  if (!program.single()) {
    if (problem.result_on_layer())
      return absl::InvalidArgumentError(std::string(kResultOnLayerTakesOneStatement));
    MT_RETURN_IF_ERROR(SetProgramLayouts(LayoutFlagsOf(problem), &program));
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
