#include "search/plausibility.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace meshtune::search {

double ProblemFlops(const ir::Problem& problem) {
  double points = 1;
  for (const auto& [index, extent] : problem.extents) points *= static_cast<double>(extent);
  const size_t operands = problem.operands.size();
  if (problem.combine == ir::Problem::Combine::kProduct && operands >= 2) {
    return 2 * points * static_cast<double>(operands - 1);
  }
  return points;
}

std::optional<double> PeakFlopsPerSecond(const cost::CostParams& params, int64_t ranks) {
  if (params.cores <= 0 || ranks <= 0) return std::nullopt;
  double per_core = 0;
  const cost::GemmTable& g = params.gemm;
  for (size_t i = 0; i < g.ms().size(); ++i) {
    for (size_t j = 0; j < g.ns().size(); ++j) {
      for (size_t l = 0; l < g.ks().size(); ++l)
        per_core = std::max(per_core, g.Rate(g.ms()[i], g.ns()[j], g.ks()[l]));
    }
  }
  if (per_core == 0 && params.gamma > 0 && params.ranks_per_node > 0) {
    // gamma: one rank's seconds per flop with ranks_per_node ranks busy on `cores` cores.
    per_core = params.ranks_per_node / params.gamma /
               std::min<double>(params.ranks_per_node, params.cores);
  }
  if (!(per_core > 0)) return std::nullopt;
  const int64_t per_node = params.node_ranks > 0 ? params.node_ranks : ranks;
  const int64_t nodes = (ranks + per_node - 1) / per_node;
  const int64_t cores = nodes * std::min<int64_t>(per_node, params.cores);
  return per_core * static_cast<double>(std::min<int64_t>(ranks, cores));
}

std::optional<double> FloorSeconds(double flops, int64_t bytes_sent, const cost::CostParams& params,
                                   int64_t ranks) {
  const std::optional<double> peak = PeakFlopsPerSecond(params, ranks);
  if (!peak) return std::nullopt;
  const double compute = flops / (kPeakHeadroom * *peak);
  const double link = static_cast<double>(bytes_sent) * params.beta / kBandwidthHeadroom;
  return std::max(compute, link);
}

std::optional<std::string> ImplausibleTime(double fastest, double flops, int64_t bytes_sent,
                                           const cost::CostParams& params, int64_t ranks) {
  const std::optional<double> floor = FloorSeconds(flops, bytes_sent, params, ranks);
  if (!floor || !(fastest < *floor)) return std::nullopt;
  const double peak = *PeakFlopsPerSecond(params, ranks);
  const double compute = flops / (kPeakHeadroom * peak);
  const std::string why =
      compute >= *floor
          ? absl::StrFormat(
                "%.3g flop at the peak of %.3g GF/s of %d ranks on %d cores a node, "
                "with %.0f%% headroom",
                flops, peak / 1e9, ranks, params.cores, (kPeakHeadroom - 1) * 100)
          : absl::StrFormat("%d bytes sent by the busiest rank at %.3g GB/s, with %.0fx headroom",
                            bytes_sent, 1e-9 / params.beta, kBandwidthHeadroom);
  return absl::StrFormat("implausible_time: measured %.4g s, below the floor of %.4g s (%s)",
                         fastest, *floor, why);
}

}  // namespace meshtune::search
