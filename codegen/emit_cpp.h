// The C++ emitter: a Program as a standalone MPI program over runtime/rank.h.
//
// The emitted main() builds the same RankRuntime the executor drives and calls its
// primitives from plain loops, so it fills, communicates, computes, verifies and times
// exactly like `meshtune run`; rank 0 prints one JSON line, a meshtune.v1.RunResult. Build
// it against this repository's runtime (Bazel: a cc_binary depending on //runtime:mpi_comm,
// //runtime:rank and //runtime:run_result; see README).
#ifndef MESHTUNE_CODEGEN_EMIT_CPP_H_
#define MESHTUNE_CODEGEN_EMIT_CPP_H_

#include <string>

#include "codegen/program.h"

namespace meshtune::codegen {

// `title` goes into the header comment (e.g. the problem, mesh and trace).
std::string EmitCpp(const Program& program, const std::string& title);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_EMIT_CPP_H_
