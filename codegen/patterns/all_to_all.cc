// AllToAll: a box that lies on several ranks' shards no group along some axes shares; each
// rank receives every piece of it from a rank that holds it (itself where it can), an
// exchange over the whole mesh.
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class AllToAllPattern final : public Pattern {
 public:
  std::string Name() const override { return "AllToAll"; }
  // Pieces from ranks anywhere on the mesh.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern*) const override {
    return f.role == TransferFacts::Role::kFetchMany;
  }
  std::string Describe(const CommPattern&) const override { return Name(); }
  bool FromHolders() const override { return true; }
  std::string CheckForm(const CommPattern& p) const override {
    if (!p.axes.empty()) return "an AllToAll spans the mesh: it names no axes";
    return Pattern::CheckForm(p);
  }
  StepCalls Fetch(const Transfer& t) const override {
    RuntimeCall exchange;
    exchange.op = RuntimeCall::Op::kAllToAll;
    exchange.tensor = t.tensor;
    exchange.buffer = t.buffer;
    exchange.offset_at = t.global.offset;
    return {StepCalls::Guard::kNone, "", {exchange}, {}};
  }
};

}  // namespace

const Pattern& AllToAll() {
  static const AllToAllPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
