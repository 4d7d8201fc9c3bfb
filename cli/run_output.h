// How `meshtune run` answers: the meshtune.v1.RunResult message, as text or (--json) as
// one line of protobuf's JSON mapping (base/json.h ToJsonLine). Stateless; thread-safe.
#ifndef MESHTUNE_CLI_RUN_OUTPUT_H_
#define MESHTUNE_CLI_RUN_OUTPUT_H_

#include <string>

#include "proto/meshtune.pb.h"
#include "runtime/launch/launcher.h"

namespace meshtune::cli {

// The RunResult of a run under MPI: checked "measured", error set whenever it did not
// verify (a crash, a timeout, a wrong answer).
v1::RunResult RunResultOfLaunch(const runtime::LaunchResult& launched);

// The result as text, e.g.
//   verified   yes (measured under MPI)
//   median     0.00119 s of 3 repetitions (0.00123, 0.00119, 0.0012 s)
//   sent       4096 bytes by the busiest rank in one repetition
//   copied     4096 bytes packed or copied by the busiest rank
//   checksum   -337.71358995139599
// or "verified   no (...)" followed by "error      WHY" (and the times, when it ran).
std::string RunResultText(const v1::RunResult& result);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_RUN_OUTPUT_H_
