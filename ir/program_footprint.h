// What one rank holds over a program of statements: the memory --mem-per-rank bounds.
// Pure functions over the statements' replayed computations.
#ifndef MESHTUNE_IR_PROGRAM_FOOTPRINT_H_
#define MESHTUNE_IR_PROGRAM_FOOTPRINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/computation.h"
#include "ir/footprint.h"
#include "ir/statement_program.h"

namespace meshtune::ir {

// One rank's bytes over the program `program` whose statement s runs as `statements[s]`:
// every tensor's block in the layout of its home statement (StatementProgram::Home), held
// from its first statement to the end (shard_bytes); and, the most over the statements
// (buffer_bytes), what statement s adds while it runs — its transfer buffers, and a copy of
// each tensor it touches in another layout than its home's (the executor's staging).
// `most`, when given, gets the index of the first statement adding that most.
Footprint ProgramFootprint(const StatementProgram& program,
                           const std::vector<const Computation*>& statements,
                           size_t* most = nullptr);

// "program footprint 12 KiB a rank (blocks of its tensors 8 KiB, the most one statement
// adds 4 KiB: statement 2) exceeds the memory budget of 10 KiB" when footprint `f`
// (ProgramFootprint, its statement `most` adding the most) is over `budget`; nullopt when
// within it or when there is no budget.
std::optional<std::string> ProgramOverBudget(const Footprint& f, size_t most,
                                             std::optional<int64_t> budget);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_PROGRAM_FOOTPRINT_H_
