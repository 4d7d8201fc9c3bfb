// The mesh simulator: runs a lowered Program for all P ranks of its mesh in this process,
// without MPI, and verifies every rank's output shard against the f64 reference — as a run
// under mpirun does, with the same RankRuntime (every communication pattern, every index
// computation) over the in-process transport of runtime/sim_comm.h, one thread a rank.
// What it checks is correctness; its times say nothing about a machine.
// Thread-safe: each call has its own virtual ranks.
#ifndef MESHTUNE_RUNTIME_SIMULATOR_H_
#define MESHTUNE_RUNTIME_SIMULATOR_H_

#include <cstdint>
#include <string>

#include "codegen/program.h"
#include "runtime/executor.h"
#include "runtime/rank/rank.h"
#include "runtime/statements_executor.h"

namespace meshtune::runtime {

struct SimOptions {
  uint64_t seed = 1;
  int warmup = 0;
  int reps = 1;
  // A virtual rank that waits longer than this for its peers stops the run (a deadlock).
  double timeout_s = 30;
  // Tests only: "wrong" perturbs one output element on rank 0, as ExecOptions does.
  std::string inject_fault;
};

// Runs `program` on every virtual rank. The result is verified when every rank's output
// matches the reference; otherwise `error` names the first failing rank and element, or
// what went wrong between ranks (members of a collective disagreeing on its root or
// sizes, a message of the wrong size, a deadlock). `seconds` are the simulation's wall
// times per repetition.
// The output is checked against `problem`, the problem as stated (runtime/oracle.h).
RunStats Simulate(const ProblemSpec& problem, const codegen::Program& program,
                  const SimOptions& options = {});

// A program of statements (runtime/statements_executor.h) on every virtual rank: each
// statement's runtime and the program's moves over worlds of their own, as MPI runs them
// over communicators of their own. `error` as Simulate's.
RunStats SimulateStatements(const std::vector<StatementJob>& statements,
                            const SimOptions& options = {});

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_SIMULATOR_H_
