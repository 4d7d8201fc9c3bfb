// What one rank of a schedule holds in memory: its shards and its transfer buffers.
// Computed from a replayed schedule by ir::ComputeFootprint (legality.h); checked against
// a machine's memory before a run (runtime/launch/memory_fit.h).
#ifndef MESHTUNE_IR_FOOTPRINT_H_
#define MESHTUNE_IR_FOOTPRINT_H_

#include <cstdint>

namespace meshtune::ir {

// Per-rank bytes.
struct Footprint {
  int64_t shard_bytes = 0;   // every tensor's local part
  int64_t buffer_bytes = 0;  // every transfer's buffer (both halves of a prefetched one)
  int64_t total() const { return shard_bytes + buffer_bytes; }
};

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_FOOTPRINT_H_
