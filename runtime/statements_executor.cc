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

template <typename T>
class StatementsRun {
 public:
  StatementsRun(const std::vector<StatementJob>& statements, const ExecOptions& options)
      : statements_(statements), options_(options) {}

  RunStats Run(const CommFor& comm_for) {
    RunStats m;
    m.statements = static_cast<int>(statements_.size());
    std::vector<Program> programs;
    for (const StatementJob& j : statements_) programs.push_back(j.program);
    absl::StatusOr<std::unique_ptr<BoundStatements>> bound =
        BoundStatements::Create(programs, comm_for);
    if (!bound.ok()) {  // the same error on every rank
      m.error = std::string(bound.status().message());
      return m;
    }
    bound_ = *std::move(bound);
    Allocate();
    if (std::string error = SetUpGiven(); !error.empty()) {  // the same on every rank
      m.error = error;
      return m;
    }
    Time(&m);
    if (!m.error.empty()) return m;
    Finish(&m);
    return m;
  }

 private:
  // A tensor the application holds in a given layout: its storage there, each slot's global
  // index (-1 where nothing lies), the moves into its home and back, and whether its values
  // are the fill's (an input, a `+=` output).
  struct GivenTensor {
    size_t t = 0;
    std::vector<T> storage;
    std::vector<int64_t> global;
    std::vector<Piece> in, out;
    bool filled = false;
  };

  const TensorInfo& Info(size_t t) const { return bound_->info(t); }

  // Storage for every tensor's home shard; the program's inputs and `+=` outputs filled.
  void Allocate() {
    const size_t n = bound_->tensors().size();
    storage_.resize(n);
    shards_.assign(n, nullptr);
    for (size_t t = 0; t < n; ++t) {
      storage_[t].assign(static_cast<size_t>(Elements(bound_->ShardExtents(t))), T(0));
      shards_[t] = storage_[t].data();
      const TensorInfo& info = Info(t);
      if (!info.is_output || bound_->program(bound_->HomeStatement(t)).accumulate) Fill(t);
    }
  }

  void Fill(size_t t) {
    const TensorInfo& info = Info(t);
    const std::vector<int64_t> start = bound_->ShardStart(t);
    const std::vector<int64_t>& local = bound_->ShardExtents(t);
    T* data = storage_[t].data();
    const int64_t slots = Elements(local);
    for (int64_t i = 0; i < slots; ++i) {
      const int64_t g = SlotGlobal(i, local, start, info.shape);
      data[i] = g < 0 ? T(0) : static_cast<T>(ElementValue(options_.seed, info.name, g));
    }
  }

  // The tensors the application holds in given layouts (their home statement's Program's
  // TensorInfo::given, not in place): storage in that layout, inputs and `+=` outputs
  // filled there; "" or why a layout cannot be planned.
  std::string SetUpGiven() {
    const int rank = bound_->comm().rank();
    for (size_t t = 0; t < bound_->tensors().size(); ++t) {
      const Program& home = bound_->program(bound_->HomeStatement(t));
      const TensorInfo& info = Info(t);
      if (!codegen::Redistributed(home, info)) continue;
      absl::StatusOr<GivenPlans> plans = PlanGiven(home, info);
      if (!plans.ok()) return absl::StrCat(info.name, ": ", plans.status().message());
      GivenTensor g;
      g.t = t;
      g.in = std::move(plans->in);
      g.out = std::move(plans->out);
      g.storage.assign(static_cast<size_t>(plans->given->LocalElements(rank)), T(0));
      g.global.assign(g.storage.size(), -1);
      const int64_t cols = info.shape.empty() ? 1 : info.shape.back();
      for (int64_t row = 0; row < plans->given->rows(); ++row) {
        for (const runtime::Run& r : plans->given->Row(row)) {
          if (r.rank != rank) continue;
          for (int64_t c = r.begin; c < r.end; ++c)
            g.global[static_cast<size_t>(r.offset + (c - r.begin) * r.stride)] = row * cols + c;
        }
      }
      g.filled = !info.is_output || home.accumulate;
      given_.push_back(std::move(g));
      FillGiven(given_.back());
    }
    return "";
  }

  void FillGiven(GivenTensor& g) {
    if (!g.filled) return;
    const std::string& name = Info(g.t).name;
    for (size_t i = 0; i < g.storage.size(); ++i) {
      if (g.global[i] >= 0)
        g.storage[i] = static_cast<T>(ElementValue(options_.seed, name, g.global[i]));
    }
  }

  // Warm-up and timed repetitions of the whole program; a given tensor moved from the
  // application's layout into its home before, and an output's back after, inside the time.
  void Time(RunStats* m) {
    Comm& comm = bound_->comm();
    for (int i = 0;; ++i) {
      const Repetition rep = NextRepetition(options_.gate, i, options_.warmup, options_.reps);
      if (rep == Repetition::kStop) break;
      for (size_t t = 0; t < storage_.size(); ++t) {
        if (Info(t).is_output && bound_->program(bound_->HomeStatement(t)).accumulate) Fill(t);
      }
      for (GivenTensor& g : given_) {
        if (Info(g.t).is_output) FillGiven(g);
      }
      comm.Barrier();
      const double t0 = comm.Now();
      for (GivenTensor& g : given_) {
        if (!g.in.empty()) Redistribute(g.in, g.storage.data(), storage_[g.t].data(), comm);
      }
      const absl::Status status = bound_->Run(shards_);
      if (!status.ok()) {
        m->error = std::string(status.message());  // the same on every rank
        return;
      }
      for (GivenTensor& g : given_) {
        if (!g.out.empty()) Redistribute(g.out, storage_[g.t].data(), g.storage.data(), comm);
      }
      const double worst = StepSeconds(t0, comm.Now(), comm);
      if (options_.gate != nullptr) options_.gate->Timed(worst);
      if (rep == Repetition::kTimed) m->seconds.push_back(worst);
    }
    long long most = bound_->ElementsSent() * statements_[0].program.dtype_bytes;
    comm.Allreduce(&most, 1, DataType::kLongLong, ReduceOp::kMax, comm.AllAxes());
    m->bytes_sent_max = most;
  }

