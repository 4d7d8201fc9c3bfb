// A plan that is the library call: ScaLAPACK's GEMM on block-cyclic shards, for a wisdom
// record whose answer is the library (meshtune.v1.Record.library).
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/job.h"
#include "ir/problem.h"
#include "meshtune/plan.h"
#include "proto/meshtune.pb.h"
#include "runtime/executor.h"
#include "runtime/library/gemm_form.h"
#include "runtime/library/library_gemm.h"

namespace meshtune {

absl::Status Plan::BindLibrary(const std::string& library) {
  v1::LibraryRun run;
  if (!run.ParseFromString(library)) {
    return absl::InternalError("the library call sent by rank 0 does not parse");
  }
  const ir::Problem* problem = &job_->program.statements[0];
  const std::optional<runtime::GemmForm> form =
      runtime::GemmFormOf(runtime::ProblemSpecOf(*problem));
  if (!form.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("the record's answer is the library, but ",
                                                   problem->ToString(), " is not of matmul form"));
  }
  const runtime::LibraryGemmConfig config{run.prow(), run.pcol(), run.nb()};
  int size = 0;
  MPI_Comm_size(comm_, &size);
  if (config.prow * config.pcol != size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the record's answer is ", run.library(), " on a ", config.prow, "x", config.pcol,
        " grid (", config.prow * config.pcol, " ranks) but the communicator has ", size));
  }
  element_bytes_ = problem->dtype == ir::DType::kF64 ? 8 : 4;
  absl::StatusOr<std::unique_ptr<runtime::LibraryGemmCall>> call =
      runtime::LibraryGemmCall::Create(*form, element_bytes_, config, comm_);
  if (!call.ok()) return call.status();
  library_ = *std::move(call);
  library_text_ = absl::StrCat(run.library(), " ", runtime::ConfigText(config));
  prow_ = config.prow;
  pcol_ = config.pcol;
  nb_ = config.nb;
  mesh_ = absl::StrCat("x=", prow_, ",y=", pcol_);
  tensors_ = problem->Tensors();
  for (const std::string& t : tensors_) {
    shapes_.push_back(problem->Shape(t));
    library_part_.push_back(t == form->c ? 0 : t == form->a ? 1 : 2);
    reads_.push_back(true);  // C too: its shards are staged only where they hold nothing
    writes_.push_back(t == form->c);
  }
  return absl::OkStatus();
}

ShardLayout Plan::LibraryShard(size_t t) const {
  const int part = library_part_[t];
  const runtime::CyclicPart& p = part == 0   ? library_->c()
                                 : part == 1 ? library_->a()
                                             : library_->b();
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
