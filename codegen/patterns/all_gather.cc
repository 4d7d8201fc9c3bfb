// AllGather(axes): every rank along `axes` holds a piece of the box all of them need; the
// pieces are gathered from their holders.
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class AllGatherPattern final : public Pattern {
 public:
  std::string Name() const override { return "AllGather"; }
  // Pieces from the ranks along some axes.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern* out) const override {
    if (f.role != TransferFacts::Role::kFetchMany || f.axes.empty()) return false;
    out->axes = f.axes;
    return true;
  }
  std::string CheckForm(const CommPattern& p) const override {
    if (p.axes.empty()) return "a AllGather is over at least one mesh axis";
    return Pattern::CheckForm(p);
  }
  bool FromHolders() const override { return true; }
  StepCalls Fetch(const Transfer& t) const override {
    RuntimeCall gather;
    gather.op = RuntimeCall::Op::kAllGather;
    gather.tensor = t.tensor;
    gather.buffer = t.buffer;
    gather.offset = t.global.offset;
    gather.axes = t.pattern.axes;
    return {StepCalls::Guard::kNone, "", {gather}, {}};
  }
};

}  // namespace

const Pattern& AllGather() {
  static const AllGatherPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
