#include "meshtune/plan.h"

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/job.h"
#include "engine/local_backend.h"
#include "ir/mesh.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "meshtune/broadcast.h"
#include "meshtune/calibrate_on_comm.h"
#include "meshtune/chosen_schedule.h"
#include "meshtune/comm_runner.h"
#include "meshtune/measure.h"
#include "meshtune/shard_staging.h"
#include "runtime/bound_statements.h"
#include "runtime/box.h"
#include "runtime/executor.h"
#include "runtime/library/library_run.h"
#include "runtime/mpi_comm.h"
#include "storage/tuning_db.h"

namespace meshtune {
namespace {

using Choice = internal::ChosenSchedule;

// The schedule of `r` (in the caller's names), to be lowered on every rank, or its library call.
Choice ChoiceOf(const v1::Record& r) {
  Choice c;
  c.trace = r.trace().text();
  c.mesh = r.mesh();
  c.measured_s = r.has_measured_s() ? r.measured_s() : -1;
  if (r.has_library()) c.library = r.library().SerializeAsString();  // the answer is the library
  return c;
}

v1::Problem ProblemOf(const std::string& expr, const std::string& extents, const PlanOptions& o) {
  v1::Problem p;
  p.set_expr(expr);
  p.set_extents(extents);
  p.set_dtype(o.dtype);
  for (const auto& [tensor, spec] : o.layouts) (*p.mutable_layouts())[tensor] = spec;
  p.set_result_on_layer(o.result_on_layer);
  return p;
}

// The plan's values (Plan::job_): the program as stated, the chosen schedule's mesh and, for
// a program of several statements, their traces (one statement's schedule is bound as its
// Program, ScheduleProgram; the library's grid is set when it is bound). The parsers'
// errors.
absl::StatusOr<std::unique_ptr<engine::ScheduleJob>> JobOfChoice(ir::StatementProgram stated,
                                                                 const Choice& choice) {
  auto job = std::make_unique<engine::ScheduleJob>();
  job->program = std::move(stated);
  if (!choice.library.empty()) return job;
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(choice.mesh);
  if (!mesh.ok()) return mesh.status();
  job->mesh = *std::move(mesh);
  if (job->program.single()) return job;
  absl::StatusOr<std::vector<ir::Trace>> traces =
      ir::ParseProgramTrace(choice.trace, static_cast<int>(job->program.statements.size()));
  if (!traces.ok()) return traces.status();
  job->traces = *std::move(traces);
  return job;
}

// Sets `s`'s extents, the elements it holds: its storage clipped at the tensor's `shape` (a
// short last block, or none past the end).
void ClipToShape(const std::vector<int64_t>& shape, ShardLayout* s) {
  for (size_t d = 0; d < s->storage.size(); ++d) {
    s->extents.push_back(std::max<int64_t>(0, std::min(s->storage[d], shape[d] - s->start[d])));
  }
  if (runtime::Elements(s->extents) == 0) s->extents.assign(s->extents.size(), 0);
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

// The tune of `problem` that `o` asks for: on o.mesh, or over the meshes of `ranks` ranks.
v1::TuneRequest TuneRequestOf(const v1::Problem& problem, int ranks, const PlanOptions& o) {
  v1::TuneRequest request;
  *request.mutable_problem() = problem;
  request.mutable_mesh()->set_axes(o.mesh);
  if (o.mesh.empty()) request.set_ranks(ranks);
  request.set_profile(o.profile);
  request.set_allow_idle_ranks(o.allow_idle_ranks && o.mesh.empty());
  // Calibrating means an mpirun job: never from inside the application (Create measures on
  // its communicator instead, CalibrateOnFirstUse).
  request.set_no_calibrate(true);
  return request;
}

// The repetitions each candidate runs in measure mode (o.reps after o.warmup), the same on
// every rank.
runtime::ExecOptions MeasureExecOptions(const PlanOptions& o) {
  runtime::ExecOptions exec;
  exec.reps = o.reps;
  exec.warmup = o.warmup;
  return exec;
}

// kEstimate: the cost model's best (model-only tune in this process, stored nowhere).
absl::StatusOr<Choice> Estimate(const v1::Problem& problem, int ranks, const PlanOptions& o) {
  engine::LocalBackendOptions options;  // no database
  std::unique_ptr<engine::Backend> backend = engine::NewLocalBackend(std::move(options));
  v1::TuneRequest request = TuneRequestOf(problem, ranks, o);
  request.set_model_only(true);
  absl::StatusOr<v1::TuneResult> result = backend->Tune(request, nullptr);
  if (!result.ok()) return result.status();
  return ChoiceOf(result->record());
}

// Rank 0's choice of schedule for `problem` in `o.mode` (kMeasure: the other ranks are in
// ServeCandidates meanwhile).
absl::StatusOr<Choice> Choose(const v1::Problem& problem, int ranks, const PlanOptions& o,
                              MPI_Comm comm) {
  switch (o.mode) {
    case PlanMode::kWisdom:
      return FromWisdom(problem, ranks, o);
    case PlanMode::kEstimate:
      return Estimate(problem, ranks, o);
    case PlanMode::kMeasure: {
      v1::TuneRequest request = TuneRequestOf(problem, ranks, o);
      request.set_top_k(o.top_k);
      absl::StatusOr<v1::Record> r =
          MeasureOnComm(request, MeasureExecOptions(o), o.wisdom_file, comm, o.allow_library);
      if (!r.ok()) return r.status();
      return ChoiceOf(*r);
    }
  }
  return absl::InvalidArgumentError("unknown plan mode");
}

// OK when `o` can be used at all (checked on every rank before anything collective).
absl::Status CheckOptions(const PlanOptions& o) {
  if (o.mode != PlanMode::kWisdom && o.mode != PlanMode::kEstimate &&
      o.mode != PlanMode::kMeasure) {
    return absl::InvalidArgumentError("unknown plan mode");
  }
  if (o.mode == PlanMode::kMeasure && (o.top_k < 1 || o.reps < 1 || o.warmup < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("measure mode needs top_k >= 1, reps >= 1 and warmup >= 0; got top_k ",
                     o.top_k, ", reps ", o.reps, ", warmup ", o.warmup));
  }
  return absl::OkStatus();
}

// Per tensor of `program`: its shape, whether the schedule reads its values (an input, a
// `+=` output) and whether it writes it.
void TensorFacts(const codegen::Program& program, std::vector<std::vector<int64_t>>* shapes,
                 std::vector<bool>* reads, std::vector<bool>* writes) {
  for (const codegen::TensorInfo& t : program.tensors) {
    shapes->push_back(t.shape);
    reads->push_back(!t.is_output || program.accumulate);
    writes->push_back(t.is_output);
  }
}

}  // namespace

Plan::~Plan() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (active_comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&active_comm_);
}

absl::StatusOr<std::unique_ptr<Plan>> Plan::Create(const std::string& expr,
                                                   const std::string& extents, MPI_Comm comm,
                                                   const PlanOptions& options) {
  if (absl::Status ok = CheckOptions(options); !ok.ok()) return ok;
  const absl::StatusOr<ir::StatementProgram> parsed =
      ir::ParseStatementProgram(expr, extents, options.dtype);
  const bool several = parsed.ok() && !parsed->single();
  if (several) {
    if (absl::Status ok = CheckProgramOptions(options); !ok.ok()) return ok;
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // A given mesh larger than the communicator fails at once, on every rank alike (a bad
  // mesh text fails below, with the parser's message).
  if (absl::StatusOr<ir::Mesh> m = ir::ParseMesh(options.mesh);
      !options.mesh.empty() && m.ok() && m->Ranks() > size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the mesh ", options.mesh, " has ", m->Ranks(), " ranks but the communicator has ", size));
  }
  const v1::Problem problem = ProblemOf(expr, extents, options);
  const std::string dtype = options.dtype.empty() ? "f32" : options.dtype;
  if (options.mode != PlanMode::kWisdom && options.profile.empty() && options.calibrate) {
    const std::string note = internal::CalibrateOnFirstUse(comm);
    if (!note.empty()) std::cerr << "meshtune: " << note << std::endl;
  }
  // Rank 0 chooses the schedule (or fails); every rank gets the same answer.
  Choice choice;
  absl::Status chosen;
  if (rank == 0) {
    absl::StatusOr<Choice> c = Choose(problem, size, options, comm);
    if (c.ok()) {
      choice = *std::move(c);
    } else {
      chosen = c.status();
    }
  } else if (options.mode == PlanMode::kMeasure) {
    ServeCandidates(comm);
  }
  if (absl::Status s = BroadcastStatus(chosen, comm); !s.ok()) return s;
  internal::BroadcastSchedule(&choice, comm);
  if (!parsed.ok()) return parsed.status();  // the same on every rank (Choose refused it too)
  absl::StatusOr<std::unique_ptr<engine::ScheduleJob>> job = JobOfChoice(*parsed, choice);
  if (!job.ok()) return job.status();
  if (!choice.library.empty() || several) {
    std::unique_ptr<Plan> plan(new Plan());
    plan->comm_ = comm;
    plan->dtype_ = dtype;
    plan->job_ = *std::move(job);
    plan->measured_s_ = choice.measured_s;
    // A program of statements (a trace each), or the record's answer is ScaLAPACK's GEMM
    // (its trace, the fastest schedule's, kept for reference only, is not the plan's).
    if (choice.library.empty()) {
      plan->trace_ = choice.trace;
      plan->mesh_ = choice.mesh;
    }
    const absl::Status bound =
        choice.library.empty() ? plan->BindStatements() : plan->BindLibrary(choice.library);
    if (!bound.ok()) return bound;
    if (absl::Status staged = plan->StageShards(); !staged.ok()) return staged;
    return plan;
  }
  std::vector<std::string> tensors;
  absl::StatusOr<codegen::Program> program = internal::ScheduleProgram(problem, choice, &tensors);
  if (!program.ok()) return program.status();
  const int64_t ranks = program->Ranks();
  if (ranks > size) {
    return absl::FailedPreconditionError(absl::StrCat("the schedule's mesh ", choice.mesh, " has ",
                                                      ranks, " ranks but the communicator has ",
                                                      size));
  }
  std::unique_ptr<Plan> plan(new Plan());
  plan->tensors_ = std::move(tensors);
  TensorFacts(*program, &plan->shapes_, &plan->reads_, &plan->writes_);
  plan->program_from_wisdom_ = !choice.program.empty();
  plan->comm_ = comm;
  plan->element_bytes_ = program->dtype_bytes;
  plan->trace_ = choice.trace;
  plan->mesh_ = choice.mesh;
  plan->dtype_ = dtype;
  plan->job_ = *std::move(job);
  plan->measured_s_ = choice.measured_s;
  MPI_Comm active = comm;
  if (ranks < size) {  // the first `ranks` ranks run it, the others are idle
    MPI_Comm_split(comm, rank < ranks ? 0 : MPI_UNDEFINED, rank, &plan->active_comm_);
    active = plan->active_comm_;
  }
  absl::Status bound_ok;
  if (active != MPI_COMM_NULL) {
    absl::StatusOr<std::unique_ptr<runtime::BoundProgram>> bound =
        runtime::BoundProgram::Create(*program, runtime::NewMpiComm(active, program->axis_sizes));
    if (bound.ok()) {
      plan->program_ = *std::move(bound);
    } else {
      bound_ok = bound.status();
    }
  }
  // Every rank gets the plan or an error: the lowest rank that could not bind says why.
  if (absl::Status agreed = FirstFailure(bound_ok, comm); !agreed.ok()) return agreed;
  if (absl::Status staged = plan->StageShards(); !staged.ok()) return staged;
  return plan;
}

absl::StatusOr<ShardLayout> Plan::Shard(const std::string& tensor) const {
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (tensors_[t] != tensor) continue;
    ShardLayout s = StoredShard(t);
    // By default the application's array is dense at the extents (a library plan's
    // column-major strides are its extents' already).
    if (!provides_storage_ && library_ == nullptr) s.strides = runtime::DenseStrides(s.extents);
    return s;
  }
  return absl::NotFoundError(absl::StrCat("the plan has no tensor ", tensor));
}

ShardLayout Plan::StoredShard(size_t t) const {
  if (library_ != nullptr) return LibraryShard(t);
  ShardLayout s;
  if (statements_ != nullptr) {
    const size_t b = static_cast<size_t>(statements_->IndexOf(tensors_[t]));
    s.start = statements_->ShardStart(b);
    s.storage = statements_->ShardExtents(b);
    s.holds_result = statements_->HoldsResult(b);
    ClipToShape(shapes_[t], &s);
  } else if (program_ == nullptr) {  // idle: an empty shard
    s.start.assign(shapes_[t].size(), 0);
    s.extents.assign(shapes_[t].size(), 0);
    s.storage = s.extents;
  } else {
    s.start = program_->ShardStart(t);
    s.storage = program_->ShardExtents(t);
    s.holds_result = program_->HoldsResult(t);
    ClipToShape(shapes_[t], &s);
  }
  s.strides = runtime::DenseStrides(s.storage);
  return s;
}

absl::StatusOr<std::vector<int64_t>> Plan::Shape(const std::string& tensor) const {
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (tensors_[t] == tensor) return shapes_[t];
  }
  return absl::NotFoundError(absl::StrCat("the plan has no tensor ", tensor));
}

