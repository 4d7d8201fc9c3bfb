// Plan::ExecuteInLayouts: a plan run on tensors in the application's own layouts, through
// redistributions into the schedule's shards and back (runtime/redistribution.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/job.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "meshtune/plan.h"
#include "runtime/box.h"
#include "runtime/executor.h"
#include "runtime/given_spec.h"
#include "runtime/mpi_comm.h"
#include "runtime/redistribution.h"

namespace meshtune {

namespace {

// Every active rank's shard box of tensor `t` (by rank), gathered over `comm`.
std::vector<runtime::Box> GatherBoxes(const ShardLayout& mine, MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const size_t dims = mine.start.size();
  std::vector<long long> send;
  for (size_t d = 0; d < dims; ++d) send.push_back(mine.start[d]);
  for (size_t d = 0; d < dims; ++d) send.push_back(mine.extents[d]);
  std::vector<long long> all(send.size() * static_cast<size_t>(size));
  MPI_Allgather(send.data(), static_cast<int>(send.size()), MPI_LONG_LONG, all.data(),
                static_cast<int>(send.size()), MPI_LONG_LONG, comm);
  std::vector<runtime::Box> out(static_cast<size_t>(size));
  for (size_t r = 0; r < out.size(); ++r) {
    const long long* b = all.data() + r * 2 * dims;
    out[r].start.assign(b, b + dims);
    out[r].extent.assign(b + dims, b + 2 * dims);
  }
  return out;
}

// Moves along `plan` in the plan's element type.
void MoveAlong(const std::vector<runtime::Piece>& plan, const void* from, void* to,
               int element_bytes, runtime::Comm& comm) {
  if (element_bytes == 8) {
    runtime::Redistribute<double>(plan, static_cast<const double*>(from), static_cast<double*>(to),
                                  comm);
  } else {
    runtime::Redistribute<float>(plan, static_cast<const float*>(from), static_cast<float*>(to),
                                 comm);
  }
}

// The plan's problem and the application's layouts of it ("A" -> "cyclic(2,2)").
struct GivenProblem {
  ir::Problem problem;
  std::map<std::string, ir::GivenLayout> layouts;
};

absl::StatusOr<GivenProblem> ParseGiven(const ir::Problem& problem,
                                        const std::map<std::string, std::string>& layouts) {
  GivenProblem out;
  out.problem = problem;
  std::vector<std::string> flags;
  for (const auto& [tensor, spec] : layouts) flags.push_back(tensor + "=" + spec);
  absl::StatusOr<std::map<std::string, ir::GivenLayout>> given =
      ir::ParseLayoutFlags(flags, out.problem);
  if (!given.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("ExecuteInLayouts: ", given.status().message()));
  }
  out.layouts = *std::move(given);
  return out;
}

// The shards a plan runs on in place of the application's arrays where their layouts
// differ, and the way back for the output.
struct Staging {
  explicit Staging(const std::vector<void*>& data)
      : shards(data), owned(data.size()), output(data.size()) {}
  // Tensor t's shard: `bytes` of the plan's own.
  void Own(size_t t, int64_t bytes) {
    owned[t].assign(static_cast<size_t>(bytes), 0);
    shards[t] = owned[t].data();
  }
  // `run`'s status on the shards; after it, the output moved back into `data`.
  absl::Status Finish(const absl::Status& run, const std::vector<void*>& data, int element_bytes,
                      runtime::Comm& comm) {
    if (!run.ok()) return run;
    if (output < data.size())
      MoveAlong(out_plan, shards[output], data[output], element_bytes, comm);
    return absl::OkStatus();
  }
  std::vector<void*> shards;
  std::vector<std::vector<char>> owned;
  std::vector<runtime::Piece> out_plan;  // the output's shard to the application's layout
  size_t output;                         // its tensor; data.size() when it runs in place
};

}  // namespace

absl::Status Plan::ExecuteInLayouts(const std::map<std::string, std::string>& layouts,
                                    const std::vector<void*>& data) {
  if (data.size() != tensors_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ExecuteInLayouts takes ", tensors_.size(),
                                                   " pointers (one per tensor), got ",
                                                   data.size()));
  }
  if (statement_count_ > 0) {
    return absl::InvalidArgumentError(
        "ExecuteInLayouts takes a plan of one statement; a program's tensors are in its shards "
        "(Execute)");
  }
  if (library_ != nullptr) return ExecuteLibraryInLayouts(layouts, data);
  absl::StatusOr<GivenProblem> parsed = ParseGiven(job_->program.statements[0], layouts);
  if (!parsed.ok()) return parsed.status();
  const ir::Problem* problem = &parsed->problem;
  const std::map<std::string, ir::GivenLayout>* given = &parsed->layouts;
  if (active_comm_ != MPI_COMM_NULL || program_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("ExecuteInLayouts needs a schedule on every rank; the mesh ", mesh_,
                     " leaves ranks of the communicator idle"));
  }
  const ir::Mesh* mesh = &job_->mesh;
  std::vector<int64_t> sizes;
  for (const ir::MeshAxis& a : mesh->axes) sizes.push_back(a.size);
  std::unique_ptr<runtime::Comm> comm = runtime::NewMpiComm(comm_, sizes);
  // Per tensor: the shard the schedule runs on, and the plans into it and back out. A
  // tensor in its shard is as the ProvideStorage contract says; one in a given layout (its
  // redistribution, or the application's storage when that is the shard) holds the extents.
  Staging staging(data);
  std::vector<bool> at_storage(tensors_.size(), provides_storage_);
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const auto it = given->find(tensors_[t]);
    if (it == given->end() || it->second.kind == ir::GivenLayout::Kind::kBlock) continue;
    at_storage[t] = false;
    absl::StatusOr<ShardLayout> mine = Shard(tensors_[t]);
    if (!mine.ok()) return mine.status();
    const std::vector<int64_t> extents = mine->extents;
    if (!mine->holds_result) mine->extents.assign(extents.size(), 0);  // no result to move
    const std::vector<runtime::Box> boxes = GatherBoxes(*mine, comm_);
    const auto box_of = [&](const std::vector<int64_t>& c) {
      return boxes[static_cast<size_t>(comm->RankOf(c))];
    };
    const bool is_output = problem->IsOutput(tensors_[t]);
    absl::StatusOr<runtime::GivenPlans> plans =
        runtime::PlanBoxes(it->second, tensors_[t], shapes_[t], *mesh, box_of, is_output,
                           problem->assign == ir::Problem::Assign::kAccumulate);
    if (!plans.ok()) return plans.status();
    std::vector<int64_t> shard_elements;
    for (const runtime::Box& b : boxes) shard_elements.push_back(runtime::Elements(b.extent));
    // The layout is the schedule's sharding (e.g. grid(y,x) of an in-place form): the
    // application's storage is the shard.
    if (runtime::IsIdentity(*plans, shard_elements)) continue;
    staging.Own(t, runtime::Elements(extents) * element_bytes_);
    if (!plans->in.empty()) MoveAlong(plans->in, data[t], staging.shards[t], element_bytes_, *comm);
    if (is_output) {
      staging.out_plan = std::move(plans->out);
      staging.output = t;
    }
  }
  return staging.Finish(RunStaged(staging.shards, at_storage), data, element_bytes_, *comm);
}

