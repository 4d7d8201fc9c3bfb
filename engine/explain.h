// Explain: the legality verdict, reasons, schedule and shardings of a schedule.
//
// The in-process engine behind `meshtune explain` (and the Explain RPC). Stateless and
// thread-safe: each call builds its own isl context.
#ifndef MESHTUNE_ENGINE_EXPLAIN_H_
#define MESHTUNE_ENGINE_EXPLAIN_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/job.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// Replays the job's traces on its statements and mesh and judges them, costing with the
// hardware profile `profile` ("" or "default": the built-in numbers). An illegal schedule
// is a response with legal=false, not an error. One statement answers with its verdict,
// reasons, schedule, shardings and, when legal and lowered, its transfers, pseudo-code and
// predicted time. A program of several statements answers with each statement's response in
// `statements`, the moves of its intermediates between them (in place, or the busiest
// rank's bytes and the model's seconds) and the whole program's predicted time; its errors
// name the statement. ChooseProfile's errors for an unknown profile.
absl::StatusOr<v1::ExplainResponse> Explain(const ScheduleJob& job, const std::string& profile);

// The same for the job a request states: JobOf's errors (InvalidArgument naming the
// offending token) first.
absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request);

// Human-readable rendering: verdict, reasons, schedule, shardings (each statement's, then
// the moves and the program's verdict, for a program).
std::string ExplainText(const v1::ExplainResponse& response);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_EXPLAIN_H_
