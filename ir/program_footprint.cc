#include "ir/program_footprint.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/bytes.h"
#include "base/check.h"
#include "ir/legality.h"
#include "ir/problem.h"

namespace meshtune::ir {

namespace {

int64_t StorageBytes(const Computation& c, const std::string& tensor) {
  int64_t n = DTypeBytes(c.problem().dtype);
  for (int64_t e : c.StorageShape(tensor)) n *= e;
  return n;
}

// The most statement s adds: its buffers and its copies of tensors laid out otherwise than
// at home.
int64_t Added(const StatementProgram& program, const std::vector<const Computation*>& statements,
              size_t s) {
  const Computation& c = *statements[s];
  int64_t bytes = ComputeFootprint(c).buffer_bytes;
  for (const std::string& t : c.problem().Tensors()) {
    const int home = program.Home(t);
    if (home < 0 || static_cast<size_t>(home) == s) continue;
    const Computation& h = *statements[static_cast<size_t>(home)];
    if (h.LayoutString(t) != c.LayoutString(t) || h.StorageShape(t) != c.StorageShape(t))
      bytes += StorageBytes(c, t);
  }
  return bytes;
}

}  // namespace

Footprint ProgramFootprint(const StatementProgram& program,
                           const std::vector<const Computation*>& statements, size_t* most) {
  MT_CHECK(statements.size() == program.statements.size());
  Footprint f;
  for (const std::string& t : program.Tensors()) {
    const int home = program.Home(t);
    MT_CHECK(home >= 0);
    f.shard_bytes += StorageBytes(*statements[static_cast<size_t>(home)], t);
  }
  if (most != nullptr) *most = 0;
  for (size_t s = 0; s < statements.size(); ++s) {
    const int64_t added = Added(program, statements, s);
    if (added <= f.buffer_bytes) continue;
    f.buffer_bytes = added;
    if (most != nullptr) *most = s;
  }
  return f;
}

std::optional<std::string> ProgramOverBudget(const Footprint& f, size_t most,
                                             std::optional<int64_t> budget) {
  if (!budget.has_value() || f.total() <= *budget) return std::nullopt;
  return absl::StrCat("program footprint ", base::FormatBytes(f.total()),
                      " a rank (blocks of its tensors ", base::FormatBytes(f.shard_bytes),
                      ", the most one statement adds ", base::FormatBytes(f.buffer_bytes),
                      ": statement ", most + 1, ") exceeds the memory budget of ",
                      base::FormatBytes(*budget));
}

}  // namespace meshtune::ir
