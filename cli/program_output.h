// The text `tune` prints for a program of several statements (v1::ProgramResult): each
// statement's schedule in the program trace form (ir/program_trace.h) that `run --trace`
// reads back, the moves between statements, the predicted and measured times, and the
// schedule tuning each statement alone would give beside it.
#ifndef MESHTUNE_CLI_PROGRAM_OUTPUT_H_
#define MESHTUNE_CLI_PROGRAM_OUTPUT_H_

#include <string>

#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// `r`'s program as text; `r.program()` must be set.
std::string ProgramResultText(const v1::TuneResult& r);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_PROGRAM_OUTPUT_H_
