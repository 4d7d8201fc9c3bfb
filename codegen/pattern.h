// A communication pattern in one place: the interface every pattern implements and the
// registry that holds them (PatternOf). Each pattern lives in its own file under
// codegen/patterns/ and says, for a Transfer or Reduce of its kind:
//   - whether a transfer has its form (Recognize): lowering describes the transfer
//     (TransferFacts, from isl in codegen/patterns.cc or from closed forms in
//     search/closed_form.cc) and the registry asks the patterns in its order,
//   - its name and the form users read ("Broadcast(axes=[0])"),
//   - what runs on a rank at one step: the calls of the rank runtime (runtime/rank/rank.h,
//     RankRuntimeBase), under a guard when the step depends on where the loop is — the
//     executor (runtime/executor.cc) makes these calls and the emitted C++ (emit_cpp.cc)
//     prints them, from this one description; translation validation (validate.h) and the
//     cost model (cost/cost_model.h) model those calls by their shape (ShapeOf).
// CommPattern (program.h) is the value a Program holds; Pattern is what that value means.
// Stateless; thread-safe.
#ifndef MESHTUNE_CODEGEN_PATTERN_H_
#define MESHTUNE_CODEGEN_PATTERN_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/expr.h"

namespace meshtune::ir {
struct Mesh;
}  // namespace meshtune::ir

