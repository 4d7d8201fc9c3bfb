// Why a schedule is illegal: reason codes and the status that carries them.
//
// A primitive or the legality check that finds a schedule illegal (as opposed to a
// malformed request) returns FailedPrecondition with a reason code attached as a status
// payload; Rejection pairs the code with the human message. The search counts prunes by
// code, `meshtune explain` prints them. Where an illegal verdict becomes the error of a
// request (run, codegen, the checker), it is IllegalSchedule: one code, one message form.
#ifndef MESHTUNE_IR_REASON_H_
#define MESHTUNE_IR_REASON_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace meshtune::ir {

// Loops over an index that reach past the last block of a tensor sharded along it: where
// blocks do not divide an extent, a box the loops use would lie past the shard's storage.
inline constexpr absl::string_view kOverhang = "overhang";
// A tensor element that no rank holds.
inline constexpr absl::string_view kUnownedElement = "unowned_element";
// A communicate whose data for one rank and iteration lives on several ranks.
inline constexpr absl::string_view kMultiSourceTransfer = "multi_source_transfer";
// An access to an element the executing rank does not hold, with no communicate.
inline constexpr absl::string_view kNonLocalAccess = "non_local_access";
// An output element written by several ranks (or away from a holder) without a reduction.
inline constexpr absl::string_view kUnreducedOutput = "unreduced_output";
// A reduced output whose ranks of one reduction group hold partial sums of different
// elements at the same iteration.
inline constexpr absl::string_view kMisalignedReduction = "misaligned_reduction";
// Shards plus transfer buffers exceed the per-rank memory budget.
inline constexpr absl::string_view kOverMemoryBudget = "over_memory_budget";
// Two communicates rotate the same loop by different variables.
inline constexpr absl::string_view kConflictingRotation = "conflicting_rotation";
// A prefetched communicate with no next step to overlap its transfer with: its loop has one
// iteration, or it is the kernel's outermost loop (one transfer per kernel call).
inline constexpr absl::string_view kNothingToOverlap = "nothing_to_overlap";

struct Rejection {
  std::string code;
  std::string message;
  bool operator==(const Rejection& o) const { return code == o.code && message == o.message; }
};

// FailedPrecondition with `message`, carrying `code` as its reason.
absl::Status Reject(absl::string_view code, absl::string_view message);

// The error of a request whose schedule is illegal, `first` being its first reason:
// InvalidArgument "the schedule is illegal: [<code>] <message>", carrying first.code as
// Reject does, so that AsRejection(IllegalSchedule(r)) == r.
absl::Status IllegalSchedule(const Rejection& first);

// The rejection a status carries (Reject's or IllegalSchedule's, the latter with its
// message as given to IllegalSchedule), or nullopt for OK and for other errors (bad input,
// which carries no code).
std::optional<Rejection> AsRejection(const absl::Status& status);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_REASON_H_
