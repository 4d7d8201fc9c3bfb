#include "engine/report/scatter_svg.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/report/html_page.h"

namespace meshtune::engine {

namespace {

constexpr double kWidth = 560, kHeight = 440;
constexpr double kLeft = 80, kRight = 160, kTop = 40, kBottom = 60;  // margins
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                    "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// `s` cut to 28 characters, marked with an ellipsis when cut (legend entries).
std::string Shorten(const std::string& s) {
  return s.size() <= 28 ? s : s.substr(0, 27) + "\u2026";
}

bool Plottable(double v) { return std::isfinite(v) && v > 0; }

// One logarithmic axis: value to pixel.
struct Axis {
  double lo, hi;    // log10 of the range
  double from, to;  // pixels
  double At(double v) const { return from + (std::log10(v) - lo) / (hi - lo) * (to - from); }
};

// Log10 of the range covering `values`, padded by a tenth of a decade each side.
std::pair<double, double> Range(const std::vector<double>& values) {
  if (values.empty()) return {-3, 0};
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  double a = std::log10(*lo), b = std::log10(*hi);
  if (b - a < 0.2) {
    const double mid = (a + b) / 2;
    a = mid - 0.1;
    b = mid + 0.1;
  }
  return {a - 0.1, b + 0.1};
}

// Tick values at 1, 2 and 5 times powers of ten within the axis.
std::vector<double> Ticks(const Axis& axis) {
  std::vector<double> out;
  for (int e = static_cast<int>(std::floor(axis.lo)); e <= static_cast<int>(std::ceil(axis.hi));
       ++e) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (std::log10(v) >= axis.lo && std::log10(v) <= axis.hi) out.push_back(v);
    }
  }
  return out;
}

}  // namespace

std::string ScatterSvg(const std::vector<ScatterPoint>& points, const ScatterOptions& options) {
  std::vector<const ScatterPoint*> shown;
  std::vector<double> xs, ys;
  for (const ScatterPoint& p : points) {
    if (!Plottable(p.x) || !Plottable(p.y)) continue;
    shown.push_back(&p);
    xs.push_back(p.x);
    ys.push_back(p.y);
  }
  std::pair<double, double> rx = Range(xs), ry = Range(ys);
  if (options.diagonal) {
    rx = ry = {std::min(rx.first, ry.first), std::max(rx.second, ry.second)};
  }
  const Axis x{rx.first, rx.second, kLeft, kWidth - kRight};
  const Axis y{ry.first, ry.second, kHeight - kBottom, kTop};
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"scatter\" width=\"%g\" height=\"%g\" "
      "viewBox=\"0 0 %g %g\" font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(&svg, "<text x=\"", kWidth / 2, "\" y=\"20\" text-anchor=\"middle\" ",
                  "font-size=\"14\">", HtmlEscape(options.title), "</text>\n");
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                        "stroke=\"#888\"/>\n",
                        x.from, y.to, x.to - x.from, y.from - y.to);
  for (double v : Ticks(x)) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n",
                          x.At(v), y.to, x.At(v), y.from, x.At(v), y.from + 16, v);
  }
  for (double v : Ticks(y)) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                          x.from, y.At(v), x.to, y.At(v), x.from - 6, y.At(v) + 4, v);
  }
  if (options.diagonal) {
    absl::StrAppendFormat(&svg,
                          "<line class=\"diagonal\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n",
                          x.from, y.At(std::pow(10.0, x.lo)), x.to, y.At(std::pow(10.0, x.hi)));
  }
  absl::StrAppend(&svg, "<text x=\"", (x.from + x.to) / 2, "\" y=\"", kHeight - 20,
                  "\" text-anchor=\"middle\">", HtmlEscape(options.x_label), "</text>\n");
  absl::StrAppend(&svg, "<text transform=\"translate(20,", (y.from + y.to) / 2,
                  ") rotate(-90)\" text-anchor=\"middle\">", HtmlEscape(options.y_label),
                  "</text>\n");
  std::map<std::string, int> colour;  // group -> colour index, in order of first appearance
  std::vector<std::string> groups;
  for (const ScatterPoint* p : shown) {
    auto [it, added] = colour.emplace(p->group, static_cast<int>(colour.size()) % 8);
    if (added) groups.push_back(p->group);
    absl::StrAppendFormat(&svg,
                          "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" "
                          "fill-opacity=\"0.8\"><title>%s</title></circle>\n",
                          x.At(p->x), y.At(p->y), kColours[it->second], HtmlEscape(p->label));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const double ly = kTop + 10 + 18 * static_cast<double>(i);
    absl::StrAppendFormat(&svg,
                          "<circle cx=\"%g\" cy=\"%g\" r=\"5\" fill=\"%s\"/><text x=\"%g\" "
                          "y=\"%g\">%s</text>\n",
                          x.to + 14, ly, kColours[colour[groups[i]]], x.to + 24, ly + 4,
                          HtmlEscape(Shorten(groups[i])));
  }
  if (shown.size() < points.size()) {
    absl::StrAppend(&svg, "<text x=\"", x.from, "\" y=\"", kHeight - 4, "\">",
                    points.size() - shown.size(), " not shown (no positive value)</text>\n");
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace meshtune::engine
