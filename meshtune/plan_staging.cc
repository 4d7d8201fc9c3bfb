// The plan's contract on the application's arrays (Plan::ProvideStorage): shards of the
// extents by default, run through the plan's own storage where the schedule's blocks are
// larger (meshtune/shard_staging.h), or of the whole storage, run in place.
#include <utility>
#include <vector>

#include "meshtune/broadcast.h"
#include "meshtune/plan.h"
#include "meshtune/shard_staging.h"
#include "runtime/bound_statements.h"
#include "runtime/box.h"
#include "runtime/executor.h"
#include "runtime/library/library_run.h"

namespace meshtune {

absl::Status Plan::StageShards() {
  std::vector<internal::StagedShard> shards;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const ShardLayout stored = StoredShard(t);
    internal::StagedShard s;
    s.extents = stored.extents;
    s.storage = stored.storage;
    s.storage_strides = stored.strides;
    // A library plan's column-major strides are its extents' already.
    s.array_strides = library_ != nullptr ? stored.strides : runtime::DenseStrides(stored.extents);
    s.read = reads_[t];
    s.written = writes_[t];
    shards.push_back(std::move(s));
  }
  staging_ = std::make_unique<internal::ShardStaging>(std::move(shards), element_bytes_);
  return FirstFailure(staging_->Keep(!provides_storage_), comm_);
}

absl::Status Plan::ProvideStorage(bool provides) {
  if (absl::Status kept = staging_->Keep(!provides); !kept.ok()) {
    (void)staging_->Keep(!provides_storage_);  // releasing what it took cannot fail
    return kept;
  }
  provides_storage_ = provides;
  return absl::OkStatus();
}

absl::Status Plan::RunStaged(const std::vector<void*>& shards,
                             const std::vector<bool>& at_storage) {
  return staging_->Run(shards, at_storage,
                       [this](const std::vector<void*>& stored) { return RunSchedule(stored); });
}

absl::Status Plan::RunSchedule(const std::vector<void*>& stored) {
  if (library_ != nullptr) {  // the program's tensors in the chain's order
    std::vector<void*> locals(stored.size(), nullptr);
    for (size_t t = 0; t < stored.size(); ++t) locals[library_part_[t]] = stored[t];
    library_->Run(locals, comm_);
    return absl::OkStatus();
  }
  if (statements_ != nullptr) {  // the program's tensors in the bound statements' order
    std::vector<void*> bound(stored.size(), nullptr);
    for (size_t t = 0; t < stored.size(); ++t) bound[statements_->IndexOf(tensors_[t])] = stored[t];
    return statements_->Run(bound);
  }
  if (program_ == nullptr) return absl::OkStatus();  // an idle rank
  return program_->Run(stored);
}

}  // namespace meshtune
