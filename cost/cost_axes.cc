#include "cost/cost_axes.h"

namespace meshtune::cost {

using codegen::Program;

int64_t NodeRanks(const Program& p, const CostParams& params) {
  for (size_t a = 0; a < p.axis_names.size(); ++a) {
    if (p.axis_names[a] != "node") continue;
    int64_t inner = 1;
    for (size_t b = a + 1; b < p.axis_sizes.size(); ++b) inner *= p.axis_sizes[b];
    return inner;
  }
  return params.node_ranks;
}

std::vector<bool> OuterAxes(const Program& p, const CostParams& params) {
  std::vector<bool> outer(p.axis_sizes.size(), false);
  const int64_t node = NodeRanks(p, params);
  if (node <= 0 || (params.alpha_node == 0 && params.beta_node == 0)) return outer;
  int64_t stride = 1;  // of the axis, row-major (the last fastest)
  for (size_t a = p.axis_sizes.size(); a-- > 0;) {
    const int64_t span = stride * p.axis_sizes[a];
    // Inside a node when every run of `span` ranks it moves along lies in one node.
    outer[a] = p.axis_sizes[a] > 1 && node % span != 0;
    stride = span;
  }
  return outer;
}

}  // namespace meshtune::cost
