// ReduceScatter(axes): the partial sums of a group along `axes` added, each member ending
// with the part of the box it holds.
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class ReduceScatterPattern final : public Pattern {
 public:
  std::string Name() const override { return "ReduceScatter"; }
};

}  // namespace

const Pattern& ReduceScatter() {
  static const ReduceScatterPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