namespace meshtune::codegen {

// The Program's statements and values a pattern describes (codegen/program.h).
enum class PatternKind : int;
struct CommPattern;
struct Transfer;
struct Reduce;

// One call of the rank runtime (runtime/rank/rank.h) a pattern's step makes. Expressions are
// in the calling rank's coordinates and the loop variables, except `source` and
// `offset_at` of PointToPoint and AllToAll, which are functions of any rank's coordinates
// (the runtime evaluates them for its peers).
struct RuntimeCall {
  enum class Op {
    kLocal,         // Local(tensor, buffer, offset)
    kBroadcast,     // Broadcast(tensor, buffer, offset, axes, source)
    kAllGather,     // AllGather(tensor, buffer, offset, axes)
    kAllToAll,      // AllToAll(tensor, buffer, offset_at)
    kShiftStep,     // ShiftStep(buffer, axis, shift)
    kPointToPoint,  // PointToPoint(tensor, buffer, source, offset_at)
    kReduceInto,    // ReduceInto(reduce_kind, tensor, buffer, offset, axes)
  };
  Op op = Op::kLocal;
  std::string tensor, buffer;
  std::vector<Expr> offset;     // the box's offset on the calling rank
  std::vector<Expr> source;     // Broadcast: the root; PointToPoint: a rank's source
  std::vector<Expr> offset_at;  // AllToAll, PointToPoint: a rank's offset
  std::vector<int> axes;        // the group's mesh axes
  int axis = 0, shift = 0;      // ShiftStep
  std::string reduce_kind;      // ReduceInto: "Local", "Reduce", "AllReduce", "ReduceScatter"
};

// What one step of a transfer or reduction runs: `then`, or, under a guard that fails,
// `otherwise`.
struct StepCalls {
  enum class Guard {
    kNone,        // always `then`
    kPastFirst,   // `then` when loop `loop` encloses the step at a value other than 0
    kBeforeLast,  // `then` when `loop` is the innermost loop and not at its last value
  };
  Guard guard = Guard::kNone;
  std::string loop;  // the guard's loop
  std::vector<RuntimeCall> then, otherwise;
};

// How a step's calls combine, as the readers that model them (translation validation, the
// cost model) tell them apart: by the runtime calls, never by the pattern's name. A new
// pattern that makes one of these shapes needs nothing from them.
enum class StepShape {
  kLocal,         // one Local copy
  kBroadcast,     // one Broadcast
  kAllGather,     // one AllGather
  kAllToAll,      // one AllToAll
  kPointToPoint,  // one PointToPoint
  kRing,          // PointToPoint at the first step of `loop`, ShiftStep after (kPastFirst)
  kReduceOwn,     // one ReduceInto "Local": each rank adds into its own shard
  kReduceGroup,   // one ReduceInto "Reduce", "ReduceScatter" or "AllReduce" over `axes`
  kReduceRing,    // ShiftStep until the last step of `loop`, then (ShiftStep and) "Local"
  kOther,         // anything else
};

// The shape of `steps`.
StepShape ShapeOf(const StepCalls& steps);

// The call that moves the data in `steps`: the only call of a single-call step, a ring's
// first-step fetch (kRing) or its landing (kReduceRing); nullptr for kOther.
const RuntimeCall* DataCall(const StepCalls& steps);

// What lowering knows of one transfer, for the patterns to recognise their own. The
// questions that cost work are functions, asked only by the patterns that need them.
struct TransferFacts {
  enum class Role {
    kFetchOne,   // a fetch with one source rank per rank and step
    kFetchMany,  // a fetch whose box is pieced together from the ranks that hold it
    kReduce,     // the sum of an output's partial results
  };
  Role role = Role::kFetchOne;
  // kFetchOne: the mesh axes along which a rank's source is another rank (none: its own
  // data). kFetchMany: the axes along which the contributing ranks lie (none: anywhere on
  // the mesh). kReduce: the mesh axes the reduction indices are distributed over.
  std::vector<int> axes;
  // kFetchOne: whether each group of ranks along `axes` has one root and reads one box.
  std::function<absl::StatusOr<bool>()> one_root_per_group;
  // kFetchOne with one axis: the step d (0 < |d| <= size / 2) by which the source moves
  // along it per iteration of the loop around the fetch, when what a rank needs next is
  // what its neighbour at +d needs now; nullopt when the fetch is no such ring.
  std::function<absl::StatusOr<std::optional<int>>()> neighbour_step;
  // kReduce: the ring the partial sums can pass around (ir/ring.h), if any.
  struct Ring {
    int axis = 0, shift = 0;
    bool hop = false;
  };
  std::optional<Ring> ring;
  bool replicated = false;  // kReduce: every copy along `axes` is to hold the result
  bool split = false;       // kReduce: the reduced box is wider than a rank's shard
};

// A communication pattern (see the file comment).
class Pattern {
 public:
  virtual ~Pattern() = default;
  // "Broadcast": the name in pseudo-code, transfer summaries and reports.
  virtual std::string Name() const = 0;
  // Whether a transfer of `facts` has this pattern's form, asked after the patterns before
  // it in the registry's order said no; when it has, `*out` is the pattern (its kind, axes,
  // shift and hop). Errors are the facts' own (a closed form too large to decide).
  virtual absl::StatusOr<bool> Recognize(const TransferFacts& facts, CommPattern* out) const = 0;
  // The form users read, e.g. "Broadcast(axes=[0])", "Shift(axis=1, +1)", "Local".
  virtual std::string Describe(const CommPattern& p) const;
  // Whether a fetch of this pattern fills its box from the ranks that hold it (its
  // Transfer::global says where), with no single source.
  virtual bool FromHolders() const { return false; }
  // Whether a step of it sends anything between ranks (a Local copy does not).
  virtual bool Sends() const { return true; }
  // Whether its buffer carries data from one step of the loop around it to the next (a
  // ring): lowering gives such a fetch its time loop (Transfer::time_loop) and zeroes such a
  // reduction's buffer before that loop rather than in it.
  virtual bool AcrossSteps() const { return false; }
  // Lowering: where the sums of reduction `r` (of this kind, on `mesh`) land, written into
  // r.global. The default keeps the box each rank computed.
  virtual void Land(const ir::Mesh& mesh, codegen::Reduce& r) const {}
  // Why `p` (of this kind) is malformed — its axes, shift and hop — or "" when it is not;
  // e.g. "a Shift turns along exactly one axis". Read back from a message
  // (program_proto.h), a pattern is checked by this.
  virtual std::string CheckForm(const CommPattern& p) const;
  // Pseudo-code: whether the source rank's coordinate along mesh axis `axis` is shown
  // ("from rank[...]"); a Broadcast shows its group's axes alone.
  virtual bool ShowsSourceAxis(const CommPattern& p, int axis) const { return true; }
  // Pseudo-code: what a reduction's line adds when the innermost loop around it is its
  // own, `loop` (whose last value is `last`); "" for nothing.
  virtual std::string ReduceNote(const codegen::Reduce& r, const std::string& loop,
                                 const std::string& last) const {
    return "";
  }
  // The calls of one step of fetch `t` (t.pattern is of this kind). The default: each
  // rank receives its box from its source rank (PointToPoint).
  virtual StepCalls Fetch(const Transfer& t) const;
  // The calls of one step of reduction `r` (r.pattern is of this kind). The default: the
  // runtime's reduction named Name() over the pattern's axes (ReduceInto).
  virtual StepCalls Reduce(const codegen::Reduce& r) const;
};

// The pattern of `kind` (the registry, codegen/pattern_registry.cc).
const Pattern& PatternOf(PatternKind kind);

// The pattern that carries a transfer of `facts`: the first pattern of the registry's order
// (the cheapest that fits: Local, Broadcast, Shift, SendRecv; AllGather, AllToAll;
// RingReduce, AllReduce, ReduceScatter, Reduce) whose Recognize says yes. Errors are the
// facts' own.
absl::StatusOr<CommPattern> RecognizeTransfer(const TransferFacts& facts);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_PATTERN_H_
