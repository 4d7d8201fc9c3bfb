// The worker's job as a message (meshtune.v1.WorkerJob), and back: what the launcher writes
// for every rank of an MPI run and what meshtune_worker reads. The job carries the Program
// already judged, lowered and validated, so a rank needs no isl (the worker links neither
// legality nor lowering). Stateless; thread-safe.
#ifndef MESHTUNE_RUNTIME_LAUNCH_WORKER_JOB_H_
#define MESHTUNE_RUNTIME_LAUNCH_WORKER_JOB_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "proto/meshtune.pb.h"
#include "runtime/executor.h"
#include "runtime/launch/repetitions.h"
#include "runtime/library/gemm_form.h"
#include "runtime/oracle.h"
#include "runtime/statements_executor.h"

namespace meshtune::runtime {

// What one MPI run executes and checks.
struct WorkerJob {
  ProblemSpec problem;  // as the user stated it: what the output is checked against
  codegen::Program program;
  ExecOptions options;
  // Set: ScaLAPACK's GEMM on this grid instead of `program` (empty then), in f32 (4) or f64 (8).
  std::optional<LibraryGemmConfig> library;
  int library_dtype_bytes = 4;
  // A program of several statements: `problem` and `program` are its first, these the ones
  // after it, run as one by ExecuteStatements (runtime/statements_executor.h).
  std::vector<StatementJob> later;

  // Every statement of the job: {problem, program}, then `later`.
  std::vector<StatementJob> Statements() const;
};

// `job` as a message.
v1::WorkerJob ToProto(const WorkerJob& job);

// The job `m` describes; InvalidArgument naming the malformed part (the program's form is
// checked by codegen::FromProto; a statement must name its output and at least one
// operand, every index with a positive extent; a library job needs a statement of matmul
// form, a grid of at least one rank, a block size of at least 1 and 4 or 8 bytes).
absl::StatusOr<WorkerJob> FromProto(const v1::WorkerJob& m);

// What one worker run executes: its jobs (at least one), measured side by side in `rounds`
// when there are several (runtime/launch/rounds.h).
struct WorkerJobSet {
  std::vector<WorkerJob> jobs;
  RoundsOptions rounds;
};

// Writes `set` to `path` as a binary meshtune.v1.WorkerJobs; Internal when the file cannot
// be written.
absl::Status WriteWorkerJobs(const WorkerJobSet& set, const std::string& path);

// The jobs in the file at `path`; InvalidArgument when it cannot be read or parsed, holds no
// job ("the job file F holds no job"), or a job is malformed ("job 2: ..." for the second
// of several).
absl::StatusOr<WorkerJobSet> ReadWorkerJobs(const std::string& path);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_WORKER_JOB_H_
