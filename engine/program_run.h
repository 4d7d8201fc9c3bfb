// A run request whose expr is a program of several statements (ir/statement_program.h)
// and whose trace is a program trace (ir/program_trace.h: a trace per statement between
// lines ---): each statement's trace judged, lowered and validated as PrepareRun does one
// statement's (engine/explain.h), made into one job (runtime::RunSpec with `later`) that
// runs every statement and the moves between them, checked against the serial reference
// of the whole program.
#ifndef MESHTUNE_ENGINE_PROGRAM_RUN_H_
#define MESHTUNE_ENGINE_PROGRAM_RUN_H_

#include "absl/status/statusor.h"
#include "engine/explain.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The program `request` states with its program trace, ready to run. InvalidArgument for a
// malformed program or trace, given layouts (not for programs yet), or a statement's
// illegal schedule; FailedPrecondition for a refused one — each after "statement N: ".
// The footprint is the statements' together (a run holds them all at once).
absl::StatusOr<PreparedRun> PrepareProgramRun(const v1::ExplainRequest& request);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_PROGRAM_RUN_H_
