#include "meshtune/plan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/local_backend.h"
#include "meshtune/chosen_schedule.h"
#include "runtime/box.h"
#include "runtime/executor.h"
#include "runtime/mpi_comm.h"
#include "storage/tuning_db.h"

namespace meshtune {
namespace {

using Choice = internal::ChosenSchedule;

v1::Problem ProblemOf(const std::string& expr, const std::string& extents, const PlanOptions& o) {
  v1::Problem p;
  p.set_expr(expr);
  p.set_extents(extents);
  p.set_dtype(o.dtype);
  return p;
}

// kWisdom: the workload's best record in the wisdom file, with its program when trusted.
absl::StatusOr<Choice> FromWisdom(const v1::Problem& problem, int ranks, const PlanOptions& o) {
  v1::LookupRequest q;
  *q.mutable_problem() = problem;
  q.mutable_mesh()->set_axes(o.mesh);
  if (o.mesh.empty()) q.set_ranks(ranks);
  q.set_profile(o.profile);
  return internal::ChooseFromWisdom(o.wisdom_file, q);
}

// kEstimate: the cost model's best (model-only tune in this process, stored nowhere).
absl::StatusOr<Choice> Estimate(const v1::Problem& problem, int ranks, const PlanOptions& o) {
  engine::LocalBackendOptions options;  // no database
  std::unique_ptr<engine::Backend> backend = engine::NewLocalBackend(std::move(options));
  v1::TuneRequest request;
  *request.mutable_problem() = problem;
  request.mutable_mesh()->set_axes(o.mesh);
  if (o.mesh.empty()) request.set_ranks(ranks);
  request.set_model_only(true);
  request.set_profile(o.profile);
  absl::StatusOr<v1::TuneResult> result = backend->Tune(request, nullptr);
  if (!result.ok()) return result.status();
  Choice c;
  c.trace = result->record().trace().text();
  c.mesh = result->record().mesh();
  return c;
}

// Sends rank 0's `s` to every rank of `comm`.
void BroadcastString(std::string* s, MPI_Comm comm) {
  int64_t n = static_cast<int64_t>(s->size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm);
  s->resize(static_cast<size_t>(n));
  if (n > 0) MPI_Bcast(s->data(), static_cast<int>(n), MPI_CHAR, 0, comm);
}

}  // namespace

Plan::~Plan() = default;

absl::StatusOr<std::unique_ptr<Plan>> Plan::Create(const std::string& expr,
                                                   const std::string& extents, MPI_Comm comm,
                                                   const PlanOptions& options) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const v1::Problem problem = ProblemOf(expr, extents, options);
  // Rank 0 chooses the schedule (or fails); every rank gets the same answer.
  Choice choice;
  int code = 0;
  std::string error;
  if (rank == 0) {
    absl::StatusOr<Choice> c = options.mode == PlanMode::kWisdom
                                   ? FromWisdom(problem, size, options)
                                   : Estimate(problem, size, options);
    if (c.ok()) {
      choice = *std::move(c);
    } else {
      code = static_cast<int>(c.status().code());
      error = std::string(c.status().message());
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  if (code != 0) {
    BroadcastString(&error, comm);
    return absl::Status(static_cast<absl::StatusCode>(code), error);
  }
  internal::BroadcastSchedule(&choice, comm);
  std::vector<std::string> tensors;
  absl::StatusOr<codegen::Program> program = internal::ScheduleProgram(problem, choice, &tensors);
  if (!program.ok()) return program.status();
  if (program->Ranks() != size) {
    return absl::FailedPreconditionError(absl::StrCat("the schedule's mesh ", choice.mesh, " has ",
                                                      program->Ranks(),
                                                      " ranks but the communicator has ", size));
  }
  absl::StatusOr<std::unique_ptr<runtime::BoundProgram>> bound =
      runtime::BoundProgram::Create(*program, runtime::NewMpiComm(comm, program->axis_sizes));
  if (!bound.ok()) return bound.status();
  std::unique_ptr<Plan> plan(new Plan());
  plan->tensors_ = std::move(tensors);
  for (const codegen::TensorInfo& t : program->tensors) plan->shapes_.push_back(t.shape);
  plan->program_from_wisdom_ = !choice.program.empty();
  plan->comm_ = comm;
  plan->element_bytes_ = program->dtype_bytes;
  plan->trace_ = choice.trace;
  plan->mesh_ = choice.mesh;
  plan->program_ = *std::move(bound);
  return plan;
}

absl::StatusOr<ShardLayout> Plan::Shard(const std::string& tensor) const {
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (tensors_[t] != tensor) continue;
    ShardLayout s;
    s.start = program_->ShardStart(t);
    s.extents = program_->ShardExtents(t);
    s.strides = runtime::DenseStrides(s.extents);
    return s;
  }
  return absl::NotFoundError(absl::StrCat("the plan has no tensor ", tensor));
}

absl::Status Plan::Execute(const std::vector<void*>& shards) {
  if (shards.size() != tensors_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Execute takes ", tensors_.size(), " shards (one per tensor), got ", shards.size()));
  }
  return program_->Run(shards);
}

namespace {

// Copies the box `extents` between a dense shard and the whole tensor (`global_strides`),
// where the box starts at `global_offset`; elements of `bytes` bytes (4 or 8).
void CopyBox(int bytes, const std::vector<int64_t>& extents,
             const std::vector<int64_t>& global_strides, int64_t global_offset, const void* from,
             void* to, bool to_global) {
  const std::vector<int64_t> dense = runtime::DenseStrides(extents);
  const std::vector<int64_t>& from_strides = to_global ? dense : global_strides;
  const std::vector<int64_t>& to_strides = to_global ? global_strides : dense;
  const int64_t from_offset = to_global ? 0 : global_offset;
  const int64_t to_offset = to_global ? global_offset : 0;
  if (bytes == 8) {
    runtime::CopyStrided(static_cast<const double*>(from) + from_offset, from_strides,
                         static_cast<double*>(to) + to_offset, to_strides, extents);
  } else {
    runtime::CopyStrided(static_cast<const float*>(from) + from_offset, from_strides,
                         static_cast<float*>(to) + to_offset, to_strides, extents);
  }
}

}  // namespace

absl::Status Plan::Move(const std::string& tensor, int root, bool gather, const void* in,
                        void* out) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  if (root < 0 || root >= size)
    return absl::InvalidArgumentError(absl::StrCat("root ", root, " is not a rank of the plan"));
  absl::StatusOr<ShardLayout> mine = Shard(tensor);
  if (!mine.ok()) return mine.status();
  // Every rank's shard start, for the root.
  const size_t dims = mine->start.size();
  std::vector<int64_t> starts(dims * static_cast<size_t>(size));
  if (dims > 0) {
    MPI_Allgather(mine->start.data(), static_cast<int>(dims), MPI_INT64_T, starts.data(),
                  static_cast<int>(dims), MPI_INT64_T, comm_);
  }
  const size_t t = std::find(tensors_.begin(), tensors_.end(), tensor) - tensors_.begin();
  const std::vector<int64_t> global_strides = runtime::DenseStrides(shapes_[t]);
  const int bytes = static_cast<int>(runtime::Elements(mine->extents) * element_bytes_);
  const int tag = gather ? 72 : 71;
  if (rank != root) {
    if (gather) {
      MPI_Send(in, bytes, MPI_BYTE, root, tag, comm_);
    } else {
      MPI_Recv(out, bytes, MPI_BYTE, root, tag, comm_, MPI_STATUS_IGNORE);
    }
    return absl::OkStatus();
  }
  std::vector<char> packed(static_cast<size_t>(bytes));
  for (int r = 0; r < size; ++r) {
    const std::vector<int64_t> at(starts.begin() + r * dims, starts.begin() + (r + 1) * dims);
    const int64_t offset = runtime::OffsetOf(at, global_strides);
    if (gather) {  // rank r's shard into the whole tensor
      if (r != root) MPI_Recv(packed.data(), bytes, MPI_BYTE, r, tag, comm_, MPI_STATUS_IGNORE);
      CopyBox(element_bytes_, mine->extents, global_strides, offset, r == root ? in : packed.data(),
              out, true);
    } else {  // rank r's block of the whole tensor to its shard
      CopyBox(element_bytes_, mine->extents, global_strides, offset, in,
              r == root ? out : packed.data(), false);
      if (r != root) MPI_Send(packed.data(), bytes, MPI_BYTE, r, tag, comm_);
    }
  }
  return absl::OkStatus();
}

absl::Status Plan::Scatter(const std::string& tensor, const void* global, void* shard, int root) {
  return Move(tensor, root, /*gather=*/false, global, shard);
}

absl::Status Plan::Gather(const std::string& tensor, const void* shard, void* global, int root) {
  return Move(tensor, root, /*gather=*/true, shard, global);
}

}  // namespace meshtune
