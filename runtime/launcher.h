// The launcher: runs a schedule under MPI (mpirun, or another launcher such as srun) and
// turns whatever happens into a LaunchResult — a verified run, a wrong answer, a crash, a
// hang past the timeout — never a crash of the caller. On timeout the whole process group
// is killed; workers also die with their launcher, so no process is left behind.
// Thread-compatible: each call forks its own job.
#ifndef MESHTUNE_RUNTIME_LAUNCHER_H_
#define MESHTUNE_RUNTIME_LAUNCHER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshtune::runtime {

struct LaunchOptions {
  std::string worker;                       // path of meshtune_worker ("" = find it)
  std::vector<std::string> launcher = {"mpirun"};  // e.g. {"srun"} on a cluster
  std::string hostfile;                     // passed as --hostfile when set
  std::vector<std::string> extra_args;      // more launcher arguments, before the worker
  double timeout_s = 300;
};

// What to run: the problem, mesh and trace as text, and the measurement settings.
struct RunSpec {
  std::string expr, extents, dtype = "f32", mesh, trace;
  int64_t ranks = 1;
  int reps = 3, warmup = 1;
  uint64_t seed = 1;
  std::string inject_fault;  // tests only: crash, hang or wrong
};

struct LaunchResult {
  bool verified = false;
  std::vector<double> seconds;
  double median_s = 0;
  int64_t bytes_sent_max = 0;
  double checksum = 0;
  std::optional<std::string> error;  // set whenever the run did not verify
};

// Runs `spec` and waits for it (at most options.timeout_s).
LaunchResult Launch(const RunSpec& spec, const LaunchOptions& options);

// The worker binary: $MESHTUNE_WORKER, then beside this executable or in its runfiles;
// "" when not found.
std::string FindWorker();

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCHER_H_
