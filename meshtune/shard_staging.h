// Internal to the plan (meshtune/plan.h): the plan's own storage for shards whose schedule
// block is larger than the elements they hold, so that no call writes outside the arrays an
// application was told to provide.
//
// Where a schedule's blocks do not divide an extent, every rank stores its full block (the
// storage) though it holds fewer elements (its extents: a short last block, or none past
// the end), and the schedule may read and write the whole block. An application that passes
// arrays of the extents alone (the plan's default contract) then runs through storage the
// plan keeps: what the schedule reads is copied in before the run, what it writes copied
// back after, each within the extents. A shard whose storage is its extents runs in place,
// at no cost. Not thread-safe (one run at a time, as the plan).
#ifndef MESHTUNE_MESHTUNE_SHARD_STAGING_H_
#define MESHTUNE_MESHTUNE_SHARD_STAGING_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"

namespace meshtune::internal {

// One tensor's shard on this rank: as the application's array holds it (`extents`, dense at
// `array_strides`) and as the schedule stores it (`storage`, at `storage_strides`; every
// extent at most the storage's), and what the schedule does with it.
struct StagedShard {
  std::vector<int64_t> extents, array_strides;
  std::vector<int64_t> storage, storage_strides;
  bool read = true;      // the schedule reads its values (an input, a `+=` output)
  bool written = false;  // the schedule writes it (an output or an intermediate)
};

class ShardStaging {
 public:
  ShardStaging() = default;
  // One shard per tensor (the plan's tensors() order), of `element_bytes`-byte elements.
  ShardStaging(std::vector<StagedShard> shards, int element_bytes);

  // Whether tensor t's schedule storage holds more elements than its extents: a shard the
  // plan stages unless the application provides the storage.
  bool Staged(size_t t) const;

  // Keeps (true) the plan's own storage of every staged shard from now on, zero-filled, or
  // releases it (false; a run then allocates what it stages). ResourceExhausted "cannot
  // allocate the plan's storage of ragged shards on this rank (N)" when it cannot.
  absl::Status Keep(bool keep);

  // `run` on the pointers the schedule takes: shards[t] itself when `at_storage[t]` (the
  // application's array holds the storage) or the shard is not staged; else the plan's
  // storage, into which what the schedule reads of shards[t] (its extents) is copied before
  // `run`, and from which what it writes is copied back into shards[t] after (when `run`
  // succeeds). Storage not kept is allocated for the call (ResourceExhausted as Keep).
  absl::Status Run(const std::vector<void*>& shards, const std::vector<bool>& at_storage,
                   const std::function<absl::Status(const std::vector<void*>&)>& run);

 private:
  // Tensor t's storage, zero-filled, into `buffer`; ResourceExhausted as Keep.
  absl::Status Allocate(size_t t, std::vector<char>* buffer) const;
  // Copies tensor t's extents from the application's `array` into the storage `stored`
  // (to_storage), or back.
  void Copy(size_t t, void* array, void* stored, bool to_storage) const;

  std::vector<StagedShard> shards_;
  int element_bytes_ = 4;
  std::vector<std::vector<char>> kept_;  // per tensor: the plan's storage, when kept
};

}  // namespace meshtune::internal

#endif  // MESHTUNE_MESHTUNE_SHARD_STAGING_H_
