#include "engine/program_codegen.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "codegen/emit_program.h"
#include "engine/callable_response.h"
#include "engine/program_run.h"
#include "ir/statement_program.h"
#include "runtime/given_spec.h"

namespace meshtune::engine {

absl::StatusOr<v1::CodegenResponse> ProgramCodegen(const v1::CodegenRequest& request) {
  if (request.main()) {
    return absl::InvalidArgumentError(
        "--main writes one statement's standalone program; a program of several statements is "
        "generated as a callable kernel (without --main)");
  }
  MT_ASSIGN_OR_RETURN(
      const ir::StatementProgram program,
      ir::ParseStatementProgram(request.problem().expr(), request.problem().extents(),
                                request.problem().dtype()));
  v1::ExplainRequest explain;
  *explain.mutable_problem() = request.problem();
  *explain.mutable_mesh() = request.mesh();
  *explain.mutable_trace() = request.trace();
  MT_ASSIGN_OR_RETURN(PreparedRun prepared, PrepareProgramRun(explain));
  std::vector<codegen::Program> statements = {std::move(prepared.spec.program)};
  for (runtime::StatementJob& j : prepared.spec.later) statements.push_back(std::move(j.program));
  const ir::Mesh mesh = runtime::MeshOf(statements[0].axis_names, statements[0].axis_sizes);
  const std::string title =
      absl::StrCat(program.ToString(), " with ", program.ExtentsString(), " (",
                   ir::DTypeName(program.dtype), ") on mesh ", mesh.ToString(), "\ntrace:\n",
                   absl::StripTrailingAsciiWhitespace(request.trace().text()));
  return CallableResponse(request, [&](const std::string& name) {
    return codegen::EmitProgramCallable(statements, program.Tensors(), title, name,
                                        request.header_name());
  });
}

}  // namespace meshtune::engine
