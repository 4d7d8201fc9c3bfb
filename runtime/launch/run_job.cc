#include "runtime/launch/run_job.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/library/library_run.h"
#include "runtime/mpi_executor.h"

namespace meshtune::runtime {

namespace {

// ScaLAPACK's GEMM as `job` says, on every rank of `comm`.
RunStats LibraryStats(const WorkerJob& job, const ExecOptions& options, MPI_Comm comm) {
  RunStats stats;
  std::vector<ProblemSpec> statements;
  for (const StatementJob& s : job.Statements()) statements.push_back(s.problem);
  absl::StatusOr<std::vector<GemmForm>> forms = GemmChainOf(statements);
  if (!forms.ok()) {  // FromProto refuses such a job
    stats.error = std::string(forms.status().message());
    return stats;
  }
  const LibraryGemmRun run =
      RunLibraryChain(statements, *forms, job.library_dtype_bytes, *job.library, options.reps,
                      options.warmup, options.seed, comm, nullptr, options.gate);
  stats.seconds = run.repetitions;
  stats.error = run.error;
  stats.verified = run.error.empty();
  return stats;
}

}  // namespace

int64_t JobRanks(const WorkerJob& job) {
  return job.library ? int64_t{job.library->prow} * job.library->pcol : job.program.Ranks();
}

RunStats RunJob(const WorkerJob& job, MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  if (job.library && JobRanks(job) != size) {  // Execute checks a program's mesh itself
    RunStats stats;
    stats.error = absl::StrCat("the library's grid ", ConfigText(*job.library), " needs ",
                               JobRanks(job), " ranks, the job has ", size);
    return stats;
  }
  // Alone (no gate given): warm-ups, then `reps` samples of at least kMinSampleS each.
  ExecOptions options = job.options;
  CountGate alone(std::max(0, options.warmup), std::max(1, options.reps));
  if (options.gate == nullptr) options.gate = &alone;
  RunStats stats = job.library          ? LibraryStats(job, options, comm)
                   : !job.later.empty() ? ExecuteStatements(job.Statements(), comm, options)
                                        : Execute(job.problem, job.program, comm, options);
  if (options.gate == &alone) stats.batch = alone.batch();
  return stats;
}

}  // namespace meshtune::runtime
