// The Program executor: runs one lowered Program on every rank of an MPI job.
//
// Each rank fills its own shards from runtime/fill.h, runs warm-up and timed repetitions
// (a repetition's time is the slowest rank's), verifies its own output shard against an
// f64 reference computed from the same hashes, and counts the bytes it sends. Execute is
// collective: every rank calls it with the same program. Not thread-safe.
#ifndef MESHTUNE_RUNTIME_EXECUTOR_H_
#define MESHTUNE_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "runtime/comm.h"
#include "runtime/rank.h"

namespace meshtune::runtime {

struct ExecOptions {
  int warmup = 1;
  int reps = 3;
  uint64_t seed = 1;
  // For tests of the launcher: "wrong" perturbs one output element on rank 0.
  std::string inject_fault;
};

// Runs `program` as the rank of `comm` (every rank of the mesh calls it, each with its own
// Comm). The result carries an error when the Comm's mesh is not the program's or the
// program has no kernel call.
RunStats Execute(const codegen::Program& program, std::unique_ptr<Comm> comm,
                 const ExecOptions& options);

// Runs `program`'s body once on `rt` (what Execute repeats and times): every loop,
// transfer, kernel call and reduction becomes calls of `rt`, a prefetched transfer or
// reduction (codegen/program.h) its Async/Wait sequence. Execute is the way to run a
// program; this is for tests of the call sequence.
void Interpret(const codegen::Program& program, RankRuntimeBase* rt);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_EXECUTOR_H_
