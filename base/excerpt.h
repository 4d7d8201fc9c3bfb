// Excerpt: how any piece of user input is quoted in a message. An error message names the
// offending token, but a token can be 64 KB long (a trace) and a message travels in gRPC
// metadata (8 KB at most) and to a terminal: every message quotes user input through
// Excerpt, which keeps at most kMaxExcerpt characters.
#ifndef MESHTUNE_BASE_EXCERPT_H_
#define MESHTUNE_BASE_EXCERPT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace meshtune::base {

// The most characters of one token a message quotes.
inline constexpr size_t kMaxExcerpt = 80;
// The most characters of a file path a message quotes (real paths are often longer than
// a token, a hostile one as long as any other input).
inline constexpr size_t kMaxPathExcerpt = 2 * kMaxExcerpt;

// `text` for a message: unchanged when it has at most `max` (>= 8) characters, else its
// start and its end with "..." between them, `max` characters in all. Bytes that are not
// printable ASCII are escaped as in C (\t, \n, \r, else \xNN; each counts as one
// character before escaping). Adds no quote marks.
std::string Excerpt(absl::string_view text, size_t max = kMaxExcerpt);

// `items` joined with ", " for a message listing choices ("loops: mo, no, ko"), each item
// an Excerpt and the list cut after `max` characters with ", ..." (so a list of thousands
// of names stays short).
std::string ExcerptList(const std::vector<std::string>& items, size_t max = 2 * kMaxExcerpt);

}  // namespace meshtune::base

#endif  // MESHTUNE_BASE_EXCERPT_H_
