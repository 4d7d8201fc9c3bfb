#include "meshtune/plan.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/explain.h"
#include "engine/local_backend.h"
#include "engine/records.h"
#include "engine/wisdom.h"
#include "runtime/executor.h"
#include "runtime/mpi_comm.h"
#include "storage/tuning_db.h"

namespace meshtune {
namespace {

struct Choice {
  std::string trace, mesh;
};

v1::Problem ProblemOf(const std::string& expr, const std::string& extents, const PlanOptions& o) {
  v1::Problem p;
  p.set_expr(expr);
  p.set_extents(extents);
  p.set_dtype(o.dtype);
  return p;
}

// kWisdom: the workload's best record in the wisdom file.
absl::StatusOr<Choice> FromWisdom(const v1::Problem& problem, int ranks, const PlanOptions& o) {
  if (o.wisdom_file.empty()) return absl::InvalidArgumentError("give a wisdom file");
  std::ifstream in(o.wisdom_file);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read wisdom file ", o.wisdom_file));
  std::stringstream text;
  text << in.rdbuf();
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  absl::StatusOr<engine::ImportReport> imported = engine::ImportWisdom(*db, text.str());
  if (!imported.ok()) {
    return absl::Status(imported.status().code(),
                        absl::StrCat(o.wisdom_file, ": ", imported.status().message()));
  }
  v1::LookupRequest q;
  *q.mutable_problem() = problem;
  q.mutable_mesh()->set_axes(o.mesh);
  if (o.mesh.empty()) q.set_ranks(ranks);
  q.set_profile(o.profile);
  absl::StatusOr<v1::LookupResponse> found = engine::Lookup(*db, q);
  if (!found.ok()) {
    if (found.status().code() != absl::StatusCode::kNotFound) return found.status();
    return absl::NotFoundError(
        absl::StrCat(absl::StripSuffix(found.status().message(), "; tune it first"),
                     " in wisdom file ", o.wisdom_file));
  }
  return Choice{found->record().trace().text(), found->record().mesh()};
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
  return Choice{result->record().trace().text(), result->record().mesh()};
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
  BroadcastString(&choice.trace, comm);
  BroadcastString(&choice.mesh, comm);
  v1::Mesh mesh;
  mesh.set_axes(choice.mesh);
  v1::Trace trace;
  trace.set_text(choice.trace);
  absl::StatusOr<codegen::Program> program = engine::LowerTrace(problem, mesh, trace);
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
  for (const codegen::TensorInfo& t : program->tensors) {
    plan->tensors_.push_back(t.name);
    plan->shapes_.push_back(t.shape);
  }
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
    s.strides.assign(s.extents.size(), 1);
    for (int d = static_cast<int>(s.extents.size()) - 2; d >= 0; --d)
      s.strides[d] = s.strides[d + 1] * s.extents[d + 1];
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

absl::StatusOr<std::vector<int64_t>> Plan::AllStarts(const std::string& tensor, ShardLayout* mine) {
  absl::StatusOr<ShardLayout> l = Shard(tensor);
  if (!l.ok()) return l.status();
  *mine = *l;
  int size = 0;
  MPI_Comm_size(comm_, &size);
  const int dims = static_cast<int>(l->start.size());
  std::vector<int64_t> all(static_cast<size_t>(dims) * size);
  if (dims > 0) {
    MPI_Allgather(l->start.data(), dims, MPI_INT64_T, all.data(), dims, MPI_INT64_T, comm_);
  }
  return all;
}

void Plan::CopyBox(const ShardLayout& layout, const std::vector<int64_t>& start,
                   const std::vector<int64_t>& shape, const char* from, char* to,
                   bool to_global) const {
  int64_t n = 1;
  for (int64_t e : layout.extents) n *= e;
  for (int64_t i = 0; i < n; ++i) {  // shard element i (row-major) and its global offset
    int64_t rest = i, global = 0, scale = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      global += (start[d] + rest % layout.extents[d]) * scale;
      rest /= layout.extents[d];
      scale *= shape[d];
    }
    const int64_t a = to_global ? i : global, b = to_global ? global : i;
    std::memcpy(to + b * element_bytes_, from + a * element_bytes_, element_bytes_);
  }
}

absl::Status Plan::Scatter(const std::string& tensor, const void* global, void* shard, int root) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  if (root < 0 || root >= size)
    return absl::InvalidArgumentError(absl::StrCat("root ", root, " is not a rank of the plan"));
  ShardLayout mine;
  absl::StatusOr<std::vector<int64_t>> starts = AllStarts(tensor, &mine);
  if (!starts.ok()) return starts.status();
  const size_t t = std::find(tensors_.begin(), tensors_.end(), tensor) - tensors_.begin();
  const size_t dims = mine.start.size();
  int64_t n = 1;
  for (int64_t e : mine.extents) n *= e;
  const int bytes = static_cast<int>(n * element_bytes_);
  if (rank == root) {
    std::vector<char> packed(static_cast<size_t>(bytes));
    for (int r = 0; r < size; ++r) {
      const std::vector<int64_t> at(starts->begin() + r * dims, starts->begin() + (r + 1) * dims);
      char* into = r == root ? static_cast<char*>(shard) : packed.data();
      CopyBox(mine, at, shapes_[t], static_cast<const char*>(global), into, false);
      if (r != root) MPI_Send(packed.data(), bytes, MPI_BYTE, r, 71, comm_);
    }
  } else {
    MPI_Recv(shard, bytes, MPI_BYTE, root, 71, comm_, MPI_STATUS_IGNORE);
  }
  return absl::OkStatus();
}

absl::Status Plan::Gather(const std::string& tensor, const void* shard, void* global, int root) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  if (root < 0 || root >= size)
    return absl::InvalidArgumentError(absl::StrCat("root ", root, " is not a rank of the plan"));
  ShardLayout mine;
  absl::StatusOr<std::vector<int64_t>> starts = AllStarts(tensor, &mine);
  if (!starts.ok()) return starts.status();
  const size_t t = std::find(tensors_.begin(), tensors_.end(), tensor) - tensors_.begin();
  const size_t dims = mine.start.size();
  int64_t n = 1;
  for (int64_t e : mine.extents) n *= e;
  const int bytes = static_cast<int>(n * element_bytes_);
  if (rank == root) {
    std::vector<char> packed(static_cast<size_t>(bytes));
    for (int r = 0; r < size; ++r) {
      const std::vector<int64_t> at(starts->begin() + r * dims, starts->begin() + (r + 1) * dims);
      if (r != root) MPI_Recv(packed.data(), bytes, MPI_BYTE, r, 72, comm_, MPI_STATUS_IGNORE);
      const char* from = r == root ? static_cast<const char*>(shard) : packed.data();
      CopyBox(mine, at, shapes_[t], from, static_cast<char*>(global), true);
    }
  } else {
    MPI_Send(shard, bytes, MPI_BYTE, root, 72, comm_);
  }
  return absl::OkStatus();
}

}  // namespace meshtune
