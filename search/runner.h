// Runners: how the tuner measures a candidate. Measurement failures are data, not errors:
// a crash, a hang past the timeout or a wrong answer comes back as a CandidateRun with
// `error` set, and the tuner goes on with the next candidate.
//
//   MPI runner         runtime::Launch: the worker under mpirun, verified, timed, cleaned up
//   model-only runner  measures nothing (fast tests, --model-only)
// Thread-compatible.
#ifndef MESHTUNE_SEARCH_RUNNER_H_
#define MESHTUNE_SEARCH_RUNNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "ir/footprint.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"
#include "ir/trace.h"
#include "runtime/gemm_form.h"
#include "runtime/launcher.h"

namespace meshtune::search {

// What to measure: a trace of `problem` on `mesh`.
struct MeasureInput {
  const ir::Problem* problem = nullptr;
  const ir::Mesh* mesh = nullptr;
  const ir::Trace* trace = nullptr;
  // Its translation-validated Program (Checker::Validate) and per-rank footprint: what an
  // MPI run executes; a runner that measures nothing may ignore them.
  const codegen::Program* program = nullptr;
  ir::Footprint footprint;
  double timeout_s = 300;           // the run is killed after this
  std::function<bool()> cancelled;  // the run is killed as soon as this says so (unset: never)
};

struct CandidateRun {
  std::optional<double> seconds;  // median over repetitions of the slowest rank; none when not run
  std::vector<double> repetitions;
  bool verified = false;  // the output matched the reference on every rank
  std::optional<std::string> error;
  // The machine's pace during the run (runtime/pace.h), when the runner measured it.
  std::optional<double> pace_s;
};

// What to measure of the library (runtime/library_gemm.h): ScaLAPACK's GEMM for `problem`
// (of matmul form) with `config`.
struct LibraryInput {
  const ir::Problem* problem = nullptr;
  runtime::LibraryGemmConfig config;
  double timeout_s = 300;
  std::function<bool()> cancelled;
};

// What to measure of a program of statements (ir::StatementProgram): each statement's
// translation-validated Program on `mesh`, run as one job (runtime/statements_executor.h).
struct ProgramMeasureInput {
  const ir::StatementProgram* program = nullptr;
  const ir::Mesh* mesh = nullptr;
  std::vector<codegen::Program> programs;  // per statement
  // What every rank holds at once: the statements' footprints together.
  ir::Footprint footprint;
  double timeout_s = 300;
  std::function<bool()> cancelled;
};

// Reads the verified runs of `runs` at their common pace, the median of their paces: a
// run's seconds becomes seconds * pace / its pace (its repetitions stay as measured), so
// that a run taken while a shared machine was slow competes as it would have at the
// machine's usual speed. Returns the pace; 0, changing nothing, when a verified run has
// none.
double ReadRunsAtCommonPace(const std::vector<CandidateRun*>& runs);

class Runner {
 public:
  virtual ~Runner() = default;
  // False for the model-only runner: the tuner then measures nothing.
  virtual bool measures() const = 0;
  virtual CandidateRun Run(const MeasureInput& input) = 0;
  // Whether RunLibrary measures (the MPI runner's does; the tuner then times the library
  // beside the schedules).
  virtual bool measures_library() const { return false; }
  // Measures the library as Run measures a schedule: verified by the same oracle, timed the
  // same way. Not run (error set) by a runner that does not measure libraries.
  virtual CandidateRun RunLibrary(const LibraryInput& input) {
    CandidateRun out;
    out.error = "not run: this runner does not run libraries";
    return out;
  }
  // Measures a program as Run measures one schedule: every statement and every move between
  // them in one job, verified against the serial reference of the whole program, timed
  // whole. Not run (error set) by a runner that measures nothing.
  virtual CandidateRun RunProgram(const ProgramMeasureInput& input) {
    CandidateRun out;
    out.error = "not run: this runner does not run programs";
    return out;
  }
};

struct MpiRunnerOptions {
  runtime::LaunchOptions launch;  // launcher, worker, hostfile; timeout_s comes per run
  int reps = 3;
  int warmup = 1;
  uint64_t seed = 1;
};

// Runs each candidate with runtime::Launch (one rank per mesh point).
std::unique_ptr<Runner> NewMpiRunner(const MpiRunnerOptions& options);

// Measures nothing: Run returns no seconds, not verified, no error.
std::unique_ptr<Runner> NewModelOnlyRunner();

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_RUNNER_H_
