// Broadcast(axes): one root per group of ranks along `axes` sends the box every member needs.
#include <algorithm>

#include "base/status_macros.h"
#include "codegen/patterns/all.h"

namespace meshtune::codegen::patterns {
namespace {

class BroadcastPattern final : public Pattern {
 public:
  std::string Name() const override { return "Broadcast"; }
  // One root per group along the moving axes, every rank of it reading one box.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern* out) const override {
    if (f.role != TransferFacts::Role::kFetchOne) return false;
    MT_ASSIGN_OR_RETURN(const bool one_root, f.one_root_per_group());
    if (one_root) out->axes = f.axes;
    return one_root;
  }
  std::string CheckForm(const CommPattern& p) const override {
    if (p.axes.empty()) return "a Broadcast is over at least one mesh axis";
    return Pattern::CheckForm(p);
  }
  bool ShowsSourceAxis(const CommPattern& p, int axis) const override {
    return std::find(p.axes.begin(), p.axes.end(), axis) != p.axes.end();
  }
  StepCalls Fetch(const Transfer& t) const override {
    RuntimeCall bcast;
    bcast.op = RuntimeCall::Op::kBroadcast;
    bcast.tensor = t.tensor;
    bcast.buffer = t.buffer;
    bcast.offset = t.src.offset;
    bcast.axes = t.pattern.axes;
    bcast.source = t.source;
    return {StepCalls::Guard::kNone, "", {bcast}, {}};
  }
};

}  // namespace

const Pattern& Broadcast() {
  static const BroadcastPattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
