#include "engine/program_run.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/requests.h"
#include "ir/program_footprint.h"
#include "ir/program_trace.h"
#include "ir/reason.h"
#include "ir/statement_program.h"

namespace meshtune::engine {

absl::StatusOr<PreparedRun> PrepareProgramRun(const v1::ExplainRequest& request) {
  const v1::Problem& stated = request.problem();
  absl::StatusOr<ir::StatementProgram> program =
      ir::ParseStatementProgram(stated.expr(), stated.extents(), stated.dtype());
  if (!program.ok()) return program.status();
  if (stated.layouts_size() > 0) {
    return absl::InvalidArgumentError(
        "given layouts (--layout) are not supported for programs of several statements yet");
  }
  const int n = static_cast<int>(program->statements.size());
  absl::StatusOr<std::vector<ir::Trace>> traces = ir::ParseProgramTrace(request.trace().text(), n);
  if (!traces.ok()) return traces.status();
  PreparedRun out;
  std::vector<ir::Computation> judged;
  for (int s = 0; s < n; ++s) {
    absl::StatusOr<PreparedRun> prepared =
        PrepareRun(StatementRequestOf(request, *program, s, (*traces)[s]));
    if (!prepared.ok()) {
      return absl::Status(prepared.status().code(),
                          absl::StrCat("statement ", s + 1, ": ", prepared.status().message()));
    }
    if (s == 0) {
      out.spec = std::move(prepared->spec);
    } else {
      out.spec.later.push_back({prepared->spec.problem, std::move(prepared->spec.program)});
    }
    judged.push_back(*std::move(prepared->computation));
  }
  std::vector<const ir::Computation*> statements;
  for (const ir::Computation& c : judged) statements.push_back(&c);
  size_t most = 0;
  out.footprint = ir::ProgramFootprint(*program, statements, &most);
  if (std::optional<std::string> over =
          ir::ProgramOverBudget(out.footprint, most, judged.front().mesh().mem_per_rank_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the schedule is illegal: [", ir::kOverMemoryBudget, "] ", *over));
  }
  return out;
}

}  // namespace meshtune::engine
