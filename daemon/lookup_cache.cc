#include "daemon/lookup_cache.h"

#include <algorithm>
#include <utility>

#include "engine/records.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace meshtune::daemon {

namespace {

std::string Key(const v1::LookupRequest& request) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.SerializeToCodedStream(&coded);
  }
  return out;
}

bool Keep(const absl::Status& s) {
  return s.ok() || s.code() == absl::StatusCode::kNotFound ||
         s.code() == absl::StatusCode::kInvalidArgument;
}

}  // namespace

std::optional<absl::StatusOr<v1::LookupResponse>> LookupCache::FreshHit(const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (absl::Now() >= next_check_) return std::nullopt;
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  ++hits_;
  return it->second;
}

absl::StatusOr<v1::LookupResponse> LookupCache::Lookup(storage::TuningDb& db,
                                                       const v1::LookupRequest& request) {
  if (request.nearest()) return engine::Lookup(db, request);  // see the header
  std::string key = Key(request);
  if (std::optional<absl::StatusOr<v1::LookupResponse>> hit = FreshHit(key)) return *std::move(hit);
  int64_t invalidations = 0;
  {
    absl::MutexLock lock(&mu_);
    invalidations = invalidations_;
  }
  const absl::Time read_at = absl::Now();
  const absl::StatusOr<int64_t> generation = db.Generation();
  if (!generation.ok()) return engine::Lookup(db, request);
  {
    absl::MutexLock lock(&mu_);
    if (*generation != generation_) {
      entries_.clear();
      generation_ = *generation;
    }
    // Trust this read for `recheck_` unless a write was announced since it began.
    if (invalidations == invalidations_) next_check_ = std::max(next_check_, read_at + recheck_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      ++hits_;
      return it->second;
    }
  }
  absl::StatusOr<v1::LookupResponse> answer = engine::Lookup(db, request);
  if (Keep(answer.status())) {
    absl::MutexLock lock(&mu_);
    if (generation_ == *generation && invalidations == invalidations_) {  // not dropped meanwhile
      if (entries_.size() >= capacity_) entries_.clear();
      entries_.emplace(std::move(key), answer);
    }
  }
  return answer;
}

void LookupCache::Invalidate() {
  absl::MutexLock lock(&mu_);
  ++invalidations_;
  next_check_ = absl::InfinitePast();
}

int64_t LookupCache::hits() const {
  absl::MutexLock lock(&mu_);
  return hits_;
}

}  // namespace meshtune::daemon
