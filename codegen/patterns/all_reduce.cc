// AllReduce(axes): the partial sums of a group along `axes` added, every member ending with
// the whole box (the output is copied along those axes).
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class AllReducePattern final : public Pattern {
 public:
  std::string Name() const override { return "AllReduce"; }
};

}  // namespace

const Pattern& AllReduce() {
  static const AllReducePattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
