// Exit statuses of meshtune's commands and of meshtuned, as docs/reference.md documents them.
#ifndef MESHTUNE_ENGINE_EXIT_CODES_H_
#define MESHTUNE_ENGINE_EXIT_CODES_H_

#include "absl/status/status.h"

namespace meshtune::engine {

// Success (for `tune`: a schedule found and, when measuring, verified).
inline constexpr int kExitOk = 0;
// The request was well-formed but failed: nothing legal, nothing verified, not found, a
// failed job or I/O, an unreachable daemon, an internal error.
inline constexpr int kExitFailed = 1;
// Bad input: a flag, file or token the message names.
inline constexpr int kExitBadInput = 2;

// What NotFound means to a command: absent data (a record: the request failed) or a name
// the user gave that does not exist (a hardware profile: bad input).
enum class NotFoundIs { kFailure, kBadInput };

// The one mapping from a command's status to its exit status: kExitOk for OK,
// kExitBadInput for InvalidArgument (and NotFound when `not_found` says so), kExitFailed
// for every other code.
inline int ExitCodeFor(const absl::Status& status, NotFoundIs not_found = NotFoundIs::kFailure) {
  if (status.ok()) return kExitOk;
  if (absl::IsInvalidArgument(status)) return kExitBadInput;
  if (absl::IsNotFound(status) && not_found == NotFoundIs::kBadInput) return kExitBadInput;
  return kExitFailed;
}

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_EXIT_CODES_H_
