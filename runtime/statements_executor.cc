#include "runtime/statements_executor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/box.h"
#include "runtime/fill.h"
#include "runtime/given_layouts.h"
#include "runtime/given_spec.h"
#include "runtime/program_values.h"
#include "runtime/redistribution.h"

namespace meshtune::runtime {

namespace {

using codegen::Program;
using codegen::TensorInfo;

// Where statement `consumer`'s shard of an operand comes from: the output of `producer`,
// read in place or moved by `plan`.
struct Edge {
  int producer = 0, consumer = 0;
  size_t from = 0, to = 0;  // the tensor's index in the producer's and consumer's Programs
  bool in_place = false;
  std::vector<Piece> plan;
};

// Every coordinate of a mesh of `sizes`, row-major.
std::vector<Coords> AllCoords(const std::vector<int64_t>& sizes) {
  std::vector<Coords> all;
  ForEachPoint(sizes.empty() ? std::vector<int64_t>{1} : sizes,
               [&](const std::vector<int64_t>& c) { all.push_back(sizes.empty() ? Coords{} : c); });
  return all;
}

int IndexOf(const Program& p, const std::string& tensor) {
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    if (p.tensors[t].name == tensor) return static_cast<int>(t);
  }
  return -1;
}

// What must hold before the statements can run together; "" when it does.
std::string CheckStatements(const std::vector<StatementJob>& statements) {
  if (statements.empty()) return "the program has no statement";
  const Program& first = statements[0].program;
  for (size_t s = 0; s < statements.size(); ++s) {
    const Program& p = statements[s].program;
    const std::string name = absl::StrCat("statement ", s + 1);
    if (p.axis_sizes != first.axis_sizes || p.axis_names != first.axis_names)
      return absl::StrCat(name, " runs on another mesh than statement 1");
    if (p.dtype_bytes != first.dtype_bytes)
      return absl::StrCat(name, " has another dtype than statement 1");
    for (const TensorInfo& t : p.tensors) {
      if (t.given.kind != ir::GivenLayout::Kind::kBlock)
        return absl::StrCat(name, ": tensor ", t.name, " has a given layout (", t.given.ToString(),
                            "); a program's tensors are block");
    }
  }
  return "";
}

// The moves of every intermediate: for each operand of a statement that an earlier one
// wrote, an Edge from the last writer. "" or what is wrong.
std::string PlanEdges(const std::vector<StatementJob>& statements, std::vector<Edge>* edges) {
  for (size_t c = 0; c < statements.size(); ++c) {
    const Program& consumer = statements[c].program;
    for (size_t to = 0; to < consumer.tensors.size(); ++to) {
      const TensorInfo& t = consumer.tensors[to];
      if (t.is_output) continue;
      int producer = -1;
      for (int s = static_cast<int>(c) - 1; s >= 0 && producer < 0; --s) {
        if (statements[s].problem.output.tensor == t.name) producer = s;
      }
      if (producer < 0) continue;
      const Program& p = statements[producer].program;
      const int from = IndexOf(p, t.name);
      if (from < 0 || p.tensors[from].shape != t.shape) {
        return absl::StrCat("statement ", c + 1, " reads ", t.name,
                            " with another shape than statement ", producer + 1, " writes it");
      }
      Edge e{producer, static_cast<int>(c), static_cast<size_t>(from), to, false, {}};
      e.in_place = ReadInPlace(p, consumer, t.name);
      if (!e.in_place) {
        const ir::Mesh mesh = MeshOf(p.axis_names, p.axis_sizes);
        const TensorInfo& ft = p.tensors[from];
        auto source = BoxDistribution(t.shape, mesh,
                                      [&p, &ft](const Coords& co) { return ShardBox(p, ft, co); });
        auto target = BoxDistribution(
            t.shape, mesh, [&consumer, &t](const Coords& co) { return ShardBox(consumer, t, co); });
        absl::StatusOr<std::vector<Piece>> plan = PlanRedistribution(*source, *target);
        if (!plan.ok()) {
          return absl::StrCat("moving ", t.name, " from statement ", producer + 1, " to statement ",
                              c + 1, ": ", plan.status().message());
        }
        e.plan = *std::move(plan);
      }
      edges->push_back(std::move(e));
    }
  }
  return "";
}

template <typename T>
class StatementsRun {
 public:
  StatementsRun(const std::vector<StatementJob>& statements, const ExecOptions& options,
                std::unique_ptr<Comm> comm)
      : statements_(statements), options_(options), comm_(std::move(comm)) {}

