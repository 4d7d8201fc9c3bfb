// A program of statements bound to this rank: each statement's lowered Program bound to a
// communicator of its own (runtime/executor.h, BoundProgram), and the moves between them,
// run over one shard per tensor of the program — what the statements executor times and
// checks (runtime/statements_executor.h) and what a plan of a program executes
// (meshtune/plan.h).
//
// Every tensor of the program has one shard on each rank, its home: a tensor a statement
// writes lives where that statement leaves it (the producer's output shard), an input where
// the first statement reading it reads it. A statement reads an intermediate in place when
// its shard is the producer's on every rank (codegen::ReadInPlace),
// an input in place when its shard is the first reader's; otherwise the tensor is moved
// from its home into scratch this object owns (runtime/redistribution.h) before the
// statement runs. A given layout (codegen::TensorInfo::given) binds nothing here: the home
// is the shard all the same, and the caller moves the application's data in and out of it
// (runtime/statements_executor.h). Not thread-safe; one Run at a time.
#ifndef MESHTUNE_RUNTIME_BOUND_STATEMENTS_H_
#define MESHTUNE_RUNTIME_BOUND_STATEMENTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "runtime/comm.h"
#include "runtime/executor.h"
#include "runtime/redistribution.h"

namespace meshtune::runtime {

// This rank's Comm for channel `c`: 0 to n-1 the statements' (each statement's runtime has
// its own, as an MPI communicator of its own), n the program's (the moves between them).
using CommFor = std::function<std::unique_ptr<Comm>(int channel)>;

class BoundStatements {
 public:
  // The statements' Programs (at least one, in program order) bound on this rank. Calls
  // comm_for for every channel, 0 to n, before anything can fail on one rank alone, so
  // that every rank makes the same collective calls. InvalidArgument naming the statement
  // when the Programs' meshes or dtypes differ, a tensor is written twice or read with another
  // shape than it is written; the lowest failing rank's BoundProgram::Create error after "statement
  // N: " (ResourceExhausted for "cannot allocate ...", else InvalidArgument). Every rank returns
  // the same error.
  static absl::StatusOr<std::unique_ptr<BoundStatements>> Create(
      const std::vector<codegen::Program>& programs, const CommFor& comm_for);

  // The program's tensors, each once, in order of first appearance statement by statement
  // (the output, then the operands in the Program's order): the order Run takes them in.
  const std::vector<std::string>& tensors() const { return tensors_; }
  // Index of `name` in tensors(); -1 when the program has no such tensor.
  int IndexOf(const std::string& name) const;
  // This rank's home shard of tensors()[t], as BoundProgram::ShardStart, ShardExtents and
  // HoldsResult say of the statement it lives in.
  std::vector<int64_t> ShardStart(size_t t) const;
  const std::vector<int64_t>& ShardExtents(size_t t) const;
  bool HoldsResult(size_t t) const;
  // tensors()[t] as the Program holding its home describes it (shape, output or not).
  const codegen::TensorInfo& info(size_t t) const {
    return programs_[homes_[t].statement].tensors[homes_[t].index];
  }
  // The statement whose Program holds tensors()[t]'s home, and its index there.
  int HomeStatement(size_t t) const { return homes_[t].statement; }
  const codegen::Program& program(int statement) const { return programs_[statement]; }
  int statements() const { return static_cast<int>(programs_.size()); }
  // The program's communicator (channel n).
  Comm& comm() { return *comm_; }
  // Elements this rank sends to other ranks in one Run, moving tensors between statements.
  int64_t ElementsSent() const;

  // Runs every statement once, in order: shards[t] is this rank's home shard of
  // tensors()[t] (inputs only read; an output overwritten for `=`, added to for `+=`).
  // InvalidArgument when the number of shards is wrong; a statement's Run error after
  // "statement N: ". Collective over the program's ranks.
  absl::Status Run(const std::vector<void*>& shards);

 private:
  // Where tensors()[t] lives: statement and index in its Program.
  struct Home {
    int statement = 0;
    size_t index = 0;
  };
  // How statement `consumer` gets its operand `to` (index in its Program) of program tensor
  // `tensor`: in place (its home shard) or moved into `scratch` by `plan`.
  struct Read {
    int consumer = 0;
    size_t to = 0, tensor = 0;
    bool in_place = false;
    std::vector<Piece> plan;
    std::vector<char> scratch;
  };

  BoundStatements() = default;
  // Sets tensors_, homes_ and reads_ (the moves planned) from programs_; "" or what is wrong.
  std::string Plan();

  std::vector<codegen::Program> programs_;
  std::vector<std::string> tensors_;
  std::vector<Home> homes_;
  std::vector<Read> reads_;
  std::vector<std::unique_ptr<BoundProgram>> bound_;
  std::unique_ptr<Comm> comm_;
};

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_BOUND_STATEMENTS_H_
