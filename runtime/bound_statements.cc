#include "runtime/bound_statements.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/box.h"
#include "runtime/given_layouts.h"
#include "runtime/given_spec.h"

namespace meshtune::runtime {

namespace {

using codegen::Program;
using codegen::TensorInfo;

// What must hold before the statements can run together; "" when it does.
std::string CheckPrograms(const std::vector<Program>& programs) {
  if (programs.empty()) return "the program has no statement";
  const Program& first = programs[0];
  for (size_t s = 0; s < programs.size(); ++s) {
    const Program& p = programs[s];
    const std::string name = absl::StrCat("statement ", s + 1);
    if (p.axis_sizes != first.axis_sizes || p.axis_names != first.axis_names)
      return absl::StrCat(name, " runs on another mesh than statement 1");
    if (p.dtype_bytes != first.dtype_bytes)
      return absl::StrCat(name, " has another dtype than statement 1");
  }
  return "";
}

}  // namespace

std::string BoundStatements::Plan() {
  // Homes: the writer's output shard, else the first reader's.
  for (size_t s = 0; s < programs_.size(); ++s) {
    for (size_t t = 0; t < programs_[s].tensors.size(); ++t) {
      const TensorInfo& info = programs_[s].tensors[t];
      const int at = IndexOf(info.name);
      if (at >= 0 && info.is_output) {
        return absl::StrCat(
            "statement ", s + 1, " writes ", info.name, ", which an earlier statement ",
            programs_[homes_[at].statement].tensors[homes_[at].index].is_output ? "writes"
                                                                                : "reads");
      }
      if (at >= 0) continue;
      tensors_.push_back(info.name);
      homes_.push_back(Home{static_cast<int>(s), t});
    }
  }
  // Every operand read away from its home.
  for (size_t c = 0; c < programs_.size(); ++c) {
    const Program& consumer = programs_[c];
    for (size_t to = 0; to < consumer.tensors.size(); ++to) {
      const TensorInfo& t = consumer.tensors[to];
      const size_t tensor = static_cast<size_t>(IndexOf(t.name));
      const Home home = homes_[tensor];
      if (home.statement == static_cast<int>(c)) continue;
      const Program& p = programs_[home.statement];
      const TensorInfo& ft = p.tensors[home.index];
      if (ft.shape != t.shape) {
        return absl::StrCat("statement ", c + 1, " reads ", t.name, " with another shape than ",
                            "statement ", home.statement + 1, (ft.is_output ? " writes" : " reads"),
                            " it");
      }
      Read r{static_cast<int>(c), to, tensor, false, {}, {}};
      r.in_place = codegen::ReadsWhereItLives(p, consumer, t.name);
      if (!r.in_place) {
        const ir::Mesh mesh = MeshOf(p.axis_names, p.axis_sizes);
        auto source = BoxDistribution(t.shape, mesh,
                                      [&p, &ft](const Coords& co) { return ShardBox(p, ft, co); });
        auto target = BoxDistribution(
            t.shape, mesh, [&consumer, &t](const Coords& co) { return ShardBox(consumer, t, co); });
        absl::StatusOr<std::vector<Piece>> plan = PlanRedistribution(*source, *target);
        if (!plan.ok()) {
          return absl::StrCat("moving ", t.name, " from statement ", home.statement + 1,
                              " to statement ", c + 1, ": ", plan.status().message());
        }
        r.plan = *std::move(plan);
      }
      reads_.push_back(std::move(r));
    }
  }
  return "";
}

absl::StatusOr<std::unique_ptr<BoundStatements>> BoundStatements::Create(
    const std::vector<Program>& programs, const CommFor& comm_for) {
  std::unique_ptr<BoundStatements> b(new BoundStatements());
  b->programs_ = programs;
  std::string error = CheckPrograms(programs);
  if (error.empty()) error = b->Plan();
  if (!error.empty()) return absl::InvalidArgumentError(error);
  // Every communicator first: creating one may be collective.
  const int n = static_cast<int>(programs.size());
  std::vector<std::unique_ptr<Comm>> comms;
  for (int s = 0; s < n; ++s) comms.push_back(comm_for(s));
  b->comm_ = comm_for(n);
  // Binding may fail on one rank alone: every rank returns the lowest failing rank's error.
  std::string failed;
  for (int s = 0; s < n && failed.empty(); ++s) {
    absl::StatusOr<std::unique_ptr<BoundProgram>> bound =
        BoundProgram::Create(programs[s], std::move(comms[s]));
    if (bound.ok()) {
      b->bound_.push_back(*std::move(bound));
    } else {
      failed = absl::StrCat("statement ", s + 1, ": ", bound.status().message());
    }
  }
  failed = FirstError(failed, *b->comm_);
  if (absl::StrContains(failed, "cannot allocate")) return absl::ResourceExhaustedError(failed);
  if (!failed.empty()) return absl::InvalidArgumentError(failed);
  const size_t bytes = static_cast<size_t>(programs[0].dtype_bytes);
  for (Read& r : b->reads_) {
    if (r.in_place) continue;
    const TensorInfo& t = programs[r.consumer].tensors[r.to];
    r.scratch.assign(static_cast<size_t>(Elements(t.local_shape)) * bytes, 0);
  }
  return b;
}

int BoundStatements::IndexOf(const std::string& name) const {
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (tensors_[t] == name) return static_cast<int>(t);
  }
  return -1;
}

std::vector<int64_t> BoundStatements::ShardStart(size_t t) const {
  return bound_[homes_[t].statement]->ShardStart(homes_[t].index);
}

const std::vector<int64_t>& BoundStatements::ShardExtents(size_t t) const {
  return bound_[homes_[t].statement]->ShardExtents(homes_[t].index);
}

bool BoundStatements::HoldsResult(size_t t) const {
  return bound_[homes_[t].statement]->HoldsResult(homes_[t].index);
}

int64_t BoundStatements::ElementsSent() const {
  int64_t sent = 0;
  for (const Read& r : reads_) {
    if (!r.in_place) sent += LoadOf(r.plan, comm_->size())[comm_->rank()].sent;
  }
  return sent;
}

absl::Status BoundStatements::Run(const std::vector<void*>& shards) {
  if (shards.size() != tensors_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the program takes ", tensors_.size(), " shards (one per tensor), got ", shards.size()));
  }
  std::vector<void*> bound;
  for (size_t s = 0; s < programs_.size(); ++s) {
    const Program& p = programs_[s];
    bound.assign(p.tensors.size(), nullptr);
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      const Home& home = homes_[IndexOf(p.tensors[t].name)];
      if (home.statement == static_cast<int>(s)) bound[t] = shards[IndexOf(p.tensors[t].name)];
    }
    for (Read& r : reads_) {
      if (r.consumer != static_cast<int>(s)) continue;
      if (r.in_place) {
        bound[r.to] = shards[r.tensor];
        continue;
      }
      bound[r.to] = r.scratch.data();
      if (p.dtype_bytes == 8) {
        Redistribute<double>(r.plan, static_cast<const double*>(shards[r.tensor]),
                             reinterpret_cast<double*>(r.scratch.data()), *comm_);
      } else {
        Redistribute<float>(r.plan, static_cast<const float*>(shards[r.tensor]),
                            reinterpret_cast<float*>(r.scratch.data()), *comm_);
      }
    }
    const absl::Status status = bound_[s]->Run(bound);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("statement ", s + 1, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace meshtune::runtime
