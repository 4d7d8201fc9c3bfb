#include "service/lookup_cache.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "service/records.h"

namespace meshtune::service {

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
  return s.ok() || s.code() == absl::StatusCode::kNotFound || s.code() == absl::StatusCode::kInvalidArgument;
}

}  // namespace

absl::StatusOr<v1::LookupResponse> LookupCache::Lookup(search::TuningDb& db, const v1::LookupRequest& request) {
  const absl::StatusOr<int64_t> generation = db.Generation();
  if (!generation.ok()) return service::Lookup(db, request);
  std::string key = Key(request);
  {
    absl::MutexLock lock(&mu_);
    if (*generation != generation_) {
      entries_.clear();
      generation_ = *generation;
    } else if (auto it = entries_.find(key); it != entries_.end()) {
      ++hits_;
      return it->second;
    }
  }
  absl::StatusOr<v1::LookupResponse> answer = service::Lookup(db, request);
  if (Keep(answer.status())) {
    absl::MutexLock lock(&mu_);
    if (generation_ == *generation) {  // not dropped meanwhile
      if (entries_.size() >= capacity_) entries_.clear();
      entries_.emplace(std::move(key), answer);
    }
  }
  return answer;
}

int64_t LookupCache::hits() const {
  absl::MutexLock lock(&mu_);
  return hits_;
}

}  // namespace meshtune::service
