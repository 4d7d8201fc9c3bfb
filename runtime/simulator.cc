#include "runtime/simulator.h"

#include <exception>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/executor.h"
#include "runtime/sim_comm.h"

namespace meshtune::runtime {

namespace {

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
  const ExecOptions exec = ExecOf(options);
  const int ranks = worlds[0]->ranks();
  std::vector<RunStats> results(ranks);
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        results[r] = ExecuteStatements(
            statements, [&](int c) { return worlds[c]->CommFor(r); }, exec);
      } catch (const SimAborted&) {
        // A world's error says why; stop the others, whose ranks may wait for this one.
        for (auto& w : worlds) w->Fail("a rank stopped in another channel of the program");
      } catch (const std::exception& e) {
        for (auto& w : worlds) w->Fail(std::string("simulated rank failed: ") + e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  RunStats m = std::move(results[0]);
  for (const auto& w : worlds) {
    const std::string error = w->error();
    if (error.empty() || error == "a rank stopped in another channel of the program") continue;
    m.verified = false;
    m.error = error;
    break;
  }
  return m;
}

RunStats Simulate(const ProblemSpec& problem, const codegen::Program& program,
                  const SimOptions& options) {
  SimWorld world(program.axis_sizes, options.timeout_s);
  const ExecOptions exec = ExecOf(options);
  const int ranks = world.ranks();
  std::vector<RunStats> results(ranks);
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        results[r] = Execute(problem, program, world.CommFor(r), exec);
      } catch (const SimAborted&) {
        // The world's error says why.
      } catch (const std::exception& e) {
        world.Fail(std::string("simulated rank failed: ") + e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  RunStats m = ranks > 0 ? std::move(results[0]) : RunStats{};
  const std::string error = world.error();
  if (!error.empty()) {
    m.verified = false;
    m.error = error;
  }
  return m;
}

}  // namespace meshtune::runtime
