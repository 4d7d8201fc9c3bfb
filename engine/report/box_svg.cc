#include "engine/report/box_svg.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/report/html_page.h"
#include "runtime/library/gemm_form.h"

namespace meshtune::engine {

namespace {

constexpr double kWidth = 840;
constexpr double kLabels = 170;  // the label column, left of the plot
constexpr double kStats = 260;   // the n and median column, right of the plot
constexpr double kTop = 10, kRowHeight = 30, kBottom = 96;
constexpr double kMinBoxPx = 2;  // a box of no width (one sample, or all equal) still shows
constexpr size_t kMaxReason = 90;
constexpr const char* kScheduleColour = "#1f77b4";
constexpr const char* kLibraryColour = "#ff7f0e";

// One row of the plot.
struct BoxRow {
  enum Kind { kBox, kMedianOnly, kUnmeasured };
  Kind kind = kUnmeasured;
  std::string label;
  bool library = false;
  bool answer = false;
  const v1::TimeSample* sample = nullptr;  // kBox
  double median = 0;                       // kBox, kMedianOnly
  std::string reason;                      // kUnmeasured
};

bool Plottable(double v) { return std::isfinite(v) && v > 0; }

bool SampleDrawable(const v1::TimeSample& s) {
  return s.n() > 0 && Plottable(s.min_s()) && Plottable(s.max_s()) && s.min_s() <= s.q1_s() &&
         s.q1_s() <= s.median_s() && s.median_s() <= s.q3_s() && s.q3_s() <= s.max_s() &&
         Plottable(s.ci_low_s()) && Plottable(s.ci_high_s());
}

// The row of a run: verified and plausible with a sample, a box; without one, its median.
BoxRow RowOf(std::string label, bool library, bool verified, const std::string& implausible,
             const std::string& error, bool has_measured, double measured_s,
             const v1::TimeSample& sample) {
  BoxRow row;
  row.label = std::move(label);
  row.library = library;
  if (!implausible.empty()) {
    row.reason = implausible;
  } else if (!verified) {
    row.reason = absl::StrCat("failed: ", error.empty() ? "did not verify" : error);
  } else if (SampleDrawable(sample)) {
    row.kind = BoxRow::kBox;
    row.sample = &sample;
    row.median = sample.median_s();
  } else if (has_measured && Plottable(measured_s)) {
    row.kind = BoxRow::kMedianOnly;
    row.median = measured_s;
  } else {
    row.reason = "no time recorded";
  }
  return row;
}

// `s` seconds for a reader: "15.3 ms"; "1.23 s" from 1 s up, "962 µs" below 1 ms.
std::string Duration(double s) {
  if (s >= 1) return absl::StrFormat("%.3g s", s);
  if (s >= 1e-3) return absl::StrFormat("%.3g ms", 1e3 * s);
  return absl::StrFormat("%.3g \u00b5s", 1e6 * s);
}

// "95%" for an interval's level of 0.95 or more (as the legend says), else its own.
std::string Level(double level) {
  return level >= 0.95 ? "95%" : absl::StrFormat("%.0f%%", 100 * level);
}

// The shared time axis: seconds to pixels, and its ticks.
struct TimeAxis {
  bool log = false;
  double lo = 0, hi = 1;  // seconds (log: log10 of them)
  double from = 0, to = 1;
  double factor = 1e3;  // seconds to the unit of the tick labels
  const char* unit = "ms";

  double At(double s) const {
    const double v = log ? std::log10(s) : s;
    return from + (v - lo) / (hi - lo) * (to - from);
  }
};

// The largest of 1, 2 and 5 times a power of ten at most a fifth of `span`.
double Step(double span) {
  const double raw = span / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {5.0, 2.0, 1.0}) {
    if (m * p <= raw) return m * p;
  }
  return p;
}

TimeAxis AxisOver(double smallest, double largest, double from, double to) {
  TimeAxis a;
  a.from = from;
  a.to = to;
  a.log = largest / smallest > 10;
  if (a.log) {
    const double lo = std::log10(smallest), hi = std::log10(largest);
    const double pad = std::max(0.05 * (hi - lo), 0.05);
    a.lo = lo - pad;
    a.hi = hi + pad;
  } else {
    double span = largest - smallest;
    if (span <= 0) span = 0.2 * largest;
    a.lo = std::max(0.0, smallest - 0.08 * span);
    a.hi = largest + 0.08 * span;
  }
  const double top = a.log ? std::pow(10.0, a.hi) : a.hi;
  if (top >= 1) {
    a.factor = 1;
    a.unit = "s";
  } else if (top < 1e-3) {
    a.factor = 1e6;
    a.unit = "\u00b5s";
  }
  return a;
}

// The ticks of `a` in seconds, each with its label in a.unit.
std::vector<std::pair<double, std::string>> Ticks(const TimeAxis& a) {
  std::vector<std::pair<double, std::string>> out;
  if (a.log) {
    const bool sparse = a.hi - a.lo > 4;  // many decades: powers of ten only
    for (int e = static_cast<int>(std::floor(a.lo)); e <= static_cast<int>(std::ceil(a.hi)); ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (sparse && m != 1.0) continue;
        const double v = m * std::pow(10.0, e);
        if (std::log10(v) < a.lo || std::log10(v) > a.hi) continue;
        out.push_back({v, absl::StrFormat("%g", v * a.factor)});
      }
    }
    return out;
  }
  const double step = Step(a.hi - a.lo);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step * a.factor))));
  for (double i = std::ceil(a.lo / step); i * step <= a.hi; i += 1) {
    out.push_back({i * step, absl::StrFormat("%.*f", decimals, i * step * a.factor)});
  }
  return out;
}

