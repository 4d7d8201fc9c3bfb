#include "runtime/simulator.h"

#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/executor.h"
#include "runtime/sim_comm.h"

namespace meshtune::runtime {

RunStats Simulate(const ProblemSpec& problem, const codegen::Program& program,
                  const SimOptions& options) {
  SimWorld world(program.axis_sizes, options.timeout_s);
  ExecOptions exec;
  exec.seed = options.seed;
  exec.warmup = options.warmup;
  exec.reps = options.reps;
  exec.inject_fault = options.inject_fault;
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
