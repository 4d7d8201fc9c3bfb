#include "meshtune/broadcast.h"

#include <cstdint>

namespace meshtune {

void BroadcastString(std::string* s, MPI_Comm comm) {
  int64_t n = static_cast<int64_t>(s->size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm);
  s->resize(static_cast<size_t>(n));
  if (n > 0) MPI_Bcast(s->data(), static_cast<int>(n), MPI_CHAR, 0, comm);
}

absl::Status BroadcastStatus(const absl::Status& status, MPI_Comm comm) {
  int code = static_cast<int>(status.code());
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  if (code == 0) return absl::OkStatus();
  std::string message(status.message());
  BroadcastString(&message, comm);
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace meshtune
