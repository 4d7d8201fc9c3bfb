// `meshtune codegen` of a program of several statements (ir/statement_program.h): one
// callable kernel for the whole program (codegen/emit_program.h).
#ifndef MESHTUNE_ENGINE_PROGRAM_CODEGEN_H_
#define MESHTUNE_ENGINE_PROGRAM_CODEGEN_H_

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The callable kernel of the program `request` states with its program trace: each
// statement's trace judged, lowered and validated as a run of the program's is
// (engine/program_run.h). InvalidArgument for --main (one statement's standalone program
// only), a malformed program or trace, or a statement's illegal schedule ("statement N: ").
absl::StatusOr<v1::CodegenResponse> ProgramCodegen(const v1::CodegenRequest& request);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_PROGRAM_CODEGEN_H_
