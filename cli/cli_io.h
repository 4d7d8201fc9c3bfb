// Small I/O helpers for the command-line tools: reading inputs and printing protos as JSON.
#ifndef MESHTUNE_CLI_CLI_IO_H_
#define MESHTUNE_CLI_CLI_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace meshtune::cli {

// Reads `path` ("-" for stdin), at most `max_bytes` + 1 bytes (so that callers can report
// an oversized input themselves). InvalidArgument naming the path when it cannot be read.
absl::StatusOr<std::string> ReadInput(const std::string& path, size_t max_bytes);

// Flushes stdout (std::cout and C stdio) and tells whether everything written to it
// reached the file: Unavailable "cannot write to standard output: No space left on
// device" (or the system's other reason) when a write failed.
absl::Status FlushStdout();

// One-line JSON of `message` with field names as in the .proto and default values printed.
std::string ToJson(const google::protobuf::Message& message);

// `s` as a JSON string literal, quotes included.
std::string JsonQuote(const std::string& s);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CLI_IO_H_
