// Lowering: from a legal ir::Computation to the Program every rank runs.
//
// Read lower.cc top to bottom: it is the pipeline, one pass a step, and with a logger set
// the program is printed after each step.
#ifndef MESHTUNE_CODEGEN_LOWER_H_
#define MESHTUNE_CODEGEN_LOWER_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/computation.h"

namespace meshtune::codegen {

struct LowerOptions {
  // Called with (step name, program text) after each step when set.
  std::function<void(const std::string&, const std::string&)> log;
};

// Lowers `c`, which must be legal (ir/legality.h). Returns Unimplemented for schedules the
// lowering does not handle yet (the message says which part), never crashes on them.
absl::StatusOr<Program> Lower(const ir::Computation& c, const LowerOptions& options = {});

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_LOWER_H_
