// Exit statuses of meshtune's commands and of meshtuned, as the README documents them.
#ifndef MESHTUNE_ENGINE_EXIT_CODES_H_
#define MESHTUNE_ENGINE_EXIT_CODES_H_

namespace meshtune::engine {

// Success (for `tune`: a schedule found and, when measuring, verified).
inline constexpr int kExitOk = 0;
// The request was well-formed but failed: nothing legal, nothing verified, not found, a
// failed job or I/O, an unreachable daemon, an internal error.
inline constexpr int kExitFailed = 1;
// Bad input: a flag, file or token the message names.
inline constexpr int kExitBadInput = 2;

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_EXIT_CODES_H_
