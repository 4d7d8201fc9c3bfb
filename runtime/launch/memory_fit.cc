#include "runtime/launch/memory_fit.h"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/bytes.h"

namespace meshtune::runtime {

int64_t MachineMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<int64_t>(pages) * page_size;
}

int64_t RanksOnThisMachine(int64_t ranks, const LaunchOptions& options) {
  const bool mpirun =
      options.launcher.size() == 1 && options.launcher[0].find("mpirun") != std::string::npos;
  return mpirun && options.hostfile.empty() && options.extra_args.empty() ? ranks : 1;
}

absl::Status CheckRunFitsMemory(const ir::Footprint& f, int64_t ranks, const LaunchOptions& options,
                                int64_t machine_bytes) {
  if (machine_bytes <= 0) return absl::OkStatus();
  // At least one rank: a run without ranks must not divide by zero below.
  const int64_t here = std::max<int64_t>(1, RanksOnThisMachine(ranks, options));
  // f.total() <= 3 * 2^48 elements * 8 bytes, times at most 65536 ranks: compare without
  // multiplying.
  if (f.total() <= machine_bytes / here) return absl::OkStatus();
  const double all = static_cast<double>(f.total()) * static_cast<double>(here);
  const int64_t all_bytes = all >= static_cast<double>(std::numeric_limits<int64_t>::max())
                                ? std::numeric_limits<int64_t>::max()
                                : static_cast<int64_t>(all);
  const std::string need =
      absl::StrCat("each rank needs ", base::FormatBytes(f.total()), " (shards ",
                   base::FormatBytes(f.shard_bytes), ", transfer buffers ",
                   base::FormatBytes(f.buffer_bytes), ")");
  if (here == 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(need, " but this machine has ", base::FormatBytes(machine_bytes),
                     " of memory; use smaller extents or more ranks"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(need, ", ", base::FormatBytes(all_bytes), " for the ", here,
                   " ranks on this machine, but it has ", base::FormatBytes(machine_bytes),
                   " of memory; use smaller extents, or more ranks on more machines "
                   "(--hostfile)"));
}

}  // namespace meshtune::runtime
