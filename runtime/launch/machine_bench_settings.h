// What a machine measurement (runtime/launch/machine_bench.h) times and how often: the flags of
// meshtune_calibrate, and the quick form a tune calibrates with on first use. No MPI here:
// the engine builds the calibration job's command line from it.
#ifndef MESHTUNE_RUNTIME_LAUNCH_MACHINE_BENCH_SETTINGS_H_
#define MESHTUNE_RUNTIME_LAUNCH_MACHINE_BENCH_SETTINGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace meshtune::runtime {

struct MachineBenchSettings {
  std::string dtype = "f32";                            // the GEMMs' element type: f32 or f64
  int64_t max_bytes = 4 << 20;                          // the largest message
  int reps = 50;                                        // timed repetitions per message size
  int gemm_n = 1024;                                    // the n x n x n GEMM
  int gemm_reps = 10;                                   // its timed repetitions
  std::vector<int> tile_grid = {1, 16, 64, 256, 1024};  // GEMM tiles: every m, n, k of it
  double tile_ms = 5;      // least milliseconds of each tile's timed run
  int flush_mib = -1;      // MiB written before each timed transfer; -1: the default
  int peer = 1;            // the ping-pong's other rank
  bool link_only = false;  // only the ping-pong between rank 0 and peer
};

// The quick form (`meshtune calibrate --quick`, and calibration on first use): messages up
// to 1 MiB, 10 repetitions, a GEMM of n = 512, tiles of 1, 64 and 512, 4 MiB cache flush.
inline MachineBenchSettings QuickMachineBench() {
  MachineBenchSettings s;
  s.max_bytes = 1 << 20;
  s.reps = 10;
  s.gemm_n = 512;
  s.gemm_reps = 3;
  s.tile_grid = {1, 64, 512};
  s.tile_ms = 1;
  s.flush_mib = 4;
  return s;
}

// meshtune_calibrate's flags for `s` (without --job-id).
inline std::vector<std::string> MachineBenchArgs(const MachineBenchSettings& s) {
  std::vector<std::string> args = {"--dtype",     s.dtype,
                                   "--max-bytes", absl::StrCat(s.max_bytes),
                                   "--reps",      absl::StrCat(s.reps),
                                   "--gemm-n",    absl::StrCat(s.gemm_n),
                                   "--gemm-reps", absl::StrCat(s.gemm_reps),
                                   "--tile-grid", absl::StrJoin(s.tile_grid, ","),
                                   "--tile-ms",   absl::StrCat(s.tile_ms),
                                   "--peer",      absl::StrCat(s.peer)};
  if (s.flush_mib >= 0) args.insert(args.end(), {"--flush-mib", absl::StrCat(s.flush_mib)});
  if (s.link_only) args.push_back("--link-only");
  return args;
}

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_MACHINE_BENCH_SETTINGS_H_
