// Checks for the command-line flags of meshtune and meshtuned (CLI11 validators) whose
// messages say what is wrong in words, quote at most base::kMaxExcerpt characters of the
// value and print readable bounds. CLI11's own numeric checks accept nan (no comparison is
// true for it), saturate integers that overflow and print DBL_MAX in 309 digits.
#ifndef MESHTUNE_ENGINE_FLAG_CHECKS_H_
#define MESHTUNE_ENGINE_FLAG_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace meshtune::engine {

// A finite decimal number in [min, max], or in (min, max] with `min_exclusive`. Rejects
// nan, inf, junk and out-of-range values: "'nan' is not a finite number; give a number in
// (0, 604800]".
CLI::Validator NumberIn(double min, double max, bool min_exclusive = false);

// A decimal integer in [min, max] (no octal or hex: "010" is ten). Rejects junk, fractions
// and values outside the range, also those that overflow 64 bits: "'99999999999999999999'
// is out of range; give an integer from 0 to 9223372036854775807". The value is passed on
// in canonical decimal form.
CLI::Validator IntegerIn(int64_t min, int64_t max);

// A decimal integer from 0 to 2^64 - 1 (seeds).
CLI::Validator Unsigned64();

// One of `choices` (exactly): "'bogus' is not one of crash, hang, wrong".
CLI::Validator OneOf(std::vector<std::string> choices);

// InvalidArgument unless `address` is HOST:PORT with a non-empty host (a name, an IPv4
// address or a bracketed IPv6 address) and a decimal port from 1 to 65535 (also 0 with
// `allow_port_zero`: any free port); "unix:PATH" is accepted as it is. The message
// names the problem: "--listen '127.0.0.1:99999': port 99999 is out of range (1 to 65535)".
absl::Status CheckHostPort(absl::string_view flag, absl::string_view address, bool allow_port_zero);

// CheckHostPort as a CLI11 validator.
CLI::Validator HostPort(bool allow_port_zero);

// What CLI11 prints for a parse error, with every token it quotes cut to base::kMaxExcerpt
// characters (its messages echo whole arguments: a 100 KB --log-level value would come
// back whole). Install with app.failure_message(ParseFailureMessage).
std::string ParseFailureMessage(const CLI::App* app, const CLI::Error& e);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_FLAG_CHECKS_H_
