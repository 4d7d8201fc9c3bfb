#include "meshtune/shard_staging.h"

#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/bytes.h"
#include "runtime/box.h"

namespace meshtune::internal {

ShardStaging::ShardStaging(std::vector<StagedShard> shards, int element_bytes)
    : shards_(std::move(shards)), element_bytes_(element_bytes), kept_(shards_.size()) {}

bool ShardStaging::Staged(size_t t) const {
  return runtime::Elements(shards_[t].storage) > runtime::Elements(shards_[t].extents);
}

absl::Status ShardStaging::Allocate(size_t t, std::vector<char>* buffer) const {
  const int64_t bytes = runtime::Elements(shards_[t].storage) * element_bytes_;
  try {
    buffer->assign(static_cast<size_t>(bytes), 0);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate the plan's storage of ragged shards on this rank (",
                     base::FormatBytes(bytes), ")"));
  }
  return absl::OkStatus();
}

absl::Status ShardStaging::Keep(bool keep) {
  for (size_t t = 0; t < shards_.size(); ++t) {
    if (!keep || !Staged(t)) {
      std::vector<char>().swap(kept_[t]);
    } else if (kept_[t].empty()) {
      if (absl::Status ok = Allocate(t, &kept_[t]); !ok.ok()) return ok;
    }
  }
  return absl::OkStatus();
}

void ShardStaging::Copy(size_t t, void* array, void* stored, bool to_storage) const {
  const StagedShard& s = shards_[t];
  // Nothing held, nothing to copy (a library plan's shards differ from their storage only
  // then; a schedule's are row-major, as runtime::CopyStrided takes them).
  if (runtime::Elements(s.extents) == 0) return;
  const std::vector<int64_t>& from = to_storage ? s.array_strides : s.storage_strides;
  const std::vector<int64_t>& to = to_storage ? s.storage_strides : s.array_strides;
  const void* src = to_storage ? array : stored;
  void* dst = to_storage ? stored : array;
  if (element_bytes_ == 8) {
    runtime::CopyStrided(static_cast<const double*>(src), from, static_cast<double*>(dst), to,
                         s.extents);
  } else {
    runtime::CopyStrided(static_cast<const float*>(src), from, static_cast<float*>(dst), to,
                         s.extents);
  }
}

absl::Status ShardStaging::Run(const std::vector<void*>& shards,
                               const std::vector<bool>& at_storage,
                               const std::function<absl::Status(const std::vector<void*>&)>& run) {
  std::vector<void*> taken = shards;
  std::vector<std::vector<char>> scratch(shards_.size());  // storage not kept, for this call
  std::vector<size_t> staged;
  for (size_t t = 0; t < shards_.size(); ++t) {
    if (at_storage[t] || !Staged(t)) continue;
    std::vector<char>* stored = &kept_[t];
    if (stored->empty()) {
      if (absl::Status ok = Allocate(t, &scratch[t]); !ok.ok()) return ok;
      stored = &scratch[t];
    }
    taken[t] = stored->data();
    if (shards_[t].read) Copy(t, shards[t], taken[t], /*to_storage=*/true);
    staged.push_back(t);
  }
  const absl::Status ran = run(taken);
  if (!ran.ok()) return ran;
  for (size_t t : staged) {
    if (shards_[t].written) Copy(t, shards[t], taken[t], /*to_storage=*/false);
  }
  return absl::OkStatus();
}

}  // namespace meshtune::internal
