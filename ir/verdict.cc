#include "ir/verdict.h"

#include <utility>

#include "ir/legality.h"

namespace meshtune::ir {

absl::StatusOr<Verdict> Judge(const Computation& base, const Trace& trace, LegalityCache* cache) {
  Replay r = ReplayTrace(base, trace);
  Verdict v{std::move(r.computation), false, {}};
  if (!r.status.ok()) {
    std::optional<Rejection> rej = AsRejection(r.status);
    if (!rej.has_value()) return r.status;
    v.reasons.push_back(*std::move(rej));
    return v;
  }
  v.reasons = CheckLegality(v.computation, cache);
  v.legal = v.reasons.empty();
  return v;
}

}  // namespace meshtune::ir