std::string Shorten(const std::string& s) {
  return s.size() <= kMaxReason ? s : s.substr(0, kMaxReason - 1) + "\u2026";
}

// What the marks of `rows` mean, a line each.
std::vector<std::string> Legend(const std::vector<BoxRow>& rows) {
  const auto any = [&](BoxRow::Kind kind) {
    return std::any_of(rows.begin(), rows.end(), [&](const BoxRow& r) { return r.kind == kind; });
  };
  std::vector<std::string> out;
  if (any(BoxRow::kBox)) {
    out.push_back(
        "whiskers: fastest to slowest run; box: quartiles; dark band: the median's 95% interval; "
        "bar: the median");
  }
  if (any(BoxRow::kMedianOnly)) out.push_back("diamond: a median alone (no sample kept)");
  out.push_back("highlighted: the answer");
  return out;
}

std::string Attr(double s) { return absl::StrFormat("%.6g", s); }

// The axis, its ticks and the legend under the rows (a note instead when nothing was
// measured: `largest` 0), the axis at height `axis_y`.
std::string AxisSvg(const TimeAxis& axis, double axis_y, double largest,
                    const std::vector<BoxRow>& rows) {
  std::string svg;
  if (largest <= 0) {
    absl::StrAppendFormat(&svg,
                          "<text class=\"note\" x=\"20\" y=\"%g\">no measured time to "
                          "draw</text>\n",
                          axis_y + 20);
  } else {
    for (const auto& [v, text] : Ticks(axis)) {
      absl::StrAppendFormat(&svg,
                            "<line class=\"grid\" x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" "
                            "stroke=\"#e4e4e4\"/><text class=\"tick\" x=\"%.1f\" y=\"%g\" "
                            "text-anchor=\"middle\">%s</text>\n",
                            axis.At(v), kTop, axis.At(v), axis_y, axis.At(v), axis_y + 16, text);
    }
    absl::StrAppendFormat(&svg,
                          "<line class=\"axis\" x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" "
                          "stroke=\"#888\"/>\n<text class=\"axis-title\" x=\"%g\" y=\"%g\" "
                          "text-anchor=\"middle\">time of one run, %s%s</text>\n",
                          axis.from, axis_y, axis.to, axis_y, (axis.from + axis.to) / 2,
                          axis_y + 34, axis.unit, axis.log ? " (logarithmic)" : "");
    const std::vector<std::string> legend = Legend(rows);
    for (size_t i = 0; i < legend.size(); ++i) {
      absl::StrAppendFormat(&svg,
                            "<text class=\"legend\" x=\"10\" y=\"%g\" fill=\"#555\">%s</text>\n",
                            axis_y + 56 + 15 * static_cast<double>(i), HtmlEscape(legend[i]));
    }
  }
  return svg;
}

