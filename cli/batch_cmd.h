// `meshtune batch FILE.jsonl`: many tunes from a file, one meshtune.v1.TuneRequest a line
// in protobuf's JSON mapping (blank lines and lines starting with '#' are skipped), each
// run on a Backend (in this process, storing its winner, or by meshtuned) in file order.
#ifndef MESHTUNE_CLI_BATCH_CMD_H_
#define MESHTUNE_CLI_BATCH_CMD_H_

#include <ostream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "engine/backend.h"

namespace meshtune::cli {

// The parsed flags of `meshtune batch` (--server and --db aside: the Backend is given).
struct BatchFlags {
  std::string path;           // the JSON-lines file; "-" for stdin
  bool model_only = false;    // set model_only on every request
  bool no_calibrate = false;  // set no_calibrate on every request
  bool progress = false;      // draw progress on `err` (set when stderr is a terminal)
};

// Runs every request and prints one JSON line per request line on `out`, flushed as each
// ends: a meshtune.v1.BatchLine message in protobuf's JSON mapping — {"line":N,
// "result":TUNE_RESULT} (the TuneResult message, as `meshtune tune --json` prints it) or
// {"line":N,"error":MESSAGE} for a line that is not a TuneRequest (bad JSON, an unknown
// field, a line over 1 MiB) or whose tune failed (bad input, no legal schedule); the
// batch goes on. Exit status: 0 when every request produced a result that
// verified (or measured nothing); 1 when any did not — `err` then says how many — or when
// `out` cannot be written (the batch stops) or the file fails mid-way; 2 when the file
// cannot be read (missing, a directory).
// Once the daemon cannot be reached (UNAVAILABLE), later requests are not sent: each gets
// {"line":N,"error":"not sent: WHY"}.
int RunBatch(const BatchFlags& flags, engine::Backend& backend, std::ostream& out,
             std::ostream& err);

// Declares `batch` and its flags on `app`; its action is RunBatch on stdout and stderr
// (progress when stderr is a terminal), in this process (SIGINT and SIGTERM stopping its
// jobs) or by meshtuned with --server.
Command AddBatchCommand(CLI::App& app);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_BATCH_CMD_H_