absl::Status Plan::Execute(const std::vector<void*>& shards) {
  if (shards.size() != tensors_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Execute takes ", tensors_.size(), " shards (one per tensor), got ", shards.size()));
  }
  if (!active()) return absl::OkStatus();  // an idle rank
  return RunStaged(shards, std::vector<bool>(shards.size(), provides_storage_));
}

namespace {

// Copies the box `extents` between a shard (`shard_strides`) and the whole tensor
// (`global_strides`), where the box starts at `global_offset`; elements of `bytes` bytes
// (4 or 8).
void CopyBox(int bytes, const std::vector<int64_t>& extents,
             const std::vector<int64_t>& shard_strides, const std::vector<int64_t>& global_strides,
             int64_t global_offset, const void* from, void* to, bool to_global) {
  const std::vector<int64_t>& from_strides = to_global ? shard_strides : global_strides;
  const std::vector<int64_t>& to_strides = to_global ? global_strides : shard_strides;
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

// Copies the box `extents` between a shard (`strides`) and a dense array of it.
void CopyDense(int bytes, const std::vector<int64_t>& extents, const std::vector<int64_t>& strides,
               const void* from, void* to, bool to_dense) {
  CopyBox(bytes, extents, strides, runtime::DenseStrides(extents), 0, from, to, to_dense);
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
  if (library_ != nullptr) {
    return MoveCyclic(std::find(tensors_.begin(), tensors_.end(), tensor) - tensors_.begin(), root,
                      gather, in, out);
  }
  // Every rank's shard (start, then extents), for the root; idle ranks hold nothing, nor
  // (to gather) the output's ranks off its layer.
  const size_t dims = mine->start.size();
  if (gather && !mine->holds_result) mine->extents.assign(dims, 0);
  std::vector<int64_t> box = mine->start;
  box.insert(box.end(), mine->extents.begin(), mine->extents.end());
  std::vector<int64_t> boxes(2 * dims * static_cast<size_t>(size));
  if (dims > 0) {
    MPI_Allgather(box.data(), static_cast<int>(2 * dims), MPI_INT64_T, boxes.data(),
                  static_cast<int>(2 * dims), MPI_INT64_T, comm_);
  }
  const size_t t = std::find(tensors_.begin(), tensors_.end(), tensor) - tensors_.begin();
  const std::vector<int64_t> global_strides = runtime::DenseStrides(shapes_[t]);
  const int tag = gather ? 72 : 71;
  if (rank != root) {
    // On the wire the shard's elements are dense; in the shard at its storage's strides.
    const int bytes = static_cast<int>(runtime::Elements(mine->extents) * element_bytes_);
    if (bytes == 0) return absl::OkStatus();
    std::vector<char> dense(static_cast<size_t>(bytes));
    if (gather) {
      CopyDense(element_bytes_, mine->extents, mine->strides, in, dense.data(), true);
      MPI_Send(dense.data(), bytes, MPI_BYTE, root, tag, comm_);
    } else {
      MPI_Recv(dense.data(), bytes, MPI_BYTE, root, tag, comm_, MPI_STATUS_IGNORE);
      CopyDense(element_bytes_, mine->extents, mine->strides, dense.data(), out, false);
    }
    return absl::OkStatus();
  }
  std::vector<char> packed;
  for (int r = 0; r < size; ++r) {
    const auto at = boxes.begin() + 2 * dims * r;
    const std::vector<int64_t> start(at, at + dims), extents(at + dims, at + 2 * dims);
    const int bytes = static_cast<int>(runtime::Elements(extents) * element_bytes_);
    if (bytes == 0) continue;
    packed.resize(static_cast<size_t>(bytes));
    const int64_t offset = runtime::OffsetOf(start, global_strides);
    // The root's own shard at its storage's strides, the others' dense (as sent).
    const std::vector<int64_t> strides = r == root ? mine->strides : runtime::DenseStrides(extents);
    if (gather) {  // rank r's shard into the whole tensor
      if (r != root) MPI_Recv(packed.data(), bytes, MPI_BYTE, r, tag, comm_, MPI_STATUS_IGNORE);
      CopyBox(element_bytes_, extents, strides, global_strides, offset,
              r == root ? in : packed.data(), out, true);
    } else {  // rank r's block of the whole tensor to its shard
      CopyBox(element_bytes_, extents, strides, global_strides, offset, in,
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