// The marks of a row with a sample, centred at height `cy`: whiskers from the fastest to
// the slowest, the quartiles' box, the median's interval and the median.
std::string SampleMarks(const BoxRow& row, const TimeAxis& axis, double cy, const char* colour,
                        const std::string& label, const std::string& answer_note) {
  std::string svg;
  const v1::TimeSample& s = *row.sample;
  // Each rect at least kMinBoxPx wide, centred on what it spans.
  auto span = [&](double a, double b) {
    double x0 = axis.At(a), x1 = axis.At(b);
    if (x1 - x0 < kMinBoxPx) {
      const double mid = (x0 + x1) / 2;
      x0 = mid - kMinBoxPx / 2;
      x1 = mid + kMinBoxPx / 2;
    }
    return std::make_pair(x0, x1 - x0);
  };
  const auto [iqr_x, iqr_w] = span(s.q1_s(), s.q3_s());
  const auto [ci_x, ci_w] = span(s.ci_low_s(), s.ci_high_s());
  const double xmin = axis.At(s.min_s()), xmax = axis.At(s.max_s());
  const double xmed = axis.At(s.median_s());
  absl::StrAppendFormat(
      &svg,
      "<title>%s: %d runs, fastest %s, quartiles %s and %s, median %s, slowest %s; the "
      "median's %s interval %s to %s</title>\n",
      label, s.n(), Duration(s.min_s()), Duration(s.q1_s()), Duration(s.q3_s()),
      Duration(s.median_s()), Duration(s.max_s()), Level(s.ci_level()), Duration(s.ci_low_s()),
      Duration(s.ci_high_s()));
  absl::StrAppendFormat(&svg,
                        "<line class=\"whisker\" x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" "
                        "stroke=\"%s\"/>\n",
                        xmin, cy, xmax, cy, colour);
  for (double x : {xmin, xmax}) {
    absl::StrAppendFormat(&svg,
                          "<line class=\"whisker-end\" x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" "
                          "y2=\"%g\" stroke=\"%s\"/>\n",
                          x, cy - 5, x, cy + 5, colour);
  }
  absl::StrAppendFormat(&svg,
                        "<rect class=\"iqr\" x=\"%.1f\" y=\"%g\" width=\"%.1f\" height=\"16\" "
                        "fill=\"%s\" fill-opacity=\"0.3\" stroke=\"%s\"/>\n",
                        iqr_x, cy - 8, iqr_w, colour, colour);
  absl::StrAppendFormat(&svg,
                        "<rect class=\"median-ci\" x=\"%.1f\" y=\"%g\" width=\"%.1f\" "
                        "height=\"6\" fill=\"%s\" fill-opacity=\"0.85\"/>\n",
                        ci_x, cy - 3, ci_w, colour);
  absl::StrAppendFormat(&svg,
                        "<line class=\"median\" x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" "
                        "stroke=\"#222\" stroke-width=\"2\"/>\n",
                        xmed, cy - 10, xmed, cy + 10);
  absl::StrAppendFormat(&svg,
                        "<text class=\"row-stats\" x=\"%g\" y=\"%g\">n %d, median %s%s</text>\n",
                        axis.to + 10, cy + 4, s.n(), Duration(s.median_s()), answer_note);
  return svg;
}

