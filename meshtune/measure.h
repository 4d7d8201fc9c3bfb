// Plan's measure mode on rank 0: a tune whose candidates run on the application's own
// ranks (meshtune/comm_runner.h), its winner merged into the wisdom file when one is named.
#ifndef MESHTUNE_MESHTUNE_MEASURE_H_
#define MESHTUNE_MESHTUNE_MEASURE_H_

#include <mpi.h>

#include <string>

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"
#include "runtime/executor.h"

namespace meshtune {

// Rank 0 of `comm`, while every other rank is in ServeCandidates (released on every path,
// errors included): the tune `request` asks for (its problem on its mesh, or on its rank
// count, with smaller meshes too when it allows idle ranks; its top_k candidates measured),
// each candidate run with `exec`'s repetitions, verified against the reference — the same
// tune assembly as the CLI's and the daemon's (engine::RunAndStoreTune). With
// `wisdom_file`, the file's records are the starting database and the winner is merged
// into it (the file is rewritten deterministically, as `records export` writes it; created
// when missing). Returns the winning record. Errors: the tuner's (FailedPrecondition when
// nothing is legal or nothing verified), InvalidArgument for a bad request, and the wisdom
// file's read, parse or write errors naming the file. `allow_library`: ScaLAPACK's GEMM is
// timed beside the schedules (CommRunner) and may be the answer (PlanOptions::allow_library).
absl::StatusOr<v1::Record> MeasureOnComm(const v1::TuneRequest& request,
                                         const runtime::ExecOptions& exec,
                                         const std::string& wisdom_file, MPI_Comm comm,
                                         bool allow_library);

}  // namespace meshtune

#endif  // MESHTUNE_MESHTUNE_MEASURE_H_
