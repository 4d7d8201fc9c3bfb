// Nearest lookups: for a workload never tuned, the schedule of a record of the same problem
// at other extents, replayed and re-costed at the requested ones (LookupRequest.nearest).
//
// The candidates are the best records of the workloads that differ from the requested one
// only in their extents (storage::TuningDb::BestOfSameStructure). Each trace is written in
// the requester's names, replayed at the requested extents on its record's mesh (with the
// request's memory budget), lowered and costed by the cost model with the request's
// hardware profile; the answer is the legal one of lowest predicted cost (ties: the nearest
// extents, then the lower record id). Nothing is stored: a transferred schedule was never
// tuned at these extents. Stateless; thread-safe when the database is.
#ifndef MESHTUNE_ENGINE_NEAREST_H_
#define MESHTUNE_ENGINE_NEAREST_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"
#include "storage/tuning_db.h"
#include "storage/workload.h"

namespace meshtune::engine {

// At most this many candidates (the nearest extents first, one per distinct trace and mesh)
// are replayed and costed by one nearest lookup.
inline constexpr int kMaxNearestCandidates = 64;

// The transferred answer to `request` (whose workload is `w`): a LookupResponse with
// `transferred` set (see proto/meshtune.proto), or nullopt when no candidate replays legally
// at the requested extents; `why_none` then says why, as a clause ("no record of this
// problem at other extents", "none of the 2 records of this problem at other extents
// replays legally at m=8,n=8,k=8"). NotFound when a named hardware profile does not exist;
// errors of the database as they are.
absl::StatusOr<std::optional<v1::LookupResponse>> TransferNearest(storage::TuningDb& db,
                                                                  const v1::LookupRequest& request,
                                                                  const storage::Workload& w,
                                                                  std::string* why_none);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_NEAREST_H_
