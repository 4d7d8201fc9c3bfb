// meshtune_worker: one rank of an MPI run of a schedule. mpirun starts P of these.
//
// Every rank reads the job file the launcher wrote (meshtune.v1.WorkerJobs: each job the
// statement as the user stated it and the Program already judged, lowered and
// translation-validated), runs the Program through the executor (or, for a library job,
// ScaLAPACK's GEMM: runtime/library/library_gemm.h) and checks the output against the statement —
// several jobs side by side in rounds (runtime/launch/rounds.h); rank 0 prints one JSON line per
// job, in order (meshtune.v1.RunResult in protobuf's JSON mapping). A rank neither
// judges nor lowers: the worker links no isl. Failures are reported in that line, never by
// a crash of the worker; a worker dies with its launcher (PR_SET_PDEATHSIG).
#include <mpi.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "runtime/launch/rounds.h"
#include "runtime/launch/run_job.h"
#include "runtime/launch/run_result.h"
#include "runtime/launch/worker_job.h"

namespace {

// Rank 0 prints the one result line: meshtune.v1.RunResult in protobuf's JSON mapping.
void Report(int rank, const meshtune::runtime::RunStats& m) {
  if (rank == 0) std::cout << meshtune::runtime::RunResultLine(m) << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Jobs side by side run in threads that take turns calling MPI (runtime/launch/rounds.h).
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string job_file;
  CLI::App app{"meshtune_worker: one rank of a schedule run"};
  app.add_option("--job", job_file, "the run: a binary meshtune.v1.WorkerJob")->required();
  meshtune::runtime::RunStats result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    result.error = std::string("bad worker arguments: ") + e.what();
    Report(rank, result);
    MPI_Finalize();
    return 0;
  }
  absl::StatusOr<meshtune::runtime::WorkerJobSet> set = meshtune::runtime::ReadWorkerJobs(job_file);
  if (!set.ok()) {
    result.error = std::string(set.status().message());
    Report(rank, result);
    MPI_Finalize();
    return 0;
  }
  for (meshtune::runtime::WorkerJob& job : set->jobs) {
    meshtune::runtime::ExecOptions& options = job.options;
    if (options.inject_fault == "crash" && rank == size - 1) std::abort();
    if (options.inject_fault == "hang" && rank == size - 1) {
      while (true) pause();
    }
    options.reps = std::max(1, options.reps);
    options.warmup = std::max(0, options.warmup);
  }
  if (set->jobs.size() == 1) {
    Report(rank, meshtune::runtime::RunJob(set->jobs[0], MPI_COMM_WORLD));
  } else {
    for (const meshtune::runtime::RunStats& stats :
         meshtune::runtime::RunJobsInRounds(set->jobs, set->rounds, MPI_COMM_WORLD)) {
      Report(rank, stats);
    }
  }
  MPI_Finalize();
  return 0;
}
