#include "runtime/statements_executor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/box.h"
#include "runtime/fill.h"
#include "runtime/program_values.h"

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
    Time(&m);
    if (!m.error.empty()) return m;
    Finish(&m);
    return m;
  }

 private:
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

  // Warm-up and timed repetitions of the whole program.
  void Time(RunStats* m) {
    Comm& comm = bound_->comm();
    for (int i = 0;; ++i) {
      const Repetition rep = NextRepetition(options_.gate, i, options_.warmup, options_.reps);
      if (rep == Repetition::kStop) break;
      for (size_t t = 0; t < storage_.size(); ++t) {
        if (Info(t).is_output && bound_->program(bound_->HomeStatement(t)).accumulate) Fill(t);
      }
      comm.Barrier();
      const double t0 = comm.Now();
      const absl::Status status = bound_->Run(shards_);
      if (!status.ok()) {
        m->error = std::string(status.message());  // the same on every rank
        return;
      }
      const double worst = StepSeconds(t0, comm.Now(), comm);
      if (options_.gate != nullptr) options_.gate->Timed(worst);
      if (rep == Repetition::kTimed) m->seconds.push_back(worst);
    }
    long long most = bound_->ElementsSent() * statements_[0].program.dtype_bytes;
    comm.Allreduce(&most, 1, DataType::kLongLong, ReduceOp::kMax, comm.AllAxes());
    m->bytes_sent_max = most;
  }

  // What program tensor `t` (a statement's output) holds on this rank, for the checks.
  HeldOutput Held(size_t t) const {
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
        storage_[out][i] += T(1);
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
