// Shift(axis, d): a ring along `axis`: what a rank needs next is what its neighbour at +d
// holds now. The first step along the time loop fetches point to point; each later step
// passes the buffer one place around the ring.
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class ShiftPattern final : public Pattern {
 public:
  std::string Name() const override { return "Shift"; }
  bool AcrossSteps() const override { return true; }
  // One moving axis along which what a rank needs next is what its neighbour needs now.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern* out) const override {
    if (f.role != TransferFacts::Role::kFetchOne || f.axes.size() != 1) return false;
    MT_ASSIGN_OR_RETURN(const std::optional<int> step, f.neighbour_step());
    if (!step.has_value()) return false;
    out->axes = f.axes;
    out->shift = *step;
    return true;
  }
  std::string Describe(const CommPattern& p) const override {
    return absl::StrCat("Shift(axis=", p.axes.empty() ? -1 : p.axes[0], ", ",
                        p.shift > 0 ? "+" : "", p.shift, ")");
  }
  std::string CheckForm(const CommPattern& p) const override {
    if (p.axes.size() != 1) return "a Shift turns along exactly one axis";
    if (p.hop) return "hop on a pattern that is not a RingReduce";
    return "";
  }
  StepCalls Fetch(const Transfer& t) const override {
    StepCalls steps = Pattern::Fetch(t);  // the first step: point to point
    steps.otherwise = std::move(steps.then);
    RuntimeCall turn;
    turn.op = RuntimeCall::Op::kShiftStep;
    turn.buffer = t.buffer;
    turn.axis = t.pattern.axes[0];
    turn.shift = t.pattern.shift;
    steps.then = {turn};
    steps.guard = StepCalls::Guard::kPastFirst;
    steps.loop = t.time_loop;
    return steps;
  }
};

}  // namespace

const Pattern& Shift() {
  static const ShiftPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
