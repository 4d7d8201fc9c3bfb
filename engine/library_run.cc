#include "engine/library_run.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/job.h"
#include "engine/requests.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"

namespace meshtune::engine {

absl::StatusOr<PreparedRun> PrepareLibraryRun(const v1::Problem& problem,
                                              const v1::LibraryRun& library) {
  MT_ASSIGN_OR_RETURN(ir::Problem p, ProblemOf(problem));
  if (!p.layouts.empty()) {
    return absl::InvalidArgumentError(
        "the library runs on its own block-cyclic shards; give no --layout");
  }
  const runtime::ProblemSpec spec = runtime::ProblemSpecOf(p);
  const std::optional<runtime::GemmForm> form = runtime::GemmFormOf(spec);
  if (!form.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the library serves problems of matmul form only: ", p.ToString(), " is not"));
  }
  if (library.prow() < 1 || library.pcol() < 1 || library.nb() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the library call's grid ", library.prow(), "x",
                                                   library.pcol(), " and block ", library.nb(),
                                                   " must be at least 1"));
  }
  const runtime::LibraryGemmConfig config{library.prow(), library.pcol(), library.nb()};
  PreparedRun out;
  out.spec.problem = spec;
  out.spec.library = config;
  out.spec.library_dtype_bytes = p.dtype == ir::DType::kF64 ? 8 : 4;
  out.spec.ranks = int64_t{config.prow} * config.pcol;
  // Rank (0, 0) holds the most of every matrix as stored (A [k, m] when transposed, B [n, k]):
  // its share, in whole blocks.
  const auto local = [&config](int64_t rows, int64_t cols) {
    return runtime::CyclicPartOf(rows, cols, config, 0, 0).LocalElements();
  };
  const int64_t a = form->a_transposed ? local(form->k, form->m) : local(form->m, form->k);
  const int64_t b = form->b_transposed ? local(form->n, form->k) : local(form->k, form->n);
  out.footprint.shard_bytes = (local(form->m, form->n) + a + b) * out.spec.library_dtype_bytes;
  return out;
}

}  // namespace meshtune::engine
