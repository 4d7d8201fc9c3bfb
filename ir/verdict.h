// Verdict: a trace replayed on a base computation and judged legal or not, with reasons.
//
// This is what `meshtune explain` reports and what the search prunes by. Malformed traces
// (unknown names, bad arguments) are errors; illegal but well-formed ones are verdicts.
#ifndef MESHTUNE_IR_VERDICT_H_
#define MESHTUNE_IR_VERDICT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "ir/computation.h"
#include "ir/legality.h"
#include "ir/reason.h"
#include "ir/trace.h"

namespace meshtune::ir {

struct Verdict {
  // After the whole trace, or after the last instruction that applied when a primitive
  // rejected the schedule.
  Computation computation;
  bool legal = false;
  std::vector<Rejection> reasons;  // empty iff legal
};

// Replays `trace` on `base` and checks legality. Returns InvalidArgument (message naming
// the instruction) when an instruction is malformed; a primitive's rejection (e.g.
// conflicting_rotation) becomes the verdict's only reason. With a cache (one per base, legality.h)
// the per-tensor checks are looked up; the verdict is the same.
absl::StatusOr<Verdict> Judge(const Computation& base, const Trace& trace,
                              LegalityCache* cache = nullptr);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_VERDICT_H_
