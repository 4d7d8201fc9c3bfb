// Reduce(axes): the partial sums of a group along `axes` added onto the rank that holds the
// output (its root).
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class ReducePattern final : public Pattern {
 public:
  std::string Name() const override { return "Reduce"; }
  // The sum onto the rank that holds the box.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern* out) const override {
    if (f.role != TransferFacts::Role::kReduce) return false;
    out->axes = f.axes;
    return true;
  }
};

}  // namespace

const Pattern& Reduce() {
  static const ReducePattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
