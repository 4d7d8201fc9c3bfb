// The Program executor: runs one lowered Program on every rank of an MPI job.
//
// Each rank fills its own shards from runtime/fill.h, runs warm-up and timed repetitions
// (a repetition's time is the slowest rank's), verifies the output against an f64
// reference computed from the problem and the same hashes (runtime/oracle.h: each rank's
// elements, and that every element is held), and counts the bytes it sends. Execute is
// collective: every rank calls it with the same program. Not thread-safe.
#ifndef MESHTUNE_RUNTIME_EXECUTOR_H_
#define MESHTUNE_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/problem.h"
#include "runtime/comm.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

struct ExecOptions {
  int warmup = 1;
  int reps = 3;
  uint64_t seed = 1;
  // For tests of the launcher: "wrong" perturbs one output element on rank 0.
  std::string inject_fault;
  // Decides the repetitions instead of warmup and reps when set (runtime/launch/repetitions.h);
  // not owned.
  RepetitionGate* gate = nullptr;
};

// Runs `program` as the rank of `comm` (every rank of the mesh calls it, each with its own
// Comm) and checks the output against `problem`, the problem the program was lowered from
// as the user stated it (runtime/oracle.h). The result carries an error when the Comm's
// mesh is not the program's or the program has no kernel call.
RunStats Execute(const ProblemSpec& problem, const codegen::Program& program,
                 std::unique_ptr<Comm> comm, const ExecOptions& options);

// The problem as the runtime's check holds it.
ProblemSpec ProblemSpecOf(const ir::Problem& problem);

// Runs `program`'s body once on `rt` (what Execute repeats and times): every loop,
// transfer, kernel call and reduction becomes calls of `rt`, a prefetched transfer or
// reduction (codegen/program.h) its Async/Wait sequence. Execute is the way to run a
// program; this is for tests of the call sequence.
void Interpret(const codegen::Program& program, RankRuntimeBase* rt);

// A Program on one rank over the caller's memory, for applications: the transfer buffers
// are allocated once, at Create, and Run executes the program once on the shards it is
// given, as often as called. Not thread-safe; Run is collective (every rank of the mesh
// calls it).
class BoundProgram {
 public:
  // InvalidArgument when `comm`'s mesh is not the program's ("the mesh has 4 ranks but the
  // communicator has 2") or the program has no kernel call; ResourceExhausted "cannot
  // allocate the schedule's transfer buffers on this rank (N GiB)".
  static absl::StatusOr<std::unique_ptr<BoundProgram>> Create(const codegen::Program& program,
                                                              std::unique_ptr<Comm> comm);

  // This rank's shard of program.tensors[t]: the global index of its first element and
  // its extents; the shard is dense and row-major (strides follow from the extents). Where
  // blocks do not divide an extent (codegen/program.h) the extents are the full block's on
  // every rank: a slot whose global index lies past the tensor's shape is padding, which
  // Run never reads as data and which holds no result (any value will do).
  std::vector<int64_t> ShardStart(size_t t) const;
  const std::vector<int64_t>& ShardExtents(size_t t) const;
  // Whether this rank's shard of program.tensors[t] holds its values after Run: false only
  // for the output off its layer (codegen::LayerAxes), a shard of scratch the program
  // still needs.
  bool HoldsResult(size_t t) const;

  // Runs the program once: shards[t] is this rank's shard of program.tensors[t] (inputs
  // are only read; the output is overwritten for `=`, added to for `+=`). Internal with
  // the runtime's message when a shard is missing.
  absl::Status Run(const std::vector<void*>& shards);

 private:
  BoundProgram(std::shared_ptr<const codegen::Program> program, Coords coords,
               std::unique_ptr<RankRuntimeBase> rt);
  // Shared with the runtime's tensor specs, whose block starts read it.
  std::shared_ptr<const codegen::Program> program_;
  Coords coords_;
  std::unique_ptr<RankRuntimeBase> rt_;
};

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_EXECUTOR_H_
