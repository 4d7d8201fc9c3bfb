// A plan of a program of several statements (ir/statement_program.h): each statement's
// trace lowered on every rank, bound together over one shard per tensor of the program
// (runtime/bound_statements.h), one Execute running them all.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/prepare.h"
#include "ir/statement_program.h"
#include "meshtune/broadcast.h"
#include "meshtune/plan.h"
#include "runtime/bound_statements.h"
#include "runtime/mpi_comm.h"

namespace meshtune {
namespace {

// Whether any of the statements' `programs` reads tensor `name`'s values (an operand, a
// `+=` output) and whether one writes it.
void ReadsAndWrites(const std::vector<codegen::Program>& programs, const std::string& name,
                    bool* reads, bool* writes) {
  *reads = *writes = false;
  for (const codegen::Program& p : programs) {
    for (const codegen::TensorInfo& t : p.tensors) {
      if (t.name != name) continue;
      *reads = *reads || !t.is_output || p.accumulate;
      *writes = *writes || t.is_output;
    }
  }
}

}  // namespace

absl::Status Plan::CheckProgramOptions(const PlanOptions& o) {
  if (!o.layouts.empty()) {
    return absl::InvalidArgumentError(
        "a plan of a program of several statements takes no layouts: its tensors are in the "
        "plan's shards (Plan::Shard, Scatter, Gather)");
  }
  if (o.result_on_layer) {
    return absl::InvalidArgumentError(std::string(engine::kResultOnLayerTakesOneStatement));
  }
  return absl::OkStatus();
}

absl::Status Plan::BindStatements() {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  const ir::StatementProgram& program = job_->program;
  // Every statement judged, lowered and validated, as a run of the program is.
  absl::StatusOr<engine::PreparedRun> prepared = engine::PrepareRun(*job_);
  if (!prepared.ok()) return prepared.status();
  std::vector<codegen::Program> programs = {std::move(prepared->spec.program)};
  for (runtime::StatementJob& j : prepared->spec.later) programs.push_back(std::move(j.program));
  const int64_t ranks = programs[0].Ranks();
  if (ranks > size) {
    return absl::FailedPreconditionError(absl::StrCat("the schedule's mesh ", mesh_, " has ", ranks,
                                                      " ranks but the communicator has ", size));
  }
  tensors_ = program.Tensors();
  for (const std::string& t : tensors_) {
    shapes_.push_back(program.Shape(t));
    bool reads = true, writes = true;
    ReadsAndWrites(programs, t, &reads, &writes);
    reads_.push_back(reads);
    writes_.push_back(writes);
  }
  element_bytes_ = programs[0].dtype_bytes;
  statement_count_ = static_cast<int>(programs.size());
  MPI_Comm active = comm_;
  if (ranks < size) {  // the first `ranks` ranks run it, the others are idle
    MPI_Comm_split(comm_, rank < ranks ? 0 : MPI_UNDEFINED, rank, &active_comm_);
    active = active_comm_;
  }
  absl::Status bound_ok;
  if (active != MPI_COMM_NULL) {
    const std::vector<int64_t> sizes = programs[0].axis_sizes;
    absl::StatusOr<std::unique_ptr<runtime::BoundStatements>> bound =
        runtime::BoundStatements::Create(
            programs, [active, &sizes](int) { return runtime::NewMpiComm(active, sizes); });
    if (bound.ok()) {
      statements_ = *std::move(bound);
    } else {
      bound_ok = bound.status();
    }
  }
  return FirstFailure(bound_ok, comm_);
}

}  // namespace meshtune
