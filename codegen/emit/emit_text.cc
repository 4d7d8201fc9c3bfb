#include "codegen/emit/emit_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace meshtune::codegen {

std::string CppQuote(const std::string& s) { return absl::StrCat("\"", s, "\""); }

std::string CppComment(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n'))
    absl::StrAppend(&out, "// ", line, "\n");
  return out;
}

const char kMainOpening[] = R"(int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int reps = 3, warmup = 1;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--warmup")) warmup = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  {
)";

}  // namespace meshtune::codegen
