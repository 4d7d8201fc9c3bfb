// Measurement on the application's own ranks, for Plan's measure mode: no mpirun, no
// worker process. Rank 0 runs the tuner (search/tuner.h) with a CommRunner; every other
// rank of the communicator calls ServeCandidates, which runs what rank 0's CommRunner
// sends until Finish. For each candidate rank 0 sends its job (runtime/launch/worker_job.h: the
// statement as stated and the Program the tuner's checker validated, a program's statements
// each so, or ScaLAPACK's GEMM on a grid) and the first mesh.Ranks() (grid) ranks run it through
// runtime::RunJob (verified against the reference, timed in samples, as the worker does; several
// candidates side by side in rounds, runtime/launch/rounds.h); the rest stay idle. No rank judges
// or lowers a candidate.
//
// A candidate whose ranks cannot hold their data is not run (runtime/launch/memory_fit.h, counting
// the ranks that share rank 0's node), as under mpirun. A candidate cannot be killed
// in-process: a hang hangs the application (the MPI runner's timeout does not apply).
// Thread-compatible; collective over the communicator.
#ifndef MESHTUNE_MESHTUNE_COMM_RUNNER_H_
#define MESHTUNE_MESHTUNE_COMM_RUNNER_H_

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/meshtune.pb.h"
#include "runtime/executor.h"
#include "runtime/launch/worker_job.h"
#include "search/runner.h"

namespace meshtune {

// Rank 0's runner; `options` are the measurement settings every candidate runs with.
class CommRunner final : public search::Runner {
 public:
  // `library`: the tuner may time ScaLAPACK's GEMM here too (measures_library).
  CommRunner(MPI_Comm comm, runtime::ExecOptions options, bool library);
  // Calls Finish when it has not been called.
  ~CommRunner() override;
  CommRunner(const CommRunner&) = delete;
  CommRunner& operator=(const CommRunner&) = delete;

  bool measures() const override { return true; }
  // Sends `input`'s job to every rank, runs it here, returns rank 0's view:
  // its samples and their median when verified; the error of the lowest failing rank
  // otherwise; "not run: ..." when it does not fit in memory.
  search::CandidateRun Run(const search::MeasureInput& input) override;
  // Whether the library is measured beside the schedules, as under mpirun.
  bool measures_library() const override { return library_; }
  // ScaLAPACK's GEMM on input.config's grid, sent and run as Run's candidates are.
  search::CandidateRun RunLibrary(const search::LibraryInput& input) override;
  // The items of one rank count side by side in rounds (runtime/launch/rounds.h; one after
  // another when the application's MPI gives less than MPI_THREAD_SERIALIZED), at least
  // options.reps rounds; those that do not all fit in memory at once one at a time. A
  // program of several statements runs as one job (runtime::WorkerJob::later).
  std::vector<search::CandidateRun> RunSideBySide(const std::vector<search::MeasureItem>& items,
                                                  double budget_s) override;
  // Releases the ranks in ServeCandidates. Idempotent.
  void Finish();

 private:
  // Sends `jobs` (of one rank count) to every rank and runs them here, side by side within
  // `budget_s` (0: a minute) when there are several: rank 0's view of each.
  std::vector<search::CandidateRun> Serve(const std::vector<runtime::WorkerJob>& jobs,
                                          double budget_s);
  // A run's stats as the tuner reads them.
  static search::CandidateRun RunOf(const runtime::RunStats& stats);
  // "not run: ..." when `ranks` ranks holding `footprint` each do not fit in memory.
  std::optional<std::string> Unfit(const ir::Footprint& footprint, int64_t ranks) const;
  // The job of `item`; nullopt with refused->error set when it cannot run here.
  std::optional<runtime::WorkerJob> JobOf(const search::MeasureItem& item,
                                          search::CandidateRun* refused) const;

  MPI_Comm comm_;
  runtime::ExecOptions options_;
  bool library_;
  int node_ranks_ = 1;  // ranks of the communicator on rank 0's node
  bool finished_ = false;
};

// Every rank but 0: runs the candidates rank 0's CommRunner sends until it finishes.
void ServeCandidates(MPI_Comm comm);

}  // namespace meshtune

#endif  // MESHTUNE_MESHTUNE_COMM_RUNNER_H_
