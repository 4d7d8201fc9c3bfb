// Local: the box is on the rank already; a fetch copies it from the rank's own shard, a
// reduction adds the buffer into it.
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class LocalPattern final : public Pattern {
 public:
  std::string Name() const override { return "Local"; }
  // A fetch from the rank's own data.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern*) const override {
    return f.role == TransferFacts::Role::kFetchOne && f.axes.empty();
  }
  std::string Describe(const CommPattern&) const override { return Name(); }
  bool Sends() const override { return false; }
  StepCalls Fetch(const Transfer& t) const override {
    RuntimeCall copy;
    copy.op = RuntimeCall::Op::kLocal;
    copy.tensor = t.tensor;
    copy.buffer = t.buffer;
    copy.offset = t.src.offset;
    return {StepCalls::Guard::kNone, "", {copy}, {}};
  }
};

}  // namespace

const Pattern& Local() {
  static const LocalPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