// Row `row` of the plot, its top at `top`.
std::string RowSvg(const BoxRow& row, double top, const TimeAxis& axis) {
  std::string svg;
  const double cy = top + kRowHeight / 2;
  const char* colour = row.library ? kLibraryColour : kScheduleColour;
  const char* kind = row.library ? "library" : "schedule";
  const std::string label = HtmlEscape(row.label);
  const std::string cls = absl::StrCat(row.kind == BoxRow::kBox          ? "box"
                                       : row.kind == BoxRow::kMedianOnly ? "median-only"
                                                                         : "unmeasured",
                                       row.answer ? " answer" : "");
  if (row.kind == BoxRow::kBox) {
    const v1::TimeSample& s = *row.sample;
    absl::StrAppendFormat(&svg,
                          "<g class=\"%s\" data-label=\"%s\" data-kind=\"%s\" data-n=\"%d\" "
                          "data-min=\"%s\" data-q1=\"%s\" data-median=\"%s\" data-q3=\"%s\" "
                          "data-max=\"%s\" data-ci-low=\"%s\" data-ci-high=\"%s\" "
                          "data-ci-level=\"%s\">\n",
                          cls, label, kind, s.n(), Attr(s.min_s()), Attr(s.q1_s()),
                          Attr(s.median_s()), Attr(s.q3_s()), Attr(s.max_s()), Attr(s.ci_low_s()),
                          Attr(s.ci_high_s()), Attr(s.ci_level()));
  } else if (row.kind == BoxRow::kMedianOnly) {
    absl::StrAppendFormat(&svg,
                          "<g class=\"%s\" data-label=\"%s\" data-kind=\"%s\" "
                          "data-median=\"%s\">\n",
                          cls, label, kind, Attr(row.median));
  } else {
    absl::StrAppendFormat(&svg,
                          "<g class=\"%s\" data-label=\"%s\" data-kind=\"%s\" "
                          "data-reason=\"%s\">\n",
                          cls, label, kind, HtmlEscape(row.reason));
  }
  if (row.answer) {
    absl::StrAppendFormat(&svg,
                          "<rect class=\"answer-band\" x=\"0\" y=\"%g\" width=\"%g\" "
                          "height=\"%g\" fill=\"#ffe680\" fill-opacity=\"0.45\"/>\n",
                          top, kWidth, kRowHeight);
  }
  absl::StrAppendFormat(&svg,
                        "<text class=\"row-label\" x=\"%g\" y=\"%g\" text-anchor=\"end\"%s%s>"
                        "%s</text>\n",
                        kLabels - 10, cy + 4, row.answer ? " font-weight=\"bold\"" : "",
                        row.kind == BoxRow::kUnmeasured ? " fill=\"#888\"" : "", label);
  const std::string answer_note = row.answer ? ", the answer" : "";
  if (row.kind == BoxRow::kBox) {
    absl::StrAppend(&svg, SampleMarks(row, axis, cy, colour, label, answer_note));
  } else if (row.kind == BoxRow::kMedianOnly) {
    const double x = axis.At(row.median);
    absl::StrAppendFormat(
        &svg,
        "<title>%s: median %s (no sample kept)</title>\n<path class=\"median-mark\" d=\"M%.1f "
        "%g l6 6 l-6 6 l-6 -6 z\" fill=\"%s\"/>\n<text class=\"row-stats\" x=\"%g\" y=\"%g\">"
        "median %s, no sample%s</text>\n",
        label, Duration(row.median), x, cy - 6, colour, axis.to + 10, cy + 4, Duration(row.median),
        answer_note);
  } else {
    absl::StrAppendFormat(&svg,
                          "<title>%s: %s</title>\n<text class=\"reason\" x=\"%g\" y=\"%g\" "
                          "fill=\"#888\" font-style=\"italic\">%s</text>\n",
                          label, HtmlEscape(row.reason), kLabels, cy + 4,
                          HtmlEscape(Shorten(row.reason)));
  }
  absl::StrAppend(&svg, "</g>\n");
  return svg;
}

}  // namespace

std::string CandidateLabel(const v1::MeasuredCandidate& m, int place) {
  return absl::StrCat(m.mesh(), " #", place);
}

std::string LibraryLabel(const v1::LibraryRun& l) {
  return absl::StrCat(l.library(), " ", runtime::ConfigText({l.prow(), l.pcol(), l.nb()}));
}

std::string BoxSvg(const v1::TuneSummary& summary, const std::string& answer) {
  std::vector<BoxRow> rows;
  for (int i = 0; i < summary.measurements_size(); ++i) {
    const v1::MeasuredCandidate& m = summary.measurements(i);
    rows.push_back(RowOf(CandidateLabel(m, i + 1), false, m.verified(), m.implausible(), m.error(),
                         m.has_measured_s(), m.measured_s(), m.sample()));
  }
  for (const v1::LibraryRun& l : summary.library()) {
    rows.push_back(RowOf(LibraryLabel(l), true, l.verified(), l.implausible(), l.error(),
                         l.has_measured_s(), l.measured_s(), l.sample()));
  }
  double smallest = INFINITY, largest = 0;
  for (BoxRow& row : rows) {
    row.answer = !answer.empty() && row.label == answer;
    if (row.kind == BoxRow::kBox) {
      smallest = std::min(smallest, row.sample->min_s());
      largest = std::max(largest, row.sample->max_s());
    } else if (row.kind == BoxRow::kMedianOnly) {
      smallest = std::min(smallest, row.median);
      largest = std::max(largest, row.median);
    }
  }
  const double height =
      kTop + kRowHeight * static_cast<double>(std::max<size_t>(rows.size(), 1)) + kBottom;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"boxes\" role=\"img\" aria-label=\"the "
      "measured times of the candidates side by side\" width=\"%g\" height=\"%g\" viewBox=\"0 0 "
      "%g %g\" font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, height, kWidth, height);
  const double axis_y = kTop + kRowHeight * static_cast<double>(rows.size());
  const TimeAxis axis = AxisOver(largest > 0 ? smallest : 1e-3, largest > 0 ? largest : 1e-2,
                                 kLabels, kWidth - kStats);
  absl::StrAppend(&svg, AxisSvg(axis, axis_y, largest, rows));
  for (size_t i = 0; i < rows.size(); ++i) {
    absl::StrAppend(&svg, RowSvg(rows[i], kTop + kRowHeight * static_cast<double>(i), axis));
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace meshtune::engine
