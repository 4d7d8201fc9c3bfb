// A plan that is the library call: ScaLAPACK's GEMM on block-cyclic shards, or a chain of them
// for a program of several statements (runtime/library/library_run.h), for a wisdom record
// whose answer is the library (meshtune.v1.Record.library).
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/job.h"
#include "ir/problem.h"
#include "meshtune/plan.h"
#include "proto/meshtune.pb.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"
#include "runtime/library/library_run.h"

namespace meshtune {

absl::Status Plan::BindLibrary(const std::string& library) {
  v1::LibraryRun run;
  if (!run.ParseFromString(library)) {
    return absl::InternalError("the library call sent by rank 0 does not parse");
  }
  const ir::StatementProgram& program = job_->program;
  std::vector<runtime::ProblemSpec> statements;
  for (const ir::Problem& p : program.statements) statements.push_back(runtime::ProblemSpecOf(p));
  absl::StatusOr<std::vector<runtime::GemmForm>> forms = runtime::GemmChainOf(statements);
  if (!forms.ok()) {
    return absl::InvalidArgumentError(
        program.single()
            ? absl::StrCat("the record's answer is the library, but ",
                           program.statements[0].ToString(), " is not of matmul form")
            : absl::StrCat("the record's answer is the library, but ", forms.status().message()));
  }
  const runtime::LibraryGemmConfig config{run.prow(), run.pcol(), run.nb()};
  int size = 0;
  MPI_Comm_size(comm_, &size);
  if (config.prow * config.pcol != size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the record's answer is ", run.library(), " on a ", config.prow, "x", config.pcol,
        " grid (", config.prow * config.pcol, " ranks) but the communicator has ", size));
  }
  element_bytes_ = program.statements[0].dtype == ir::DType::kF64 ? 8 : 4;
  absl::StatusOr<std::unique_ptr<runtime::LibraryChain>> chain =
      runtime::LibraryChain::Create(*forms, element_bytes_, config, comm_);
  if (!chain.ok()) return chain.status();
  library_ = *std::move(chain);
  library_text_ = absl::StrCat(run.library(), " ", runtime::ConfigText(config));
  prow_ = config.prow;
  pcol_ = config.pcol;
  nb_ = config.nb;
  mesh_ = absl::StrCat("x=", prow_, ",y=", pcol_);
  statement_count_ = program.single() ? 0 : static_cast<int>(program.statements.size());
  tensors_ = program.Tensors();
  for (const std::string& t : tensors_) {
    const int index = library_->IndexOf(t);
    shapes_.push_back(program.Shape(t));
    library_part_.push_back(index);
    reads_.push_back(true);  // an output too: its shards are staged only where they hold nothing
    writes_.push_back(library_->tensors()[index].written);
  }
  return absl::OkStatus();
}

ShardLayout Plan::LibraryShard(size_t t) const {
  const runtime::CyclicPart& p = library_->tensors()[library_part_[t]].part;
  ShardLayout s;
  s.layout = absl::StrCat("cyclic(", nb_, ",", nb_, ")");
  s.extents = {p.local_rows, p.local_cols};
  const bool holds = p.local_rows > 0 && p.local_cols > 0;
  if (!holds) s.extents = {0, 0};
  s.start = {holds ? p.GlobalRow(0) : 0, holds ? p.GlobalCol(0) : 0};
  s.strides = {1, p.lld()};
  s.storage = {p.lld(), p.local_cols};
  return s;
}

}  // namespace meshtune
