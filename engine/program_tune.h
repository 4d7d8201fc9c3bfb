// A tune request whose expr is a program of several statements (ir/statement_program.h):
// read into the program tuner's options (search/program_tuner.h) — the mesh or rank
// count, the machine numbers and the search's settings as for one statement — run, and
// answered as a TuneResult whose `program` holds the schedules. Shared by the CLI's
// in-process backend (and, later, the daemon).
#ifndef MESHTUNE_ENGINE_PROGRAM_TUNE_H_
#define MESHTUNE_ENGINE_PROGRAM_TUNE_H_

#include <functional>

#include "absl/status/statusor.h"
#include "engine/backend.h"
#include "engine/tune_options.h"
#include "proto/meshtune.pb.h"
#include "search/runner.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {

// Tunes the program `request.problem` states, measuring its programs under MPI with `mpi`
// unless the request measures nothing (model_only, top_k 0), polling `cancelled` (may be
// empty), telling `progress` (may be empty) after each statement's search, around each
// measured program and at the end. InvalidArgument for a malformed program (the
// statement's number in the message), given layouts or --in-place (not for programs yet)
// and the request's other bad fields (as for one statement); the program tuner's errors.
// The result's `program` is set, and its `record` is the winner as one record of the
// program's workload (storage/workload.h: the program up to renaming, on the mesh or rank
// count, with the profile): its trace a program trace (ir/program_trace.h), in the
// request's names. With `db`, the record is stored as a tune stores one (when it verified,
// or when nothing was measured): `stored` and the record's id are set; a database error
// becomes a warning "the result was not stored in the tuning database: ...".
absl::StatusOr<v1::TuneResult> RunProgramTune(const v1::TuneRequest& request,
                                              const MachineNumbers& numbers,
                                              const search::MpiRunnerOptions& mpi,
                                              const std::function<bool()>& cancelled,
                                              storage::TuningDb* db = nullptr,
                                              const TuneProgressFn& progress = nullptr);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_PROGRAM_TUNE_H_
