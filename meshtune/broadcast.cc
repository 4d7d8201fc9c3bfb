#include "meshtune/broadcast.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace meshtune {

void BroadcastString(std::string* s, MPI_Comm comm, int root) {
  int64_t n = static_cast<int64_t>(s->size());
  MPI_Bcast(&n, 1, MPI_INT64_T, root, comm);
  s->resize(static_cast<size_t>(n));
  if (n > 0) MPI_Bcast(s->data(), static_cast<int>(n), MPI_CHAR, root, comm);
}

absl::Status BroadcastStatus(const absl::Status& status, MPI_Comm comm, int root) {
  int code = static_cast<int>(status.code());
  MPI_Bcast(&code, 1, MPI_INT, root, comm);
  if (code == 0) return absl::OkStatus();
  std::string message(status.message());
  BroadcastString(&message, comm, root);
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

absl::Status FirstFailure(const absl::Status& mine, MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int failed = mine.ok() ? size : rank, first = size;
  MPI_Allreduce(&failed, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return absl::OkStatus();
  const absl::Status why = BroadcastStatus(mine, comm, first);
  return absl::Status(why.code(), absl::StrCat("rank ", first, ": ", why.message()));
}

}  // namespace meshtune
