// A scatter plot as one self-contained SVG element (no scripts, no external references), for
// predicted against measured times: `meshtune fidelity --svg` and the tuning report.
#ifndef MESHTUNE_ENGINE_REPORT_SCATTER_SVG_H_
#define MESHTUNE_ENGINE_REPORT_SCATTER_SVG_H_

#include <string>
#include <vector>

namespace meshtune::engine {

struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;  // the point's tooltip (an SVG <title>)
  std::string group;  // points of one group share a colour; the legend lists the groups
};

struct ScatterOptions {
  std::string title, x_label, y_label;
  bool diagonal = true;  // draw y = x (both axes then share one range)
};

// The SVG of `points` on logarithmic axes with ticks at 1, 2 and 5 times powers of ten, one
// circle per point and a legend of the groups in order of first appearance. Points with a
// non-positive or non-finite coordinate are left out (and counted in a note under the
// plot); with none left, the axes span 1e-3 to 1. Text is XML-escaped.
std::string ScatterSvg(const std::vector<ScatterPoint>& points, const ScatterOptions& options);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REPORT_SCATTER_SVG_H_