namespace {

// The block-cyclic layout of a library plan with nb x nb blocks.
ir::GivenLayout CyclicLayout(int64_t nb) {
  ir::GivenLayout l;
  l.kind = ir::GivenLayout::Kind::kCyclic;
  l.mb = l.nb = nb;
  return l;
}

}  // namespace

absl::Status Plan::MoveCyclic(size_t t, int root, bool gather, const void* in, void* out) {
  const ir::Mesh mesh = runtime::MeshOf({"x", "y"}, {prow_, pcol_});
  const std::vector<int64_t>& shape = shapes_[t];
  std::unique_ptr<runtime::Distribution> shards =
      runtime::GivenDistribution(CyclicLayout(nb_), shape, mesh);
  // The whole tensor, row-major, on `root` alone.
  const int64_t pcol = pcol_;
  std::unique_ptr<runtime::Distribution> whole =
      runtime::BoxDistribution(shape, mesh, [&](const std::vector<int64_t>& c) {
        return c[0] * pcol + c[1] == root
                   ? runtime::Box{std::vector<int64_t>(shape.size(), 0), shape}
                   : runtime::Box{};
      });
  absl::StatusOr<std::vector<runtime::Piece>> plan =
      gather ? runtime::PlanRedistribution(*shards, *whole)
             : runtime::PlanRedistribution(*whole, *shards);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<runtime::Comm> comm = runtime::NewMpiComm(comm_, {prow_, pcol_});
  MoveAlong(*plan, in, out, element_bytes_, *comm);
  return absl::OkStatus();
}

absl::Status Plan::ExecuteLibraryInLayouts(const std::map<std::string, std::string>& layouts,
                                           const std::vector<void*>& data) {
  absl::StatusOr<GivenProblem> parsed = ParseGiven(job_->program.statements[0], layouts);
  if (!parsed.ok()) return parsed.status();
  const ir::Problem* problem = &parsed->problem;
  const std::map<std::string, ir::GivenLayout>* given = &parsed->layouts;
  const ir::Mesh mesh = runtime::MeshOf({"x", "y"}, {prow_, pcol_});
  std::unique_ptr<runtime::Comm> comm = runtime::NewMpiComm(comm_, {prow_, pcol_});
  const ir::GivenLayout cyclic = CyclicLayout(nb_);
  Staging staging(data);
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const auto it = given->find(tensors_[t]);
    if (it == given->end()) continue;
    const ir::GivenLayout& l = it->second;
    // Block means the plan's own shards; cyclic with the plan's blocks is them too.
    if (l.kind == ir::GivenLayout::Kind::kBlock ||
        (l.kind == ir::GivenLayout::Kind::kCyclic && l.mb == nb_ && l.nb == nb_)) {
      continue;
    }
    std::unique_ptr<runtime::Distribution> theirs = runtime::GivenDistribution(l, shapes_[t], mesh);
    std::unique_ptr<runtime::Distribution> ours =
        runtime::GivenDistribution(cyclic, shapes_[t], mesh);
    staging.Own(t, runtime::Elements(LibraryShard(t).storage) * element_bytes_);
    const bool is_output = problem->IsOutput(tensors_[t]);
    if (!is_output || problem->assign == ir::Problem::Assign::kAccumulate) {
      absl::StatusOr<std::vector<runtime::Piece>> in = runtime::PlanRedistribution(*theirs, *ours);
      if (!in.ok()) return in.status();
      MoveAlong(*in, data[t], staging.shards[t], element_bytes_, *comm);
    }
    if (is_output) {
      absl::StatusOr<std::vector<runtime::Piece>> out = runtime::PlanRedistribution(*ours, *theirs);
      if (!out.ok()) return out.status();
      staging.out_plan = *std::move(out);
      staging.output = t;
    }
  }
  return staging.Finish(Execute(staging.shards), data, element_bytes_, *comm);
}

}  // namespace meshtune
