#include "codegen/pipeline.h"

#include <utility>

#include "codegen/validate/validate.h"
#include "ir/reason.h"

namespace meshtune::codegen {

absl::StatusOr<Prepared> Prepare(const ir::Computation& base, const ir::Trace& trace,
                                 Through through, ir::LegalityCache* cache) {
  absl::StatusOr<ir::Verdict> verdict = ir::Judge(base, trace, cache);
  if (!verdict.ok()) return verdict.status();
  Prepared out{*std::move(verdict)};
  out.footprint = ir::ComputeFootprint(out.verdict.computation, cache);
  if (through == Through::kJudge) return out;
  if (!out.verdict.legal) {
    out.program = ir::IllegalSchedule(out.verdict.reasons[0]);
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
