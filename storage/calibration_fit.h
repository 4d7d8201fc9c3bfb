// Calibration's fit: the alpha-beta-gamma numbers of a hardware profile from the samples
// the calibration job (runtime/launch/calibrate_main.cc) measured.
#ifndef MESHTUNE_STORAGE_CALIBRATION_FIT_H_
#define MESHTUNE_STORAGE_CALIBRATION_FIT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"

namespace meshtune::storage {

// The profile `measured` (the calibration job's output: ranks, gemm_n and samples) with
// its five numbers fitted, in seconds, bytes and flops:
//   alpha, beta             t = alpha + beta * bytes over the "shift" samples (every rank
//                           exchanging at once), or "pingpong" when a profile has no shift;
//   alpha_coll, beta_coll   t = alpha_coll * log2(ranks) + beta_coll * bytes over "bcast";
//   gamma                   seconds / (2 gemm_n^3) of the one "gemm" sample;
//   overlap                 (G + S - B) / min(G, S) clamped to [0, 1], with G, S and B the
//                           "overlap_gemm", "overlap_shift" and "overlap_both" samples (a
//                           GEMM alone, a ring exchange alone, the exchange in flight
//                           while the GEMM runs); 0 for a profile without them;
//   collectives             per "coll_KIND" sample kind and group size, a line
//                           t = alpha + beta * bytes (a CollectiveFit named KIND);
//   gemm_rates              per "gemm_tile" sample, 2 m n k / seconds;
//   copy_s_per_byte,        the slopes of lines over the "copy" and "add" samples (0 when
//   add_s_per_byte          there are none).
// The tables are rebuilt from the samples (fitting a fitted profile gives the same). The
// lines are least-squares fits in relative error (each sample weighted by 1 / t^2, so
// that the 8-byte latencies count as much as the megabyte transfers) with non-negative
// coefficients: when the free fit makes one negative, it is 0 and the other is refitted
// alone. DataLoss naming the problem when ranks < 2 or gemm_n < 1, a kind has no sample,
// there is not exactly one gemm sample (or one of each overlap sample when any is there), a
// sample's bytes or seconds is not a positive finite number, a collective sample names no
// collective or a group below 2, or a gemm_tile sample has no shape.
absl::StatusOr<v1::HardwareProfile> FitProfile(const v1::HardwareProfile& measured);

// The link between nodes from a link-only calibration job (`meshtune_calibrate
// --link-only`, its "pingpong" samples between rank 0 and the first rank of another node):
// beta the slope over the largest messages (the link's steady rate, past any burst),
// alpha the median time of the messages of at most 1 KiB, with `node_ranks` and `source`
// as given.
// DataLoss naming the problem when there is no "pingpong" sample or one is not positive
// and finite.
absl::StatusOr<v1::InterNode> FitInterNode(const v1::HardwareProfile& measured, int64_t node_ranks,
                                           const std::string& source);

}  // namespace meshtune::storage

#endif  // MESHTUNE_STORAGE_CALIBRATION_FIT_H_
