// AllReduce(axes): the partial sums of a group along `axes` added, every member ending with
// the whole box (the output is copied along those axes).
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class AllReducePattern final : public Pattern {
 public:
  std::string Name() const override { return "AllReduce"; }
  // Every copy along the reduction's axes is to hold the result.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern* out) const override {
    if (f.role != TransferFacts::Role::kReduce || !f.replicated) return false;
    out->axes = f.axes;
    return true;
  }
};

}  // namespace

const Pattern& AllReduce() {
  static const AllReducePattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