  RunStats Run(const CommFor& comm_for) {
    RunStats m;
    m.statements = static_cast<int>(statements_.size());
    std::string error = CheckStatements(statements_);
    if (error.empty()) error = PlanEdges(statements_, &edges_);
    if (!error.empty()) {  // a pure function of the statements: the same on every rank
      m.error = error;
      return m;
    }
    for (size_t s = 0; s < statements_.size() && error.empty(); ++s) {
      absl::StatusOr<std::unique_ptr<BoundProgram>> b =
          BoundProgram::Create(statements_[s].program, comm_for(static_cast<int>(s)));
      if (!b.ok()) {
        error = absl::StrCat("statement ", s + 1, ": ", b.status().message());
      } else {
        bound_.push_back(*std::move(b));
      }
    }
    m.error = FirstError(error, *comm_);
    if (!m.error.empty()) return m;
    Allocate();
    Time(&m);
    if (!m.error.empty()) return m;
    Finish(&m);
    return m;
  }

 private:
  // Storage for every statement's shards; an operand read in place points at its producer's.
  void Allocate() {
    const size_t n = statements_.size();
    storage_.resize(n);
    shards_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      const Program& p = statements_[s].program;
      storage_[s].resize(p.tensors.size());
      shards_[s].assign(p.tensors.size(), nullptr);
      for (size_t t = 0; t < p.tensors.size(); ++t) {
        storage_[s][t].assign(static_cast<size_t>(Elements(p.tensors[t].local_shape)), T(0));
        shards_[s][t] = storage_[s][t].data();
      }
    }
    for (const Edge& e : edges_) {
      if (e.in_place) shards_[e.consumer][e.to] = shards_[e.producer][e.from];
    }
    for (size_t s = 0; s < n; ++s) {
      const Program& p = statements_[s].program;
      for (size_t t = 0; t < p.tensors.size(); ++t) {
        if (IsProgramInput(s, t) || (p.tensors[t].is_output && p.accumulate)) Fill(s, t);
      }
    }
  }

  // Whether tensor `t` of statement `s` is read from the fill (no earlier statement wrote it).
  bool IsProgramInput(size_t s, size_t t) const {
    if (statements_[s].program.tensors[t].is_output) return false;
    for (const Edge& e : edges_) {
      if (e.consumer == static_cast<int>(s) && e.to == t) return false;
    }
    return true;
  }

  void Fill(size_t s, size_t t) {
    const TensorInfo& info = statements_[s].program.tensors[t];
    const std::vector<int64_t> start = bound_[s]->ShardStart(t);
    T* data = static_cast<T*>(shards_[s][t]);
    const int64_t slots = Elements(info.local_shape);
    for (int64_t i = 0; i < slots; ++i) {
      const int64_t g = SlotGlobal(i, info.local_shape, start, info.shape);
      data[i] = g < 0 ? T(0) : static_cast<T>(ElementValue(options_.seed, info.name, g));
    }
  }

  // Warm-up and timed repetitions of the whole program.
  void Time(RunStats* m) {
    const int64_t ranks = comm_->size();
    int64_t sent = 0;
    for (const Edge& e : edges_) {
      if (!e.in_place) sent += LoadOf(e.plan, ranks)[comm_->rank()].sent;
    }
    for (int i = 0; i < options_.warmup + options_.reps; ++i) {
      for (size_t s = 0; s < statements_.size(); ++s) {
        const Program& p = statements_[s].program;
        for (size_t t = 0; t < p.tensors.size() && p.accumulate; ++t) {
          if (p.tensors[t].is_output) Fill(s, t);
        }
      }
      if (options_.between_reps) options_.between_reps();
      comm_->Barrier();
      const double t0 = comm_->Now();
      std::string error;
      for (size_t s = 0; s < statements_.size() && error.empty(); ++s) {
        for (const Edge& e : edges_) {
          if (e.consumer != static_cast<int>(s) || e.in_place) continue;
          Redistribute<T>(e.plan, static_cast<const T*>(shards_[e.producer][e.from]),
                          static_cast<T*>(shards_[s][e.to]), *comm_);
        }
        const absl::Status status = bound_[s]->Run(shards_[s]);
        if (!status.ok()) error = absl::StrCat("statement ", s + 1, ": ", status.message());
      }
      if (!error.empty()) {
        m->error = error;  // the same on every rank: Run fails only on what every rank shares
        return;
      }
      double worst = comm_->Now() - t0;
      comm_->Allreduce(&worst, 1, DataType::kDouble, ReduceOp::kMax, comm_->AllAxes());
      if (i >= options_.warmup) m->seconds.push_back(worst);
    }
    long long most = sent * statements_[0].program.dtype_bytes;
    comm_->Allreduce(&most, 1, DataType::kLongLong, ReduceOp::kMax, comm_->AllAxes());
    m->bytes_sent_max = most;
  }

