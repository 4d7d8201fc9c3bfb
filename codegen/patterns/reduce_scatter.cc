// ReduceScatter(axes): the partial sums of a group along `axes` added, each member ending
// with the part of the box it holds.
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class ReduceScatterPattern final : public Pattern {
 public:
  std::string Name() const override { return "ReduceScatter"; }
  // A box wider than a rank's shard: each rank keeps its part of the sum.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern* out) const override {
    if (f.role != TransferFacts::Role::kReduce || !f.split) return false;
    out->axes = f.axes;
    return true;
  }
};

}  // namespace

const Pattern& ReduceScatter() {
  static const ReduceScatterPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
