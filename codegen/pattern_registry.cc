// The registry of communication patterns: one row per CommPattern::Kind.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "codegen/pattern.h"
#include "codegen/patterns/all.h"

namespace meshtune::codegen {

const Pattern& PatternOf(CommPattern::Kind kind) {
  using Kind = CommPattern::Kind;
  switch (kind) {
    case Kind::kLocal:
      return patterns::Local();
    case Kind::kBroadcast:
      return patterns::Broadcast();
    case Kind::kShift:
      return patterns::Shift();
    case Kind::kSendRecv:
      return patterns::SendRecv();
    case Kind::kAllGather:
      return patterns::AllGather();
    case Kind::kReduce:
      return patterns::Reduce();
    case Kind::kReduceScatter:
      return patterns::ReduceScatter();
    case Kind::kAllReduce:
      return patterns::AllReduce();
    case Kind::kAllToAll:
      return patterns::AllToAll();
    case Kind::kRingReduce:
      return patterns::RingReduce();
  }
  MT_CHECK(false);
  return patterns::Local();
}

std::string Pattern::Describe(const CommPattern& p) const {
  return absl::StrCat(Name(), "(axes=[", absl::StrJoin(p.axes, ", "), "])");
}

std::string Pattern::CheckForm(const CommPattern& p) const {
  if (p.shift != 0) return absl::StrCat("shift ", p.shift, " on a pattern that is not a Shift");
  if (p.hop) return "hop on a pattern that is not a RingReduce";
  return "";
}

StepCalls Pattern::Fetch(const Transfer& t) const {
  // A fetch from one source rank per reader, wherever it is.
  RuntimeCall call;
  call.op = RuntimeCall::Op::kPointToPoint;
  call.tensor = t.tensor;
  call.buffer = t.buffer;
  call.source = t.source;
  call.offset_at = t.src.offset;
  return {StepCalls::Guard::kNone, "", {call}, {}};
}

StepCalls Pattern::Reduce(const codegen::Reduce& r) const {
  // The runtime's collective of this pattern's name over the group's axes.
  RuntimeCall call;
  call.op = RuntimeCall::Op::kReduceInto;
  call.reduce_kind = Name();
  call.tensor = r.tensor;
  call.buffer = r.buffer;
  call.offset = r.global.offset;
  call.axes = r.pattern.axes;
  return {StepCalls::Guard::kNone, "", {call}, {}};
}

}  // namespace meshtune::codegen
