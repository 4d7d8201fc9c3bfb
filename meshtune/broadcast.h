// One rank's values sent to every rank of a communicator (the plan's collective answers).
#ifndef MESHTUNE_MESHTUNE_BROADCAST_H_
#define MESHTUNE_MESHTUNE_BROADCAST_H_

#include <mpi.h>

#include <string>

#include "absl/status/status.h"

namespace meshtune {

// Rank `root`'s `*s` on every rank of `comm`. Collective.
void BroadcastString(std::string* s, MPI_Comm comm, int root = 0);

// Rank `root`'s `status` (code and message) on every rank of `comm`. Collective.
absl::Status BroadcastStatus(const absl::Status& status, MPI_Comm comm, int root = 0);

// The same on every rank of `comm`: OK when every rank's `mine` is, else the lowest failing
// rank's status, its message after "rank R: ". Collective.
absl::Status FirstFailure(const absl::Status& mine, MPI_Comm comm);

}  // namespace meshtune

#endif  // MESHTUNE_MESHTUNE_BROADCAST_H_
