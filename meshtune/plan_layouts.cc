// Plan::ExecuteInLayouts: a plan run on tensors in the application's own layouts, through
// redistributions into the schedule's shards and back (runtime/redistribution.h).
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
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

}  // namespace

absl::Status Plan::ExecuteInLayouts(const std::map<std::string, std::string>& layouts,
                                    const std::vector<void*>& data) {
  if (data.size() != tensors_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ExecuteInLayouts takes ", tensors_.size(),
                                                   " pointers (one per tensor), got ",
                                                   data.size()));
  }
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(expr_, extents_, dtype_);
  if (!problem.ok()) return problem.status();
  std::vector<std::string> flags;
  for (const auto& [tensor, spec] : layouts) flags.push_back(tensor + "=" + spec);
  absl::StatusOr<std::map<std::string, ir::GivenLayout>> given =
      ir::ParseLayoutFlags(flags, *problem);
  if (!given.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("ExecuteInLayouts: ", given.status().message()));
  }
  if (library_ != nullptr) return ExecuteLibraryInLayouts(layouts, data);
  if (active_comm_ != MPI_COMM_NULL || program_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("ExecuteInLayouts needs a schedule on every rank; the mesh ", mesh_,
                     " leaves ranks of the communicator idle"));
  }
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(mesh_);
  if (!mesh.ok()) return mesh.status();
  std::vector<int64_t> sizes;
  for (const ir::MeshAxis& a : mesh->axes) sizes.push_back(a.size);
  std::unique_ptr<runtime::Comm> comm = runtime::NewMpiComm(comm_, sizes);
  // Per tensor: the shard the schedule runs on, and the plans into it and back out.
  std::vector<void*> shards = data;
  std::vector<std::vector<char>> owned(tensors_.size());
  std::vector<runtime::Piece> out_plan;
  size_t output = tensors_.size();
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const auto it = given->find(tensors_[t]);
    if (it == given->end() || it->second.kind == ir::GivenLayout::Kind::kBlock) continue;
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
    owned[t].assign(static_cast<size_t>(runtime::Elements(extents) * element_bytes_), 0);
    shards[t] = owned[t].data();
    if (!plans->in.empty()) MoveAlong(plans->in, data[t], shards[t], element_bytes_, *comm);
    if (is_output) {
      out_plan = std::move(plans->out);
      output = t;
    }
  }
  if (absl::Status s = program_->Run(shards); !s.ok()) return s;
  if (output < tensors_.size())
    MoveAlong(out_plan, shards[output], data[output], element_bytes_, *comm);
  return absl::OkStatus();
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
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(expr_, extents_, dtype_);
  if (!problem.ok()) return problem.status();
  std::vector<std::string> flags;
  for (const auto& [tensor, spec] : layouts) flags.push_back(tensor + "=" + spec);
  absl::StatusOr<std::map<std::string, ir::GivenLayout>> given =
      ir::ParseLayoutFlags(flags, *problem);
  if (!given.ok()) return given.status();
  const ir::Mesh mesh = runtime::MeshOf({"x", "y"}, {prow_, pcol_});
  std::unique_ptr<runtime::Comm> comm = runtime::NewMpiComm(comm_, {prow_, pcol_});
  const ir::GivenLayout cyclic = CyclicLayout(nb_);
  std::vector<void*> shards = data;
  std::vector<std::vector<char>> owned(tensors_.size());
  std::vector<runtime::Piece> out_plan;
  size_t output = tensors_.size();
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
    owned[t].assign(
        static_cast<size_t>(runtime::Elements(LibraryShard(t).storage) * element_bytes_), 0);
    shards[t] = owned[t].data();
    const bool is_output = problem->IsOutput(tensors_[t]);
    if (!is_output || problem->assign == ir::Problem::Assign::kAccumulate) {
      absl::StatusOr<std::vector<runtime::Piece>> in = runtime::PlanRedistribution(*theirs, *ours);
      if (!in.ok()) return in.status();
      MoveAlong(*in, data[t], shards[t], element_bytes_, *comm);
    }
    if (is_output) {
      absl::StatusOr<std::vector<runtime::Piece>> out = runtime::PlanRedistribution(*ours, *theirs);
      if (!out.ok()) return out.status();
      out_plan = *std::move(out);
      output = t;
    }
  }
  if (absl::Status s = Execute(shards); !s.ok()) return s;
  if (output < tensors_.size())
    MoveAlong(out_plan, shards[output], data[output], element_bytes_, *comm);
  return absl::OkStatus();
}

}  // namespace meshtune
