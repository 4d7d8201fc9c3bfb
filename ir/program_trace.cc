#include "ir/program_trace.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace meshtune::ir {

std::string ProgramTraceText(const StatementProgram& program,
                             const std::vector<std::string>& traces) {
  std::string out;
  for (size_t s = 0; s < traces.size(); ++s) {
    if (s > 0) out += "---\n";
    if (s < program.statements.size())
      absl::StrAppend(&out, "# statement ", s + 1, ": ", program.statements[s].ToString(), "\n");
    out += traces[s];
  }
  return out;
}

absl::StatusOr<std::vector<Trace>> ParseProgramTrace(absl::string_view text, int statements) {
  if (statements == 1) {  // a statement's trace, as ParseTrace reads it
    absl::StatusOr<Trace> t = ParseTrace(text);
    if (!t.ok()) return t.status();
    return std::vector<Trace>{*std::move(t)};
  }
  if (text.size() > kMaxProgramTraceBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the program's trace is ", text.size(),
                                                   " bytes long; the limit is ",
                                                   kMaxProgramTraceBytes, " bytes"));
  }
  std::vector<std::string> parts(1);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StripAsciiWhitespace(line) == "---") {
      parts.emplace_back();
    } else {
      absl::StrAppend(&parts.back(), line, "\n");
    }
  }
  if (static_cast<int>(parts.size()) != statements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the trace has ", parts.size(), parts.size() == 1 ? " part" : " parts",
        " but the program has ", statements, statements == 1 ? " statement" : " statements",
        "; separate the statements' traces with lines ---"));
  }
  std::vector<Trace> traces;
  for (size_t s = 0; s < parts.size(); ++s) {
    absl::StatusOr<Trace> t = ParseTrace(parts[s]);
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("statement ", s + 1, ": ", t.status().message()));
    }
    traces.push_back(*std::move(t));
  }
  return traces;
}

}  // namespace meshtune::ir
