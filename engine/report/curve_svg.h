// The tuning curve of the tuning report as one self-contained SVG element: the best
// predicted and the best measured time so far against the evaluations so far.
#ifndef MESHTUNE_ENGINE_REPORT_CURVE_SVG_H_
#define MESHTUNE_ENGINE_REPORT_CURVE_SVG_H_

#include <string>
#include <vector>

#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The SVG of `points` (TuneSummary.curve, in order): x is the evaluations, costed plus
// measured candidates; y the seconds on a logarithmic axis. One circle per point with a best
// predicted time (class "curve-point predicted") and one per point with a best measured time
// (class "curve-point measured"), each series joined by a line; a legend. With no point to
// draw, the SVG holds a note saying so.
std::string CurveSvg(const std::vector<v1::CurvePoint>& points);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REPORT_CURVE_SVG_H_
