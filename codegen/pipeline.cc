#include "codegen/pipeline.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "codegen/validate.h"

namespace meshtune::codegen {

absl::StatusOr<Prepared> Prepare(const ir::Computation& base, const ir::Trace& trace,
                                 Through through, ir::LegalityCache* cache) {
  absl::StatusOr<ir::Verdict> verdict = ir::Judge(base, trace, cache);
  if (!verdict.ok()) return verdict.status();
  Prepared out{*std::move(verdict)};
  out.footprint = ir::ComputeFootprint(out.verdict.computation, cache);
  if (through == Through::kJudge) return out;
  if (!out.verdict.legal) {
    const ir::Rejection& first = out.verdict.reasons[0];
    out.program = absl::FailedPreconditionError(
        absl::StrCat("illegal schedule: [", first.code, "] ", first.message));
    return out;
  }
  out.program = LowerValidated(out.verdict.computation);
  return out;
}

absl::StatusOr<Program> PrepareProgram(const ir::Computation& base, const ir::Trace& trace) {
  absl::StatusOr<Prepared> prepared = Prepare(base, trace);
  if (!prepared.ok()) return prepared.status();
  return std::move(prepared->program);
}

}  // namespace meshtune::codegen