  // What statement `s`'s output shard holds on this rank, for the checks.
  HeldOutput Held(size_t s, size_t t) const {
    const TensorInfo& info = statements_[s].program.tensors[t];
    const T* data = static_cast<const T*>(shards_[s][t]);
    HeldOutput held;
    held.value = [data](int64_t i) { return static_cast<double>(data[i]); };
    if (!bound_[s]->HoldsResult(t)) {
      held.global = [](int64_t) { return int64_t{-1}; };
      return held;
    }
    const std::vector<int64_t> start = bound_[s]->ShardStart(t);
    held.slots = Elements(info.local_shape);
    held.global = [&info, start](int64_t i) {
      return SlotGlobal(i, info.local_shape, start, info.shape);
    };
    return held;
  }

  // The fault a test injects, the checksum and the checks of every statement's output.
  void Finish(RunStats* m) {
    const size_t last = statements_.size() - 1;
    const size_t out = static_cast<size_t>(
        IndexOf(statements_[last].program, statements_[last].problem.output.tensor));
    const HeldOutput final_held = Held(last, out);
    if (options_.inject_fault == "wrong" && comm_->rank() == 0) {
      for (int64_t i = final_held.slots / 2; i < final_held.slots; ++i) {
        if (final_held.global(i) < 0) continue;
        static_cast<T*>(shards_[last][out])[i] += T(1);
        break;
      }
    }
    m->checksum = 0;
    for (int64_t i = 0; i < final_held.slots; ++i) {
      if (final_held.global(i) >= 0) m->checksum += final_held.value(i);
    }
    comm_->Allreduce(&m->checksum, 1, DataType::kDouble, ReduceOp::kSum, comm_->AllAxes());
    std::vector<ProblemSpec> specs;
    for (const StatementJob& j : statements_) specs.push_back(j.problem);
    ProgramValues values(specs, options_.seed);
    const double base = statements_[0].program.dtype_bytes == 4 ? 2e-4 : 1e-10;
    const std::string rank =
        RankName(statements_[0].program.axis_names, comm_->CoordsOf(comm_->rank()));
    for (size_t s = 0; s < statements_.size() && m->error.empty(); ++s) {
      const Program& p = statements_[s].program;
      const size_t t = static_cast<size_t>(IndexOf(p, statements_[s].problem.output.tensor));
      const HeldOutput held = Held(s, t);
      // Results computed from results: the rounding of each statement before adds up.
      const double tolerance = base * static_cast<double>(1 + Depth(s));
      const int64_t cost = values.ElementCost(static_cast<int>(s));
      const int64_t limit = Depth(s) > 0 ? 100'000'000 : 4'000'000;
      std::string error =
          CheckHeldValues(statements_[s].problem, options_.seed, held, tolerance, rank,
                          values.OperandsOf(static_cast<int>(s)), limit, cost);
      error = FirstError(error, *comm_);
      if (error.empty()) error = CheckCoverage(statements_[s].problem, held, tolerance, *comm_);
      if (!error.empty()) m->error = absl::StrCat("statement ", s + 1, ": ", error);
    }
    m->verified = m->error.empty();
  }

  // How many statements' results statement `s`'s result is computed from, at most (0: none).
  int Depth(size_t s) const {
    int depth = 0;
    for (const Edge& e : edges_) {
      if (e.consumer == static_cast<int>(s)) depth = std::max(depth, 1 + Depth(e.producer));
    }
    return depth;
  }

  const std::vector<StatementJob>& statements_;
  const ExecOptions& options_;
  std::unique_ptr<Comm> comm_;
  std::vector<Edge> edges_;
  std::vector<std::unique_ptr<BoundProgram>> bound_;
  std::vector<std::vector<std::vector<T>>> storage_;  // per statement, per tensor
  std::vector<std::vector<void*>> shards_;            // what each statement's Run binds
};

}  // namespace

bool ReadInPlace(const Program& producer, const Program& consumer, const std::string& tensor) {
  const int from = IndexOf(producer, tensor), to = IndexOf(consumer, tensor);
  if (from < 0 || to < 0) return false;
  const TensorInfo& f = producer.tensors[from];
  const TensorInfo& t = consumer.tensors[to];
  if (f.shape != t.shape || f.local_shape != t.local_shape) return false;
  for (const Coords& c : AllCoords(consumer.axis_sizes)) {
    if (!codegen::OnLayer(producer, f, c)) return false;
    if (codegen::ShardStartAt(producer, f, c) != codegen::ShardStartAt(consumer, t, c))
      return false;
  }
  return true;
}

RunStats ExecuteStatements(const std::vector<StatementJob>& statements, const CommFor& comm_for,
                           const ExecOptions& options) {
  const int n = static_cast<int>(statements.size());
  std::unique_ptr<Comm> comm = comm_for(n);
  if (!statements.empty() && statements[0].program.dtype_bytes == 8) {
    return StatementsRun<double>(statements, options, std::move(comm)).Run(comm_for);
  }
  return StatementsRun<float>(statements, options, std::move(comm)).Run(comm_for);
}

}  // namespace meshtune::runtime
