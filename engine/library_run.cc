#include "engine/library_run.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/job.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"

namespace meshtune::engine {

absl::StatusOr<PreparedRun> PrepareLibraryRun(const v1::Problem& problem,
                                              const v1::LibraryRun& library) {
  MT_ASSIGN_OR_RETURN(ir::StatementProgram program, ProgramOf(problem));
  std::vector<runtime::ProblemSpec> statements;
  for (const ir::Problem& p : program.statements) {
    if (!p.layouts.empty()) {
      return absl::InvalidArgumentError(
          "the library runs on its own block-cyclic shards; give no --layout");
    }
    statements.push_back(runtime::ProblemSpecOf(p));
  }
  absl::StatusOr<std::vector<runtime::GemmForm>> forms = runtime::GemmChainOf(statements);
  if (!forms.ok()) {
    return absl::InvalidArgumentError(
        program.single() ? absl::StrCat("the library serves problems of matmul form only: ",
                                        program.statements[0].ToString(), " is not")
                         : absl::StrCat("the library serves programs of matmul form only: ",
                                        forms.status().message()));
  }
  if (library.prow() < 1 || library.pcol() < 1 || library.nb() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the library call's grid ", library.prow(), "x",
                                                   library.pcol(), " and block ", library.nb(),
                                                   " must be at least 1"));
  }
  const runtime::LibraryGemmConfig config{library.prow(), library.pcol(), library.nb()};
  PreparedRun out;
  out.spec.problem = statements[0];
  for (size_t s = 1; s < statements.size(); ++s) out.spec.later.push_back({statements[s], {}});
  out.spec.library = config;
  out.spec.library_dtype_bytes = program.statements[0].dtype == ir::DType::kF64 ? 8 : 4;
  out.spec.ranks = int64_t{config.prow} * config.pcol;
  // Rank (0, 0) holds the most of every matrix as stored (A [k, m] when transposed, B [n, k]):
  // its share of every tensor of the chain, once each, in whole blocks.
  const auto local = [&config](int64_t rows, int64_t cols) {
    return runtime::CyclicPartOf(rows, cols, config, 0, 0).LocalElements();
  };
  std::vector<std::string> counted;
  int64_t elements = 0;
  const auto count = [&](const std::string& name, int64_t rows, int64_t cols) {
    if (std::find(counted.begin(), counted.end(), name) != counted.end()) return;
    counted.push_back(name);
    elements += local(rows, cols);
  };
  for (const runtime::GemmForm& f : *forms) {
    count(f.c, f.m, f.n);
    if (f.a_transposed)
      count(f.a, f.k, f.m);
    else
      count(f.a, f.m, f.k);
    if (f.b_transposed)
      count(f.b, f.n, f.k);
    else
      count(f.b, f.k, f.n);
  }
  out.footprint.shard_bytes = elements * out.spec.library_dtype_bytes;
  return out;
}

}  // namespace meshtune::engine
