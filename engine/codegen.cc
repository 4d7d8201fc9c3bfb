#include "engine/codegen.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "codegen/emit/emit_cpp.h"
#include "codegen/emit/emit_library.h"
#include "codegen/emit/emit_program.h"
#include "engine/callable_response.h"
#include "engine/job.h"
#include "engine/prepare.h"
#include "engine/requests.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"

namespace meshtune::engine {

namespace {

// The response of a request whose answer is the library (request.library(), prow > 0):
// ScaLAPACK's GEMM on the problem's tensors in cyclic(NB,NB), no trace lowered.
absl::StatusOr<v1::CodegenResponse> LibraryCodegen(const v1::CodegenRequest& request) {
  const v1::LibraryRun& library = request.library();
  MT_ASSIGN_OR_RETURN(ir::StatementProgram program, ProgramOf(request.problem()));
  if (!program.single()) {
    return absl::InvalidArgumentError(
        "the answer is the library, a chain of its calls over the program's statements, which "
        "`meshtune run` and plans execute; codegen writes the library's kernel for one "
        "statement (give the program's --trace to generate its schedules' kernel)");
  }
  const ir::Problem problem = std::move(program.statements[0]);
  const std::optional<runtime::GemmForm> form =
      runtime::GemmFormOf(runtime::ProblemSpecOf(problem));
  if (!form) {
    return absl::InvalidArgumentError(
        absl::StrCat("the library serves problems of matmul form only; ", problem.ToString(),
                     " is not one (C[i,j] = or += A * B of two matrices with one index summed)"));
  }
  codegen::LibraryKernelSpec spec;
  spec.dtype_bytes = static_cast<int>(ir::DTypeBytes(problem.dtype));
  const std::string routine = codegen::LibraryRoutine(spec);
  if (!library.library().empty() && library.library() != routine) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the library '", base::Excerpt(library.library()), "' does not serve the ",
        ir::DTypeName(problem.dtype), " problem ", problem.ToString(), " (", routine, " does)"));
  }
  if (library.pcol() < 1 || library.nb() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the library's grid ", library.prow(), "x",
                                                   library.pcol(), ", NB ", library.nb(),
                                                   " is not a grid and block size"));
  }
  const int64_t grid_ranks = int64_t{library.prow()} * library.pcol();
  if (grid_ranks > ir::kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat("the library's grid ", library.prow(), "x",
                                                   library.pcol(), " has more than ", ir::kMaxRanks,
                                                   " ranks"));
  }
  std::string where = absl::StrCat(grid_ranks, " ranks");
  if (HasMeshAxes(request.mesh())) {
    MT_ASSIGN_OR_RETURN(const ir::Mesh mesh, MeshAxesOf(request.mesh()));
    if (mesh.Ranks() != grid_ranks) {
      return absl::InvalidArgumentError(
          absl::StrCat("the library's grid ", library.prow(), "x", library.pcol(), " has ",
                       grid_ranks, " ranks; the mesh ", mesh.ToString(), " has ", mesh.Ranks()));
    }
    where = absl::StrCat("mesh ", mesh.ToString());
  }
  MT_RETURN_IF_ERROR(runtime::CheckLibraryExtents(*form));
  // The kernel takes every tensor in cyclic(NB,NB): a problem may give that layout, no other.
  const std::string cyclic = absl::StrCat("cyclic(", library.nb(), ",", library.nb(), ")");
  for (const auto& [tensor, layout] : problem.layouts) {
    if (layout.ToString() != cyclic) {
      return absl::InvalidArgumentError(absl::StrCat("the library's kernel takes every tensor in ",
                                                     cyclic, "; the problem gives ", tensor, "=",
                                                     layout.ToString()));
    }
  }
  spec.c = form->c;
  spec.a = form->a;
  spec.b = form->b;
  spec.b_first = problem.operands[0].tensor == form->b;
  spec.m = form->m;
  spec.n = form->n;
  spec.k = form->k;
  spec.a_transposed = form->a_transposed;
  spec.b_transposed = form->b_transposed;
  spec.accumulate = form->accumulate;
  spec.prow = library.prow();
  spec.pcol = library.pcol();
  spec.nb = library.nb();
  const std::string title = absl::StrCat(
      problem.ToString(), " with ", problem.ExtentsString(), " (", ir::DTypeName(problem.dtype),
      ") on ", where, "\nScaLAPACK ", routine, " on a ", library.prow(), "x", library.pcol(),
      " grid, NB ", library.nb(), " (every tensor in ", cyclic, ")");
  v1::CodegenResponse out;
  if (request.main()) {
    out.set_source(codegen::EmitLibraryCpp(problem, spec, title));
    return out;
  }
  return CallableResponse(request, [&](const std::string& name) {
    return codegen::EmitLibraryCallable(spec, title, name, request.header_name());
  });
}

// The C++ of a job's schedule (no library): one statement's callable kernel or, with
// request.main (one statement only: Codegen checks), its standalone MPI program; a
// program's callable kernel of its statements.
absl::StatusOr<v1::CodegenResponse> ScheduleCodegen(const ScheduleJob& job,
                                                    const v1::CodegenRequest& request) {
  MT_ASSIGN_OR_RETURN(PreparedRun prepared, PrepareRun(job));
  std::vector<codegen::Program> statements = {std::move(prepared.spec.program)};
  for (runtime::StatementJob& j : prepared.spec.later) statements.push_back(std::move(j.program));
  const std::string title = absl::StrCat(
      job.program.ToString(), " with ", job.program.ExtentsString(), " (",
      ir::DTypeName(job.program.dtype), ") on mesh ", job.mesh.ToString(), "\ntrace:\n",
      job.program.single()
          ? job.traces[0].ToString()
          : std::string(absl::StripTrailingAsciiWhitespace(request.trace().text())));
  if (request.main()) {
    v1::CodegenResponse out;
    out.set_source(codegen::EmitCpp(job.program.statements[0], statements[0], title));
    return out;
  }
  return CallableResponse(request, [&](const std::string& name) {
    return job.program.single()
               ? codegen::EmitCallable(statements[0], title, name, request.header_name())
               : codegen::EmitProgramCallable(statements, job.program.Tensors(), title, name,
                                              request.header_name());
  });
}

}  // namespace

absl::StatusOr<v1::CodegenResponse> Codegen(const v1::CodegenRequest& request) {
  if (request.has_library() && request.library().prow() > 0) return LibraryCodegen(request);
  MT_ASSIGN_OR_RETURN(ir::StatementProgram program, ProgramOf(request.problem()));
  for (const ir::Problem& statement : program.statements) {
    if (!program.single() && !statement.layouts.empty()) {
      return absl::InvalidArgumentError(
          "codegen writes a program's kernel over its schedules' shards: give a program no "
          "--layout here (tune and run take its inputs' and outputs' layouts)");
    }
  }
  if (request.main() && !program.single()) {
    return absl::InvalidArgumentError(
        "--main writes one statement's standalone program; a program of several statements is "
        "generated as a callable kernel (without --main)");
  }
  MT_ASSIGN_OR_RETURN(const ScheduleJob job,
                      JobOf(std::move(program), request.mesh(), request.trace()));
  return ScheduleCodegen(job, request);
}

}  // namespace meshtune::engine
