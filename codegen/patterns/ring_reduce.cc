// RingReduce(axis, d[, hop]): the partial sums pass around a ring along `axis` (ir/ring.h):
// at every step of the reduction's loop but the last, each rank sends its buffer to the
// neighbour at +d and takes the one from -d in its place; after the last step the buffer
// holds the whole sum of its box, added into the rank's own shard — with `hop`, sent one
// step further first. Outside its loop's For it only lands (lowering never puts it there).
#include "absl/strings/str_cat.h"
#include "codegen/patterns/all.h"
#include "ir/mesh.h"

namespace meshtune::codegen::patterns {
namespace {

class RingReducePattern final : public Pattern {
 public:
  std::string Name() const override { return "RingReduce"; }
  bool AcrossSteps() const override { return true; }
  // With hop the sums land on the next rank: the box where they land is the one the rank
  // before it (at -shift around the axis) computed.
  void Land(const ir::Mesh& mesh, codegen::Reduce& r) const override {
    if (!r.pattern.hop) return;
    const ir::MeshAxis& a = mesh.axes[r.pattern.axes[0]];
    const Expr before = Expr::Make(
        Expr::Op::kMod,
        {Expr::Var(a.name) + Expr::Const(a.size - r.pattern.shift), Expr::Const(a.size)});
    for (Expr& e : r.global.offset) e = e.Substitute(a.name, before);
  }
  // Partial sums that pass around a ring.
  absl::StatusOr<bool> Recognize(const TransferFacts& f, CommPattern* out) const override {
    if (f.role != TransferFacts::Role::kReduce || !f.ring.has_value()) return false;
    out->axes = {f.ring->axis};
    out->shift = f.ring->shift;
    out->hop = f.ring->hop;
    return true;
  }
  std::string Describe(const CommPattern& p) const override {
    return absl::StrCat("RingReduce(axis=", p.axes.empty() ? -1 : p.axes[0], ", ",
                        p.shift > 0 ? "+" : "", p.shift, p.hop ? ", hop)" : ")");
  }
  std::string CheckForm(const CommPattern& p) const override {
    if (p.axes.size() != 1) return "a RingReduce turns along exactly one axis";
    if (p.shift != 1 && p.shift != -1) {
      return absl::StrCat("a RingReduce moves by +1 or -1, not ", p.shift);
    }
    return "";
  }
  std::string ReduceNote(const codegen::Reduce& r, const std::string& loop,
                         const std::string& last) const override {
    return absl::StrCat("   (if ", loop, " == ", last, "; before, ", r.buffer,
                        " moves one step around the ring)");
  }
  StepCalls Reduce(const codegen::Reduce& r) const override {
    RuntimeCall pass;  // the sums go to +shift: the buffer comes from -shift
    pass.op = RuntimeCall::Op::kShiftStep;
    pass.buffer = r.buffer;
    pass.axis = r.pattern.axes[0];
    pass.shift = -r.pattern.shift;
    RuntimeCall land;
    land.op = RuntimeCall::Op::kReduceInto;
    land.reduce_kind = "Local";
    land.tensor = r.tensor;
    land.buffer = r.buffer;
    land.offset = r.global.offset;
    StepCalls steps{StepCalls::Guard::kBeforeLast, r.loop, {pass}, {}};
    if (r.pattern.hop) steps.otherwise.push_back(pass);
    steps.otherwise.push_back(land);
    return steps;
  }
};

}  // namespace

const Pattern& RingReduce() {
  static const RingReducePattern pattern;
  return pattern;
}

}  // namespace meshtune::codegen::patterns
