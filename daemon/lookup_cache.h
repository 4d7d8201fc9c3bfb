// Lookup answers remembered while the tuning database does not change: the build-system
// fast path then skips parsing the problem, fingerprinting it, querying the database and
// translating the record into the requester's names.
//
// An entry is keyed by the request's bytes (deterministic serialization), so a renamed
// problem is its own entry (with its own names in the answer). Every entry is dropped when
// TuningDb::Generation moves — a record added by this daemon or by any other writer of the
// file. Reading the generation is a SQLite transaction (file locks, the database's mutex),
// so under load it is read at most once per `recheck`: a record another process commits
// is seen within `recheck`; Invalidate() (the daemon's own commits) takes effect at once.
// Found records and NOT_FOUND / INVALID_ARGUMENT answers are kept; other failures
// (I/O, a busy database) are not. Requests with `nearest` are never kept nor served from
// memory: their answers are costed with a hardware profile, whose file can change without
// the database's generation moving. Thread-safe.
#ifndef MESHTUNE_DAEMON_LOOKUP_CACHE_H_
#define MESHTUNE_DAEMON_LOOKUP_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/meshtune.pb.h"
#include "storage/tuning_db.h"

namespace meshtune::daemon {

class LookupCache {
 public:
  // Holds at most `capacity` answers; when full, it starts over empty. The database's
  // generation is read again when `recheck` has passed since the last read (zero: always).
  explicit LookupCache(size_t capacity = 4096, absl::Duration recheck = absl::ZeroDuration())
      : capacity_(capacity), recheck_(recheck) {}

  // engine::Lookup(db, request), from memory when the same request (without nearest) was
  // answered since the database last changed.
  absl::StatusOr<v1::LookupResponse> Lookup(storage::TuningDb& db,
                                            const v1::LookupRequest& request);

  // The next Lookup reads the database's generation again: call after writing to it.
  void Invalidate();

  // Answers served from memory so far.
  int64_t hits() const;

 private:
  // The remembered answer to `key` if the generation was read within `recheck_`.
  std::optional<absl::StatusOr<v1::LookupResponse>> FreshHit(const std::string& key);

  const size_t capacity_;
  const absl::Duration recheck_;
  mutable absl::Mutex mu_;
  int64_t generation_ = -1;
  absl::Time next_check_ = absl::InfinitePast();  // when the generation must be read again
  int64_t invalidations_ = 0;
  int64_t hits_ = 0;
  absl::flat_hash_map<std::string, absl::StatusOr<v1::LookupResponse>> entries_;
};

}  // namespace meshtune::daemon

#endif  // MESHTUNE_DAEMON_LOOKUP_CACHE_H_
