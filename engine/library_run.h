// The library call a record's answer can be (meshtune.v1.Record.library: ScaLAPACK's GEMM
// on block-cyclic shards, or a chain of them for a program, runtime/library/library_run.h),
// ready for `meshtune run`.
#ifndef MESHTUNE_ENGINE_LIBRARY_RUN_H_
#define MESHTUNE_ENGINE_LIBRARY_RUN_H_

#include "absl/status/statusor.h"
#include "engine/prepare.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// A run of `library` on `problem` (a statement, or a program of several): the statements as
// stated, the grid's ranks, and the footprint of its block-cyclic shards (each rank's share of
// every matrix, rounded up to whole blocks). InvalidArgument for a bad problem, one not of
// matmul form ("the library serves problems of matmul form only: ...", "the library serves
// programs of matmul form only: statement 2 (Y) is not of matmul form"), given layouts, or a
// grid or block size below 1.
absl::StatusOr<PreparedRun> PrepareLibraryRun(const v1::Problem& problem,
                                              const v1::LibraryRun& library);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_LIBRARY_RUN_H_
