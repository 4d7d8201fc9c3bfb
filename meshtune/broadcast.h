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

}  // namespace meshtune

#endif  // MESHTUNE_MESHTUNE_BROADCAST_H_
