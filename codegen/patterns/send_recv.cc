// SendRecv: general point to point, each rank's box from its source rank; as a reduction,
// the one holder adds the buffer into its shard ("Local").
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class SendRecvPattern final : public Pattern {
 public:
  std::string Name() const override { return "SendRecv"; }
  // Any other single-source fetch, and a reduction over no mesh axis (each rank's sum is
  // its own).
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern*) const override {
    return f.role == TransferFacts::Role::kFetchOne ||
           (f.role == TransferFacts::Role::kReduce && f.axes.empty());
  }
  std::string Describe(const CommPattern&) const override { return Name(); }
  StepCalls Reduce(const codegen::Reduce& r) const override {
    StepCalls steps = Pattern::Reduce(r);
    steps.then[0].reduce_kind = "Local";
    return steps;
  }
};

}  // namespace

const Pattern& SendRecv() {
  static const SendRecvPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
