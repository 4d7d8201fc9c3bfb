// Small I/O helpers for the command-line tools: reading inputs, flushing the output, ending a
// failed command. (JSON output is base/json.h's ToJsonLine of the command's message.)
#ifndef MESHTUNE_CLI_CLI_IO_H_
#define MESHTUNE_CLI_CLI_IO_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/exit_codes.h"

namespace meshtune::cli {

// Reads `path` ("-" for stdin), at most `max_bytes` + 1 bytes (so that callers can report
// an oversized input themselves). InvalidArgument "cannot read WHAT 'PATH': REASON" when it
// cannot be read.
absl::StatusOr<std::string> ReadInput(const std::string& path, size_t max_bytes,
                                      const std::string& what = "trace file");

// OK when `data`, read from `path` as WHAT, is text: UTF-8 without a NUL byte. Otherwise
// InvalidArgument naming the first byte that is not (offsets from 0): "WHAT 'PATH' is not
// text: it holds a NUL byte at offset N" or "WHAT 'PATH' is not text: byte 0xHH at offset N
// is not UTF-8". For a file read whole before it is split up (a binary file is said to be
// one, not taken for a long list of statements). A multi-byte sequence cut short at the end
// of `data` counts as text when `data` holds more than `max_bytes` (ReadInput's extra byte).
absl::Status CheckText(const std::string& data, const std::string& path, const std::string& what,
                       size_t max_bytes);

// Flushes stdout (std::cout and C stdio) and tells whether everything written to it
// reached the file: Unavailable "cannot write to standard output: No space left on
// device" (or the system's other reason) when a write failed.
absl::Status FlushStdout();

// Whether `path` can be opened for writing (an existing file keeps its content; a missing
// one is created empty): InvalidArgument as WriteTextFile's otherwise. For a command that
// writes a file at its end, to refuse a bad path before its work.
absl::Status CheckWritable(const std::string& path);

// Writes `text` to the file `path`; InvalidArgument when it cannot be opened, Unavailable
// when a write fails, each naming the path.
absl::Status WriteTextFile(const std::string& path, const std::string& text);

// A failed command's ending: "meshtune: MESSAGE" on `err`, and the exit status of `status`
// (engine::ExitCodeFor).
int Fail(const absl::Status& status, std::ostream& err,
         engine::NotFoundIs not_found = engine::NotFoundIs::kFailure);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CLI_IO_H_
