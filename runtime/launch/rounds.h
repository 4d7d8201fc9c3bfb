// Candidates measured side by side: several jobs of the same rank count in one MPI job,
// timed in rounds. Each job is set up once (shards filled, communicators made) and warmed
// up (at least twice); then every round runs one sample of each (an untimed repetition to
// bring its data back into the caches, then a batch of repetitions of at least
// kMinSampleS, runtime/launch/repetitions.h) in a fresh random order, so that a slow second of a
// shared machine lands on all of them rather than on one; rounds go on until the fastest
// candidate is faster than the second beyond the noise (the 95% interval of their paired
// per-round ratio excludes 1, base/sample_stats.h), or max_rounds, or the budget. Then
// each job checks its output as it would alone. Jobs run in threads of their own that
// hand one baton around, so exactly one thread calls MPI at a time (MPI_THREAD_SERIALIZED);
// where MPI gives less, the jobs run one after another, min_rounds samples each.
#ifndef MESHTUNE_RUNTIME_LAUNCH_ROUNDS_H_
#define MESHTUNE_RUNTIME_LAUNCH_ROUNDS_H_

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "runtime/launch/worker_job.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

// Whether the rounds of `samples` (per candidate, one entry per round: its sample's time,
// NaN where it has none) may stop: the candidate of the lowest median is faster than the
// one of the second lowest beyond the noise (base::ComparePaired separated). False with
// fewer than two candidates with samples.
bool LeaderSeparated(const std::vector<std::vector<double>>& samples);

// Runs every job of `jobs` (each of JobRanks(job) == the size of `comm`, else that job's
// stats carry the error) in rounds on every rank of `comm`; the same stats on every rank,
// one per job, in order: each with its timed repetitions (seconds, batch of them a sample,
// a sample a round), or its error. A job's warm-up count is at least 2. Collective.
std::vector<RunStats> RunJobsInRounds(const std::vector<WorkerJob>& jobs,
                                      const RoundsOptions& options, MPI_Comm comm);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_ROUNDS_H_
