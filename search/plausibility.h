// Physics as a guard on measurements: no run can beat the machine. A run's time below the
// floor of what the ranks can do — its flops at the machine's peak GEMM rate for the ranks
// and cores of the job, or the bytes its busiest rank sends at the link's full bandwidth,
// whichever is larger — is a measurement error (a descheduled clock, a batch timed wrong),
// never a result: the tuner measures it again, and when it persists refuses it with the
// reason `implausible_time`. Stateless; thread-safe.
#ifndef MESHTUNE_SEARCH_PLAUSIBILITY_H_
#define MESHTUNE_SEARCH_PLAUSIBILITY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "cost/cost_params.h"
#include "ir/problem.h"

namespace meshtune::search {

// The floor sits this far below the calibrated peak: a calibrated rate is a median at a
// few shapes, and a core may run faster than it did then (turbo, a larger tile).
inline constexpr double kPeakHeadroom = 1.25;
// And this far below the calibrated point-to-point bandwidth (collectives of several
// ranks, single-copy transfers inside a node).
inline constexpr double kBandwidthHeadroom = 2;

// The flops of `problem`: twice its iteration points per product of two operands (a
// multiply and an add), its points for a sum or a single operand.
double ProblemFlops(const ir::Problem& problem);

// The machine's peak in flops per second for a run on `ranks` ranks: the fastest calibrated
// GEMM rate of one core (params.gemm, else gamma with the calibration's ranks and cores)
// times the cores the ranks can use (min(ranks, cores), per node where params.node_ranks
// says ranks fill nodes). nullopt when the profile does not know the machine (built-in
// numbers: no cores recorded).
std::optional<double> PeakFlopsPerSecond(const cost::CostParams& params, int64_t ranks);

// The least time a run of `flops` on `ranks` ranks whose busiest rank sends `bytes_sent`
// bytes can take: max(flops / (kPeakHeadroom * peak), bytes_sent * beta / kBandwidthHeadroom).
// nullopt when the profile does not know the machine.
std::optional<double> FloorSeconds(double flops, int64_t bytes_sent, const cost::CostParams& params,
                                   int64_t ranks);

// "implausible_time: measured 0.0012 s, below the floor of 0.0104 s (2.15e+09 flop at the
// peak of 165 GF/s of 4 ranks on 2 cores, with 25% headroom)" when `fastest` (a run's fastest
// sample) is below FloorSeconds; nullopt when it is not, or the floor is unknown.
std::optional<std::string> ImplausibleTime(double fastest, double flops, int64_t bytes_sent,
                                           const cost::CostParams& params, int64_t ranks);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_PLAUSIBILITY_H_
