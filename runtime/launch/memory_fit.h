// Whether one run of a schedule fits in memory, checked before anything is launched: a
// run whose ranks cannot hold their shards and transfer buffers would only end with every
// worker aborting on std::bad_alloc. Used by `meshtune run` and by the tuner's MPI
// measurements. Stateless; thread-safe.
#ifndef MESHTUNE_RUNTIME_LAUNCH_MEMORY_FIT_H_
#define MESHTUNE_RUNTIME_LAUNCH_MEMORY_FIT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "ir/footprint.h"
#include "runtime/launch/launcher.h"

namespace meshtune::runtime {

// This machine's physical memory in bytes (sysconf(_SC_PHYS_PAGES) * page size); 0 when
// unknown. Physical memory rather than /proc/meminfo's MemAvailable: the check refuses
// only what can never fit, and gives the same answer from one moment to the next (a run
// that fits but finds the memory taken fails as a run, with its error).
int64_t MachineMemoryBytes();

// How many of `ranks` ranks `options` starts on this machine: all of them for mpirun
// without a hostfile or extra launcher arguments; otherwise the placement is the
// launcher's (a cluster), and 1 is assumed: each rank's own need is still checked.
int64_t RanksOnThisMachine(int64_t ranks, const LaunchOptions& options);

// OK when `ranks` ranks that each hold `each` (ir::ComputeFootprint of the judged
// schedule: shards plus transfer buffers) fit in `machine_bytes` (0: unknown, always OK),
// counting the ranks `options` starts on this machine. InvalidArgument otherwise, e.g. "each rank
// needs 48 GiB (shards 48 GiB, transfer buffers 2.5 MiB), 192 GiB for the 4 ranks on this machine,
// but it has 23.54 GiB of memory; use smaller extents, or more ranks on more machines
// (--hostfile)".
absl::Status CheckRunFitsMemory(const ir::Footprint& each, int64_t ranks,
                                const LaunchOptions& options,
                                int64_t machine_bytes = MachineMemoryBytes());

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_MEMORY_FIT_H_
