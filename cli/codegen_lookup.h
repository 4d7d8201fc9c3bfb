// Where `meshtune codegen --lookup` (and `--estimate`) takes its schedule from: the tuning
// database, a wisdom file (--wisdom FILE: no database and no home directory touched, as a
// hermetic build needs), or a deterministic model-only estimate with the built-in machine
// numbers (--estimate), on a miss or instead of a lookup.
#ifndef MESHTUNE_CLI_CODEGEN_LOOKUP_H_
#define MESHTUNE_CLI_CODEGEN_LOOKUP_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend.h"
#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// How codegen finds a schedule for a workload.
struct ScheduleSource {
  bool lookup = false;    // --lookup: the workload's best record
  std::string wisdom;     // --wisdom FILE: look it up in this file instead of the database
  bool estimate = false;  // --estimate: on a miss (or without --lookup, instead) estimate it
};

// The record whose trace and mesh codegen uses for `workload` (problem, mesh or ranks,
// profile; mesh.mem_per_rank is passed on): the best of the wisdom file `source.wisdom` or,
// without one, of `backend`'s database; with `source.estimate`, a model-only estimate
// (engine/estimate.h) when that lookup finds nothing (`warn` is told, naming the miss) or
// when `source.lookup` is false. A miss without --estimate is NotFound "no tuning record
// for WORKLOAD in wisdom file FILE; run: COMMAND" with TuneCommand's command (from the
// database: engine::Lookup's message). Other errors as they come (a bad workload is
// InvalidArgument).
absl::StatusOr<v1::Record> FindSchedule(const v1::LookupRequest& workload,
                                        const ScheduleSource& source, engine::Backend& backend,
                                        const std::function<void(const std::string&)>& warn);

// The shell commands that add a tuned record of `workload` to the wisdom file `wisdom`,
// copy-pasteable (the expression in single quotes, other words quoted when they need it):
//   meshtune records import W && meshtune tune --expr 'E' --extents X --mesh M
//   [--dtype f64] [--profile P] && meshtune records export > W
// (--ranks N instead of --mesh for a rank count). The import first keeps what W holds
// when the database did not.
std::string TuneCommand(const v1::LookupRequest& workload, const std::string& wisdom);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_CODEGEN_LOOKUP_H_
