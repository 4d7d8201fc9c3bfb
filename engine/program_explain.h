// explain for a program of several statements (ir/statement_program.h) with a program trace
// (ir/program_trace.h): each statement's verdict, maps, transfers and cost as explain gives
// one statement's, and the moves of its intermediates between the statements — read in
// place, or how much the busiest rank sends and what the model says it costs (the program
// tuner's own reckoning, search/program_layouts.h).
#ifndef MESHTUNE_ENGINE_PROGRAM_EXPLAIN_H_
#define MESHTUNE_ENGINE_PROGRAM_EXPLAIN_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The answer for a program request. InvalidArgument for a malformed program or trace (the
// statement's number in the message), given layouts (not for programs yet) and what
// explain refuses for one statement.
absl::StatusOr<v1::ExplainResponse> ExplainProgram(const v1::ExplainRequest& request);

// A program's answer as text: each statement's ExplainText under its number and text, then
// the moves and the whole program's predicted time.
std::string ProgramExplainText(const v1::ExplainResponse& response);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_PROGRAM_EXPLAIN_H_
