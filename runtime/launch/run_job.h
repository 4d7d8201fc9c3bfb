// One MPI run of a job (runtime/launch/worker_job.h) on the ranks of a communicator: the Program
// through the executor, or ScaLAPACK's GEMM for a library job (runtime/library/library_gemm.h),
// checked by the oracle of the statement, timed in samples (runtime/launch/repetitions.h). What
// meshtune_worker runs under mpirun (alone, or beside others: runtime/launch/rounds.h) and what a
// plan in measure mode runs on the application's own ranks (meshtune/comm_runner.h).
#ifndef MESHTUNE_RUNTIME_LAUNCH_RUN_JOB_H_
#define MESHTUNE_RUNTIME_LAUNCH_RUN_JOB_H_

#include <mpi.h>

#include <cstdint>

#include "runtime/launch/worker_job.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

// The ranks `job` runs on: its mesh's, or its library grid's.
int64_t JobRanks(const WorkerJob& job);

// Runs `job` on every rank of `comm`, whose size must be JobRanks(job) (else the stats carry
// the error); the same stats on every rank. Without a gate in job.options, job.options.warmup
// warm-ups and then job.options.reps samples (CountGate; stats.batch repetitions a sample).
// Collective over `comm`.
RunStats RunJob(const WorkerJob& job, MPI_Comm comm);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_RUN_JOB_H_
