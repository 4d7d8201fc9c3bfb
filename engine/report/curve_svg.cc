#include "engine/report/curve_svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace meshtune::engine {

namespace {

constexpr double kWidth = 640, kHeight = 360;
constexpr double kLeft = 80, kRight = 150, kTop = 30, kBottom = 50;

struct Series {
  const char* name;
  const char* cls;
  const char* colour;
  std::vector<std::pair<double, double>> xy;  // evaluations, seconds
};

// The largest of 1, 2 and 5 times a power of ten at most a fifth of `span`: a tick step.
double Step(double span) {
  const double raw = std::max(span / 5, 1.0);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {5.0, 2.0, 1.0}) {
    if (m * p <= raw) return m * p;
  }
  return p;
}

}  // namespace

std::string CurveSvg(const std::vector<v1::CurvePoint>& points) {
  Series predicted{"best predicted", "curve-point predicted", "#1f77b4", {}};
  Series measured{"best measured", "curve-point measured", "#d62728", {}};
  for (const v1::CurvePoint& p : points) {
    const double x = static_cast<double>(p.costed() + p.measured());
    if (p.has_best_predicted_s() && p.best_predicted_s() > 0)
      predicted.xy.push_back({x, p.best_predicted_s()});
    if (p.has_best_measured_s() && p.best_measured_s() > 0)
      measured.xy.push_back({x, p.best_measured_s()});
  }
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"curve\" role=\"img\" aria-label=\"the "
      "best predicted and measured time against evaluations\" width=\"%g\" height=\"%g\" "
      "viewBox=\"0 0 %g %g\" font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight, kWidth, kHeight);
  if (predicted.xy.empty() && measured.xy.empty()) {
    absl::StrAppend(&svg, "<text x=\"20\" y=\"40\">no progress with a best time recorded</text>\n",
                    "</svg>\n");
    return svg;
  }
  double xmax = 1, ylo = INFINITY, yhi = 0;
  for (const Series* s : {&predicted, &measured}) {
    for (const auto& [x, y] : s->xy) {
      xmax = std::max(xmax, x);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  }
  double lo = std::log10(ylo), hi = std::log10(yhi);
  if (hi - lo < 0.2) {
    lo -= 0.1;
    hi += 0.1;
  }
  lo -= 0.05;
  hi += 0.05;
  const double x0 = kLeft, x1 = kWidth - kRight, y0 = kHeight - kBottom, y1 = kTop;
  auto px = [&](double x) { return x0 + x / xmax * (x1 - x0); };
  auto py = [&](double y) { return y0 + (std::log10(y) - lo) / (hi - lo) * (y1 - y0); };
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                        "stroke=\"#888\"/>\n",
                        x0, y1, x1 - x0, y0 - y1);
  const double step = Step(xmax);
  for (double v = 0; v <= xmax + 1e-9; v += step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n",
                          px(v), y1, px(v), y0, px(v), y0 + 16, v);
  }
  for (int e = static_cast<int>(std::floor(lo)); e <= static_cast<int>(std::ceil(hi)); ++e) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (std::log10(v) < lo || std::log10(v) > hi) continue;
      absl::StrAppendFormat(&svg,
                            "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                            "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                            x0, py(v), x1, py(v), x0 - 6, py(v) + 4, v);
    }
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">evaluations (costed + "
                        "measured)</text>\n<text transform=\"translate(18,%g) rotate(-90)\" "
                        "text-anchor=\"middle\">best time so far, s</text>\n",
                        (x0 + x1) / 2, kHeight - 12, (y0 + y1) / 2);
  int legend = 0;
  for (const Series* s : {&predicted, &measured}) {
    if (s->xy.empty()) continue;
    std::string line;
    for (const auto& [x, y] : s->xy) absl::StrAppendFormat(&line, "%.1f,%.1f ", px(x), py(y));
    absl::StrAppendFormat(&svg,
                          "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"1.5\"/>\n",
                          line, s->colour);
    for (const auto& [x, y] : s->xy) {
      absl::StrAppendFormat(&svg,
                            "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
                            "<title>%s %.6g s after %g evaluations</title></circle>\n",
                            s->cls, px(x), py(y), s->colour, s->name, y, x);
    }
    const double ly = y1 + 10 + 18 * legend++;
    absl::StrAppendFormat(&svg,
                          "<circle cx=\"%g\" cy=\"%g\" r=\"4\" fill=\"%s\"/><text x=\"%g\" "
                          "y=\"%g\">%s</text>\n",
                          x1 + 14, ly, s->colour, x1 + 24, ly + 4, s->name);
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace meshtune::engine
