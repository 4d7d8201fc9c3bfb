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
#include "runtime/launch/launcher.h"
#include "runtime/library/gemm_form.h"

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
  // The median of `samples`, as measured, when the run verified; none when not run.
  std::optional<double> seconds;
  std::vector<double> repetitions;  // every timed repetition, the slowest rank's
  // The repetitions as samples (runtime/launch/repetitions.h): each the mean of `batch`
  // consecutive ones; measured side by side, one a round (NaN-free, in the order taken).
  std::vector<double> samples;
  int batch = 1;
  int64_t bytes_sent_max = 0;  // by the busiest rank in one repetition
  bool verified = false;       // the output matched the reference on every rank
  std::optional<std::string> error;
};

// `run` with `samples` (of `batch` repetitions each) as its measurement: seconds their
// median when verified. For runners that time candidates themselves.
void SetSamples(std::vector<double> samples, int batch, CandidateRun* run);

// What to measure of the library (runtime/library/library_run.h) with `config`: ScaLAPACK's
// GEMM for `problem` (of matmul form), or for a program whose statements all are, the chain
// of GEMMs over `program` (exactly one of the two is set; not owned).
struct LibraryInput {
  const ir::Problem* problem = nullptr;
  const ir::StatementProgram* program = nullptr;
  runtime::LibraryGemmConfig config;
  double timeout_s = 300;
  std::function<bool()> cancelled;
};

// The statements `in` runs, as the runtime states them; and their element size (4 or 8).
std::vector<runtime::ProblemSpec> LibraryStatements(const LibraryInput& in);
int LibraryDtypeBytes(const LibraryInput& in);
// The routine the library runs for `problem`'s dtype: "PDGEMM" for f64, else "PSGEMM".
std::string LibraryName(const ir::Problem& problem);

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

// One candidate of a side-by-side measurement: exactly one of the three is set (not owned).
struct MeasureItem {
  const MeasureInput* schedule = nullptr;
  const LibraryInput* library = nullptr;
  const ProgramMeasureInput* program = nullptr;
};

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
  // Measures `items` side by side, within `budget_s` seconds (warm-ups and rounds; each
  // item's own timeout_s bounds the job): one run per item, in order. The MPI runner times
  // those of one rank count in rounds inside one job (runtime/launch/rounds.h), so that their
  // samples pair up round by round; this default measures each alone, one after another.
  virtual std::vector<CandidateRun> RunSideBySide(const std::vector<MeasureItem>& items,
                                                  double budget_s);
};

// One item alone through `runner` (Run, RunLibrary or RunProgram); a verified run that has
// seconds but no samples gets them as its one sample.
CandidateRun RunAlone(Runner& runner, const MeasureItem& item);

struct MpiRunnerOptions {
  runtime::LaunchOptions launch;  // launcher, worker, hostfile; timeout_s comes per run
  int reps = 3;                   // samples of a run alone; rounds at least of runs side by side
  int warmup = 1;                 // warm-ups of each (side by side: at least 1)
  int max_rounds = 30;            // rounds at most of runs side by side
  uint64_t seed = 1;
};

// Runs each candidate with runtime::Launch (one rank per mesh point).
std::unique_ptr<Runner> NewMpiRunner(const MpiRunnerOptions& options);

// Measures nothing: Run returns no seconds, not verified, no error.
std::unique_ptr<Runner> NewModelOnlyRunner();

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_RUNNER_H_
