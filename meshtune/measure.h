// Plan's measure mode on rank 0: a tune whose candidates run on the application's own
// ranks (meshtune/comm_runner.h), its winner merged into the wisdom file when one is named.
#ifndef MESHTUNE_MESHTUNE_MEASURE_H_
#define MESHTUNE_MESHTUNE_MEASURE_H_

#include <mpi.h>

#include <string>

#include "absl/status/statusor.h"
#include "meshtune/plan.h"
#include "proto/meshtune.pb.h"
#include "runtime/executor.h"

namespace meshtune {

// The repetitions each candidate runs in measure mode (options.reps after options.warmup),
// the same on every rank.
runtime::ExecOptions MeasureExecOptions(const PlanOptions& options);

// Rank 0 of `comm`, while every other rank is in ServeCandidates (released on every path,
// errors included): tunes `problem` on `options.mesh` (or on the communicator's size,
// with smaller meshes too when options.allow_idle_ranks), measuring options.top_k
// candidates with options.reps repetitions each, verified against the reference. With
// options.wisdom_file, the file's records are the starting database and the winner is
// merged into it (the file is rewritten deterministically, as `records export` writes it;
// created when missing). Returns the winning record. Errors: the tuner's
// (FailedPrecondition when nothing is legal or nothing verified), InvalidArgument for bad
// options, and the wisdom file's read, parse or write errors naming the file.
absl::StatusOr<v1::Record> MeasureOnComm(const v1::Problem& problem, const PlanOptions& options,
                                         MPI_Comm comm);

}  // namespace meshtune

#endif  // MESHTUNE_MESHTUNE_MEASURE_H_