  // The given layout of program tensor `t`, or nullptr when it has none.
  GivenTensor* GivenOf(size_t t) {
    for (GivenTensor& g : given_) {
      if (g.t == t) return &g;
    }
    return nullptr;
  }

  // What program tensor `t` (a statement's output) holds on this rank, for the checks: in
  // the application's layout when it has a given one.
  HeldOutput Held(size_t t) {
    if (const GivenTensor* g = GivenOf(t); g != nullptr && !g->out.empty()) {
      HeldOutput held;
      const T* data = g->storage.data();
      const std::vector<int64_t>* global = &g->global;
      held.slots = static_cast<int64_t>(g->storage.size());
      held.value = [data](int64_t i) { return static_cast<double>(data[i]); };
      held.global = [global](int64_t i) { return (*global)[static_cast<size_t>(i)]; };
      return held;
    }
    const T* data = storage_[t].data();
    HeldOutput held;
    held.value = [data](int64_t i) { return static_cast<double>(data[i]); };
    if (!bound_->HoldsResult(t)) {
      held.global = [](int64_t) { return int64_t{-1}; };
      return held;
    }
    const std::vector<int64_t> start = bound_->ShardStart(t);
    const std::vector<int64_t> local = bound_->ShardExtents(t);
    const std::vector<int64_t> shape = Info(t).shape;
    held.slots = Elements(local);
    held.global = [local, start, shape](int64_t i) { return SlotGlobal(i, local, start, shape); };
    return held;
  }

  size_t OutputOf(size_t s) const {
    return static_cast<size_t>(bound_->IndexOf(statements_[s].problem.output.tensor));
  }

  // The fault a test injects, the checksum and the checks of every statement's output.
  void Finish(RunStats* m) {
    Comm& comm = bound_->comm();
    const size_t out = OutputOf(statements_.size() - 1);
    const HeldOutput final_held = Held(out);
    if (options_.inject_fault == "wrong" && comm.rank() == 0) {
      for (int64_t i = final_held.slots / 2; i < final_held.slots; ++i) {
        if (final_held.global(i) < 0) continue;
        GivenTensor* g = GivenOf(out);
        (g != nullptr && !g->out.empty() ? g->storage : storage_[out])[i] += T(1);
        break;
      }
    }
    m->checksum = 0;
    for (int64_t i = 0; i < final_held.slots; ++i) {
      if (final_held.global(i) >= 0) m->checksum += final_held.value(i);
    }
    comm.Allreduce(&m->checksum, 1, DataType::kDouble, ReduceOp::kSum, comm.AllAxes());
    std::vector<ProblemSpec> specs;
    for (const StatementJob& j : statements_) specs.push_back(j.problem);
    // Every statement's bound over the chain it is computed from (runtime/oracle.h).
    const Precision precision = PrecisionOf(statements_[0].program.dtype_bytes);
    ProgramValues values(specs, options_.seed, precision);
    const std::string rank =
        RankName(statements_[0].program.axis_names, comm.CoordsOf(comm.rank()));
    for (size_t s = 0; s < statements_.size() && m->error.empty(); ++s) {
      const HeldOutput held = Held(OutputOf(s));
      const ProblemSpec& problem = statements_[s].problem;
      const OperandValues operands = values.OperandsOf(static_cast<int>(s));
      const int64_t cost = values.ElementCost(static_cast<int>(s));
      const int64_t limit = Depth(s) > 0 ? 100'000'000 : 4'000'000;
      std::string error =
          CheckHeldValues(problem, options_.seed, held, precision, rank, operands, limit, cost);
      error = FirstError(error, comm);
      if (error.empty())
        error = CheckCoverage(problem, options_.seed, held, precision, comm, operands);
      if (!error.empty()) m->error = absl::StrCat("statement ", s + 1, ": ", error);
    }
    m->verified = m->error.empty();
  }

  // How many statements' results statement `s`'s result is computed from, at most (0: none):
  // a deeper check may spend more (its elements cost more).
  int Depth(size_t s) const {
    int depth = 0;
    for (const ProblemSpec::Access& a : statements_[s].problem.operands) {
      for (size_t p = 0; p < s; ++p) {
        if (statements_[p].problem.output.tensor == a.tensor) depth = std::max(depth, 1 + Depth(p));
      }
    }
    return depth;
  }

  const std::vector<StatementJob>& statements_;
  const ExecOptions& options_;
  std::vector<GivenTensor> given_;
  std::unique_ptr<BoundStatements> bound_;
  std::vector<std::vector<T>> storage_;  // each program tensor's home shard
  std::vector<void*> shards_;            // what the statements' Run binds
};

}  // namespace

RunStats ExecuteStatements(const std::vector<StatementJob>& statements, const CommFor& comm_for,
                           const ExecOptions& options) {
  if (!statements.empty() && statements[0].program.dtype_bytes == 8) {
    return StatementsRun<double>(statements, options).Run(comm_for);
  }
  return StatementsRun<float>(statements, options).Run(comm_for);
}

}  // namespace meshtune::runtime
