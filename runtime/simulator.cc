#include "runtime/simulator.h"

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/executor.h"
#include "runtime/sim_comm.h"

namespace meshtune::runtime {

namespace {

// What a world whose ranks were stopped by another world's failure records.
constexpr char kStoppedElsewhere[] = "a rank stopped in another channel of the program";

// Runs `rank(r)` for every rank r of `worlds`' mesh, each on a thread of its own; a rank that
// fails stops every world (the others' ranks may wait for it). Each rank's stats, by rank.
std::vector<RunStats> OnThreads(const std::vector<SimWorld*>& worlds,
                                const std::function<RunStats(int)>& rank) {
  const int ranks = worlds[0]->ranks();
  std::vector<RunStats> results(ranks);
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        results[r] = rank(r);
      } catch (const SimAborted&) {
        // A world's error says why; stop the others, whose ranks may wait for this one.
        for (SimWorld* w : worlds) w->Fail(kStoppedElsewhere);
      } catch (const std::exception& e) {
        for (SimWorld* w : worlds) w->Fail(std::string("simulated rank failed: ") + e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

// Rank 0's stats with the first world's error, if any (not a stop caused by another's).
RunStats Outcome(std::vector<RunStats> results, const std::vector<SimWorld*>& worlds) {
  RunStats m = std::move(results[0]);
  for (const SimWorld* w : worlds) {
    const std::string error = w->error();
    if (error.empty() || error == kStoppedElsewhere) continue;
    m.verified = false;
    m.error = error;
    break;
  }
  return m;
}

ExecOptions ExecOf(const SimOptions& options) {
  ExecOptions exec;
  exec.seed = options.seed;
  exec.warmup = options.warmup;
  exec.reps = options.reps;
  exec.inject_fault = options.inject_fault;
  return exec;
}

}  // namespace

RunStats SimulateStatements(const std::vector<StatementJob>& statements,
                            const SimOptions& options) {
  if (statements.empty()) {
    RunStats m;
    m.error = "the program has no statement";
    return m;
  }
  // One world per channel (runtime/statements_executor.h), as MPI has one communicator each.
  std::vector<std::unique_ptr<SimWorld>> worlds;
  for (size_t c = 0; c <= statements.size(); ++c) {
    worlds.push_back(
        std::make_unique<SimWorld>(statements[0].program.axis_sizes, options.timeout_s));
  }
  std::vector<SimWorld*> all;
  for (auto& w : worlds) all.push_back(w.get());
  const ExecOptions exec = ExecOf(options);
  return Outcome(OnThreads(all,
                           [&](int r) {
                             return ExecuteStatements(
                                 statements, [&](int c) { return worlds[c]->CommFor(r); }, exec);
                           }),
                 all);
}

RunStats Simulate(const ProblemSpec& problem, const codegen::Program& program,
                  const SimOptions& options) {
  SimWorld world(program.axis_sizes, options.timeout_s);
  const ExecOptions exec = ExecOf(options);
  return Outcome(
      OnThreads({&world}, [&](int r) { return Execute(problem, program, world.CommFor(r), exec); }),
      {&world});
}

}  // namespace meshtune::runtime
