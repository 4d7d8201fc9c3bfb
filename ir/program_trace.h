// The schedule of a program of statements as text: each statement's trace (ir/trace.h)
// after a comment line naming the statement, the statements' traces separated by lines of
// three dashes:
//
//   # statement 1: H[b,f] = X[b,d] * W1[d,f]
//   distribute([f], [fo], [fi], [x])
//   ...
//   ---
//   # statement 2: Y[b,e] = H[b,f] * W2[f,e]
//   ...
//
// What `tune` prints for a program and `run --trace` reads back. Pure functions.
#ifndef MESHTUNE_IR_PROGRAM_TRACE_H_
#define MESHTUNE_IR_PROGRAM_TRACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/statement_program.h"
#include "ir/trace.h"

namespace meshtune::ir {

// `traces` (one per statement of `program`, canonical text each) in the form above.
std::string ProgramTraceText(const StatementProgram& program,
                             const std::vector<std::string>& traces);

// The most bytes of a program's trace text: a statement's limit (kMaxTraceBytes) for each
// of the most statements a program may have (kMaxStatements).
inline constexpr size_t kMaxProgramTraceBytes = kMaxTraceBytes * kMaxStatements;

// The traces of program trace text for a program of `statements` statements. For one
// statement the text is its trace: ParseTrace's result and errors, as they are. For several,
// the text is split at its "---" lines, each part parsed by ParseTrace; InvalidArgument when
// the text is over kMaxProgramTraceBytes ("the program's trace is N bytes long; the limit is
// M bytes"), when the parts and the statements differ in number ("the trace has 1 part but
// the program has 2 statements; separate the statements' traces with lines ---") or a part
// does not parse (ParseTrace's message after "statement N: ").
absl::StatusOr<std::vector<Trace>> ParseProgramTrace(absl::string_view text, int statements);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_PROGRAM_TRACE_H_
