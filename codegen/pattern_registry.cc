// The registry of communication patterns: one row per CommPattern::Kind, and the order in
// which they are asked whether they carry a transfer.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "codegen/pattern.h"
#include "codegen/patterns/all.h"
#include "codegen/program.h"

namespace meshtune::codegen {

const Pattern& PatternOf(PatternKind kind) {
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

absl::StatusOr<CommPattern> RecognizeTransfer(const TransferFacts& facts) {
  using Kind = CommPattern::Kind;
  static constexpr Kind kOrder[] = {
      Kind::kLocal,    Kind::kBroadcast,  Kind::kShift,     Kind::kSendRecv,      Kind::kAllGather,
      Kind::kAllToAll, Kind::kRingReduce, Kind::kAllReduce, Kind::kReduceScatter, Kind::kReduce,
  };
  for (Kind kind : kOrder) {
    CommPattern out;
    MT_ASSIGN_OR_RETURN(const bool carries, PatternOf(kind).Recognize(facts, &out));
    if (carries) {
      out.kind = kind;
      return out;
    }
  }
  MT_CHECK(false);  // the last pattern of each role carries whatever reaches it
  return CommPattern{};
}

StepShape ShapeOf(const StepCalls& steps) {
  using Op = RuntimeCall::Op;
  using Guard = StepCalls::Guard;
  if (steps.guard == Guard::kPastFirst && steps.then.size() == 1 &&
      steps.then[0].op == Op::kShiftStep && steps.otherwise.size() == 1 &&
      steps.otherwise[0].op == Op::kPointToPoint) {
    return StepShape::kRing;
  }
  if (steps.guard == Guard::kBeforeLast && steps.then.size() == 1 &&
      steps.then[0].op == Op::kShiftStep && !steps.otherwise.empty() &&
      steps.otherwise.back().op == Op::kReduceInto &&
      steps.otherwise.back().reduce_kind == "Local") {
    for (size_t i = 0; i + 1 < steps.otherwise.size(); ++i) {
      if (steps.otherwise[i].op != Op::kShiftStep) return StepShape::kOther;
    }
    return StepShape::kReduceRing;
  }
  if (steps.guard != Guard::kNone || steps.then.size() != 1) return StepShape::kOther;
  const RuntimeCall& c = steps.then[0];
  switch (c.op) {
    case Op::kLocal:
      return StepShape::kLocal;
    case Op::kBroadcast:
      return StepShape::kBroadcast;
    case Op::kAllGather:
      return StepShape::kAllGather;
    case Op::kAllToAll:
      return StepShape::kAllToAll;
    case Op::kPointToPoint:
      return StepShape::kPointToPoint;
    case Op::kReduceInto:
      if (c.reduce_kind == "Local") return StepShape::kReduceOwn;
      if (c.reduce_kind == "Reduce" || c.reduce_kind == "ReduceScatter" ||
          c.reduce_kind == "AllReduce") {
        return StepShape::kReduceGroup;
      }
      return StepShape::kOther;
    case Op::kShiftStep:
      return StepShape::kOther;
  }
  return StepShape::kOther;
}

const RuntimeCall* DataCall(const StepCalls& steps) {
  switch (ShapeOf(steps)) {
    case StepShape::kOther:
      return nullptr;
    case StepShape::kRing:
      return &steps.otherwise[0];
    case StepShape::kReduceRing:
      return &steps.otherwise.back();
    default:
      return &steps.then[0];
  }
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
