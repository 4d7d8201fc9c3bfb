// The machine's pace: how fast the ranks of a job compute right now. On a shared machine
// the same program can take twice as long from one second to the next (other work holds
// the cores); a run's time read against the pace measured beside it tells the program's
// cost from the machine's mood. Every run measures it between its repetitions
// (runtime/run_job.h, RunResult.pace_s); `meshtune fidelity` reads its rounds at a common
// pace.
#ifndef MESHTUNE_RUNTIME_PACE_H_
#define MESHTUNE_RUNTIME_PACE_H_

#include <mpi.h>

#include <vector>

namespace meshtune::runtime {

// The side of the square f32 GEMM the pace times.
inline constexpr int kPaceGemmN = 256;

// Times the pace between a run's repetitions: every rank of a job calls Step before each
// repetition (the slowdowns of a shared machine last seconds, a repetition much less, so the
// pace beside it is the pace it ran at). Thread-compatible.
class Pacer {
 public:
  explicit Pacer(MPI_Comm comm);
  // One kPaceGemmN-cubed f32 GEMM on every rank's own operands; keeps the slowest rank's
  // time. Collective over the communicator.
  void Step();
  // The pace `seconds` ran at, the times of the repetitions that followed the last
  // seconds.size() Steps: their median over the median of each one's time per the pace
  // before it, so that a run read at another pace p takes p times that median. 0 with fewer
  // Steps than `seconds` or none of either.
  double PaceOf(const std::vector<double>& seconds) const;

 private:
  MPI_Comm comm_;
  std::vector<float> a_, b_, c_;
  std::vector<double> steps_;  // the slowest rank's time of each Step
};

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_PACE_H_
