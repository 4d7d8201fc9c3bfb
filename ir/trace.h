// Trace: a schedule as data, the list of primitive calls that builds it.
//
// A trace replays on a problem's base Computation, prints in a canonical text form (one
// call a line, as in docs/design.md) and parses back losslessly:
//
//   distribute([m,n], [mo,no], [mi,ni], [x,y])
//   divide(k, ko, ki, 8)
//   reorder(mo, no, ko, mi, ni, ki)
//   shard(A, m@x, k@(x+y)%8)
//   communicate(A, ko, rotate=[mo,no])
//   communicate(B, ko, prefetch=1)
//   tensorize([mi, ni, ki], matmul)
//
// Plain values; thread-safe to read.
#ifndef MESHTUNE_IR_TRACE_H_
#define MESHTUNE_IR_TRACE_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/computation.h"

namespace meshtune::ir {

struct SplitCall {
  std::string var, outer, inner;
  int64_t factor = 1;
  bool operator==(const SplitCall& o) const {
    return var == o.var && outer == o.outer && inner == o.inner && factor == o.factor;
  }
};
struct DivideCall {
  std::string var, outer, inner;
  int64_t parts = 1;
  bool operator==(const DivideCall& o) const {
    return var == o.var && outer == o.outer && inner == o.inner && parts == o.parts;
  }
};
struct ReorderCall {
  std::vector<std::string> order;
  bool operator==(const ReorderCall& o) const { return order == o.order; }
};
struct DistributeCall {
  std::vector<std::string> vars, outers, inners, axes;
  bool operator==(const DistributeCall& o) const {
    return vars == o.vars && outers == o.outers && inners == o.inners && axes == o.axes;
  }
};
struct ShardCall {
  std::string tensor;
  std::vector<ShardTarget> targets;
  bool operator==(const ShardCall& o) const { return tensor == o.tensor && targets == o.targets; }
};
struct CommunicateCall {
  std::string tensor, loop;
  std::vector<std::string> rotate;
  int prefetch = 0;  // 1: double-buffered, overlapping the loop's next step (prefetch=1)
  int64_t step = 1;  // the rotation's step (step=N, with rotate)
  bool operator==(const CommunicateCall& o) const {
    return tensor == o.tensor && loop == o.loop && rotate == o.rotate && prefetch == o.prefetch &&
           step == o.step;
  }
};
struct TensorizeCall {
  std::vector<std::string> loops;
  std::string op;
  bool operator==(const TensorizeCall& o) const { return loops == o.loops && op == o.op; }
};

using Instruction = std::variant<SplitCall, DivideCall, ReorderCall, DistributeCall, ShardCall,
                                 CommunicateCall, TensorizeCall>;

// One call in canonical text, e.g. "divide(k, ko, ki, 8)".
std::string ToString(const Instruction& inst);

struct Trace {
  std::vector<Instruction> instructions;

  // Canonical text: one call a line, each line ending in '\n'.
  std::string ToString() const;
  bool operator==(const Trace& o) const { return instructions == o.instructions; }
};

inline constexpr size_t kMaxTraceBytes = 64 * 1024;

// Parses trace text (blank lines and '#' comments allowed). Returns InvalidArgument naming
// the line, column and offending token for unknown primitives, wrong argument counts or
// kinds, unbalanced brackets, bad integers, non-ASCII bytes and oversized input.
absl::StatusOr<Trace> ParseTrace(absl::string_view text);

// Applies one instruction.
absl::StatusOr<Computation> Apply(const Computation& c, const Instruction& inst);

// The result of replaying a trace: the computation after the last instruction that
// applied, and the failure of the next one, if any.
struct Replay {
  Computation computation;
  absl::Status status;  // OK when every instruction applied
  int failed_line = 0;  // 1-based index of the failing instruction, 0 when none
};

// Replays `trace` on `base`, stopping at the first instruction that fails. The status of a
// failure is prefixed with "instruction N, <call>: " and keeps its code and reason.
Replay ReplayTrace(const Computation& base, const Trace& trace);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_TRACE_H_
