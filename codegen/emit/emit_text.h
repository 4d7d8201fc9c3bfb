// Pieces of the C++ text meshtune emits, shared by the emitted schedules (codegen/emit/emit_cpp.h)
// and the emitted library calls (codegen/emit/emit_library.h). Stateless; thread-safe.
#ifndef MESHTUNE_CODEGEN_EMIT_EMIT_TEXT_H_
#define MESHTUNE_CODEGEN_EMIT_EMIT_TEXT_H_

#include <string>

namespace meshtune::codegen {

// `s` as a C++ string literal; `s` is a name meshtune made or checked (no quotes, no
// backslashes, no newlines), so nothing is escaped.
std::string CppQuote(const std::string& s);

// Every line of `text` as a line comment: "// line\n".
std::string CppComment(const std::string& text);

// The opening of an emitted program's main: MPI_Init, then `--reps N`, `--warmup N` and
// `--seed S` read into `reps` (3), `warmup` (1) and `seed` (1); ends inside an open block
// (the program's objects end before MPI_Finalize).
extern const char kMainOpening[];

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_EMIT_EMIT_TEXT_H_
