// Lookup answers remembered while the tuning database does not change: the build-system
// fast path then skips parsing the problem, fingerprinting it, querying the database and
// translating the record into the requester's names.
//
// An entry is keyed by the request's bytes (deterministic serialization), so a renamed
// problem is its own entry (with its own names in the answer). Every entry is dropped when
// TuningDb::Generation moves — a record added by this daemon or by any other writer of the
// file. Found records and NOT_FOUND / INVALID_ARGUMENT answers are kept; other failures
// (I/O, a busy database) are not. Thread-safe.
#ifndef MESHTUNE_SERVICE_LOOKUP_CACHE_H_
#define MESHTUNE_SERVICE_LOOKUP_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/meshtune.pb.h"
#include "search/tuning_db.h"

namespace meshtune::service {

class LookupCache {
 public:
  // Holds at most `capacity` answers; when full, it starts over empty.
  explicit LookupCache(size_t capacity = 4096) : capacity_(capacity) {}

  // service::Lookup(db, request), from memory when the same request was answered since
  // the database last changed.
  absl::StatusOr<v1::LookupResponse> Lookup(search::TuningDb& db, const v1::LookupRequest& request);

  // Answers served from memory so far.
  int64_t hits() const;

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  int64_t generation_ = -1;
  int64_t hits_ = 0;
  absl::flat_hash_map<std::string, absl::StatusOr<v1::LookupResponse>> entries_;
};

}  // namespace meshtune::service

#endif  // MESHTUNE_SERVICE_LOOKUP_CACHE_H_
