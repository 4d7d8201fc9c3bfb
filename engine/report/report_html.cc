#include "engine/report/report_html.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "base/sample_stats.h"
#include "base/status_macros.h"
#include "codegen/emit/pseudocode.h"
#include "codegen/program.h"
#include "cost/cost_model.h"
#include "engine/job.h"
#include "engine/prepare.h"
#include "engine/records.h"
#include "engine/report/box_svg.h"
#include "engine/report/curve_svg.h"
#include "engine/report/html_page.h"
#include "engine/report/scatter_svg.h"
#include "engine/report/sharding_svg.h"
#include "engine/requests.h"
#include "engine/tune/tune_messages.h"
#include "engine/tune/tune_options.h"
#include "ir/problem.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "search/lower_bound.h"
#include "storage/hardware_profile.h"

namespace meshtune::engine {

namespace {

constexpr char kNoSummary[] =
    "This record predates tune summaries (written before tuning database schema 4, imported "
    "from a wisdom file, or stored without one): the tune's %s was not kept.";

std::string Seconds(double s) { return absl::StrFormat("%.6g s", s); }

std::string Row(const std::string& key, const std::string& value_html) {
  return absl::StrCat("<tr><th>", HtmlEscape(key), "</th><td>", value_html, "</td></tr>\n");
}

std::string Missing(const char* what) {
  return absl::StrCat("<p class=\"missing\">", HtmlEscape(absl::StrFormat(kNoSummary, what)),
                      "</p>\n");
}

std::string ProblemSection(const ReportInput& in) {
  const v1::Record& r = in.record;
  std::string rows =
      Row("problem", absl::StrCat("<code>", HtmlEscape(r.problem().expr()), "</code>"));
  absl::StrAppend(
      &rows, Row("extents", HtmlEscape(r.problem().extents())),
      Row("dtype", HtmlEscape(r.problem().dtype().empty() ? "f32" : r.problem().dtype())),
      Row("mesh", HtmlEscape(r.mesh())));
  const std::string asked = in.summary ? in.summary->mesh() : r.workload_mesh();
  if (!asked.empty()) absl::StrAppend(&rows, Row("tuned for", HtmlEscape(asked)));
  absl::StrAppend(&rows, Row("profile", HtmlEscape(r.profile().empty() ? "default" : r.profile())),
                  Row("record", HtmlEscape(in.origin)));
  if (r.created_unix_ms() > 0) {
    absl::StrAppend(
        &rows, Row("created", HtmlEscape(absl::FormatTime("%Y-%m-%d %H:%M:%S UTC",
                                                          absl::FromUnixMillis(r.created_unix_ms()),
                                                          absl::UTCTimeZone()))));
  }
  if (!r.tuner_version().empty())
    absl::StrAppend(&rows, Row("tuned by", HtmlEscape(r.tuner_version())));
  if (!r.machine().empty()) absl::StrAppend(&rows, Row("machine", HtmlEscape(r.machine())));
  return absl::StrCat("<section id=\"problem\">\n<h2>Problem and mesh</h2>\n<table>\n", rows,
                      "</table>\n</section>\n");
}

// The winner's facts, trace, pseudo-code and cost per transfer (from `program` and `cost`).
std::string WinnerSection(const ReportInput& in, const absl::StatusOr<codegen::Program>& program,
                          const cost::CostReport* cost) {
  const v1::Record& r = in.record;
  std::string rows = Row("predicted at tune time", Seconds(r.predicted_s()));
  absl::StrAppend(
      &rows, Row("measured",
                 r.has_measured_s()
                     ? HtmlEscape(absl::StrCat(Seconds(r.measured_s()),
                                               r.verified() ? " (verified)" : " (not verified)"))
                     : "-"));
  absl::StrAppend(&rows, Row("checked", HtmlEscape(r.checked().empty() ? "-" : r.checked())));
  std::string out = absl::StrCat("<section id=\"winner\">\n<h2>Winner</h2>\n<table>\n", rows,
                                 "</table>\n<h3>Trace</h3>\n<pre id=\"trace\">",
                                 HtmlEscape(r.trace().text()), "</pre>\n");
  if (!program.ok()) {
    absl::StrAppend(&out, "<p class=\"note\" id=\"lowering-error\">The trace does not lower: ",
                    HtmlEscape(std::string(program.status().message())), "</p>\n</section>\n");
    return out;
  }
  absl::StrAppend(&out, "<h3>Program (every rank)</h3>\n<pre id=\"pseudocode\">",
                  HtmlEscape(codegen::PseudoCode(*program)), "</pre>\n");
  absl::StrAppend(&out, "<h3>Cost per transfer</h3>\n<p class=\"note\">",
                  HtmlEscape(in.params_note), "</p>\n<table id=\"transfers\">\n",
                  "<tr><th>tensor</th><th>loop</th><th>pattern</th><th>prefetched</th>"
                  "<th>messages</th><th>bytes</th><th>seconds</th><th>share</th></tr>\n");
  for (const cost::TransferCost& t : cost->transfers) {
    absl::StrAppendFormat(
        &out,
        "<tr class=\"transfer\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td "
        "class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%.4g</td><td "
        "class=\"num\">%.1f%%</td></tr>\n",
        HtmlEscape(t.tensor), HtmlEscape(t.loop), HtmlEscape(t.pattern.ToString()),
        t.prefetch ? "yes" : "no", t.messages, t.bytes, t.seconds,
        cost->seconds > 0 ? 100 * t.seconds / cost->seconds : 0.0);
  }
  absl::StrAppendFormat(&out,
                        "</table>\n<p>On the critical rank (%d): compute %.4g s, communication "
                        "%.4g s, hidden by overlap %.4g s; total <span id=\"costed-total\">%.6g"
                        "</span> s. Counts are what the critical rank receives over the "
                        "whole program.</p>\n</section>\n",
                        cost->critical_rank, cost->compute_seconds, cost->comm_seconds,
                        cost->overlap_seconds, cost->seconds);
  return out;
}

std::string ShardingSection(const absl::StatusOr<codegen::Program>& program) {
  std::string out = "<section id=\"sharding\">\n<h2>Sharding on the mesh</h2>\n";
  if (!program.ok()) {
    return absl::StrCat(out, "<p class=\"note\">Not drawn: the trace does not lower.</p>\n",
                        "</section>\n");
  }
  absl::StrAppend(&out,
                  "<p>Which block of each tensor every rank holds at the start (global index "
                  "ranges, half-open). Ranks holding the same block share a colour.</p>\n");
  for (const codegen::TensorInfo& t : program->tensors) {
    absl::StrAppend(&out, "<h3>", HtmlEscape(t.name), "[", HtmlEscape(absl::StrJoin(t.dims, ",")),
                    "]", t.is_output ? " (output)" : "", "</h3>\n",
                    ShardingSvg(t, program->axis_names, program->axis_sizes));
  }
  return absl::StrCat(out, "</section>\n");
}

std::string CurveSection(const ReportInput& in) {
  std::string out = "<section id=\"curve\">\n<h2>Tuning curve</h2>\n";
  if (!in.summary) return absl::StrCat(out, Missing("progress curve"), "</section>\n");
  const std::vector<v1::CurvePoint> points(in.summary->curve().begin(), in.summary->curve().end());
  const auto with = [&](bool (v1::CurvePoint::*has)() const) {
    return std::count_if(points.begin(), points.end(),
                         [&](const v1::CurvePoint& p) { return (p.*has)(); });
  };
  absl::StrAppendFormat(&out,
                        "<p>The best predicted and best measured time against evaluations, "
                        "from <span id=\"curve-points\">%d</span> progress reports (<span "
                        "id=\"curve-points-predicted\">%d</span> with a best predicted time, "
                        "<span id=\"curve-points-measured\">%d</span> with a best measured "
                        "one; %s search, %.3g s).</p>\n",
                        points.size(), with(&v1::CurvePoint::has_best_predicted_s),
                        with(&v1::CurvePoint::has_best_measured_s),
                        HtmlEscape(in.summary->strategy()), in.summary->seconds());
  return absl::StrCat(out, CurveSvg(points), "</section>\n");
}

std::string MeasuredSection(const ReportInput& in) {
  std::string out = "<section id=\"measured\">\n<h2>Predicted against measured</h2>\n";
  if (!in.summary) return absl::StrCat(out, Missing("measured candidates"), "</section>\n");
  if (in.summary->measurements().empty()) {
    return absl::StrCat(out, "<p class=\"note\">Nothing was measured (a model-only tune).</p>\n",
                        "</section>\n");
  }
  std::vector<ScatterPoint> points;
  std::string rows;
  for (const v1::MeasuredCandidate& m : in.summary->measurements()) {
    const std::string patterns = m.patterns().empty() ? "none" : absl::StrJoin(m.patterns(), "; ");
    const bool ok = m.verified() && m.has_measured_s();
    if (ok) points.push_back({m.predicted_s(), m.measured_s(), patterns, m.family()});
    absl::StrAppend(&rows, "<tr class=\"measurement\"><td class=\"num\">",
                    absl::StrFormat("%.4g", m.predicted_s()), "</td><td class=\"num\">",
                    ok ? absl::StrFormat("%.4g", m.measured_s()) : "-", "</td><td>",
                    HtmlEscape(ok ? "verified" : absl::StrCat("failed: ", m.error())), "</td><td>",
                    HtmlEscape(m.family()), "</td></tr>\n");
  }
  absl::StrAppend(&out,
                  ScatterSvg(points, {"measured candidates", "predicted s", "measured s", true}),
                  "<table id=\"measurements\">\n<tr><th>predicted s</th><th>measured s</th>"
                  "<th>outcome</th><th>family</th></tr>\n",
                  rows, "</table>\n</section>\n");
  return out;
}

// A ratio of times for a sentence: "0.93" (two decimals from 0.1 to 100, else 3 digits).
std::string Ratio(double r) {
  return r >= 0.095 && r < 100 ? absl::StrFormat("%.2f", r) : absl::StrFormat("%.3g", r);
}

// The label (engine/report/box_svg.h) of the tune's answer among the summary's rows: the record's
// library configuration, or the verified measurement of its trace on its mesh; "" for none.
std::string AnswerLabel(const v1::Record& r, const v1::TuneSummary& s) {
  if (r.has_library()) return LibraryLabel(r.library());
  for (int i = 0; i < s.measurements_size(); ++i) {
    const v1::MeasuredCandidate& m = s.measurements(i);
    if (m.verified() && m.mesh() == r.mesh() && m.trace().text() == r.trace().text())
      return CandidateLabel(m, i + 1);
  }
  return "";
}

// The decision of the tune in a sentence: the fastest against the second fastest, by their
// ratio and its interval; "" when the summary has no comparison.
std::string DecisionSentence(const v1::TuneSummary& s) {
  if (!s.has_comparison()) return "";
  const v1::Comparison& c = s.comparison();
  const std::string numbers =
      absl::StrFormat("%sx, %d%% interval %s-%s over %d round%s", Ratio(c.ratio()),
                      base::CiPercent(RatioCiLevel(c)), Ratio(c.ratio_ci_low()),
                      Ratio(c.ratio_ci_high()), c.rounds(), c.rounds() == 1 ? "" : "s");
  if (c.separated()) {
    return absl::StrCat(c.leader(), " is faster than ", c.runner_up(),
                        " beyond the noise: ", numbers, ".");
  }
  return absl::StrCat("tie within noise: ", c.leader(), " against ", c.runner_up(), ", ", numbers,
                      "; the interval holds 1, so the rule chose: the lower median, and the "
                      "library unless a schedule is faster than it beyond the noise.");
}

// Every measured candidate and library configuration side by side: their samples as boxes
// on one time axis (engine/report/box_svg.h), the decision, and the answer against the library.
std::string SideBySideSection(const ReportInput& in) {
  std::string out = "<section id=\"side-by-side\">\n<h2>Measured side by side</h2>\n";
  if (!in.summary) {  // why: said in the sections of the curve and the measurements
    return absl::StrCat(out,
                        "<p class=\"missing\">Without the tune's summary, its measured samples "
                        "are not known either.</p>\n</section>\n");
  }
  const v1::TuneSummary& s = *in.summary;
  if (s.measurements().empty() && s.library().empty()) {
    return absl::StrCat(out, "<p class=\"note\">Nothing was measured (a model-only tune).</p>\n",
                        "</section>\n");
  }
  bool sampled = false, unsampled = false;
  const auto look = [&](bool usable, bool has_measured, const v1::TimeSample& sample) {
    if (!usable) return;
    if (sample.n() > 0) sampled = true;
    if (sample.n() == 0 && has_measured) unsampled = true;
  };
  for (const v1::MeasuredCandidate& m : s.measurements())
    look(m.verified() && m.implausible().empty(), m.has_measured_s(), m.sample());
  for (const v1::LibraryRun& l : s.library())
    look(l.verified() && l.implausible().empty(), l.has_measured_s(), l.sample());
  absl::StrAppend(&out,
                  "<p>Each candidate measured and each library configuration, one row each on "
                  "one time axis: the spread of its runs where their sample was kept; runs that "
                  "failed or were refused as implausible, with their reason. Where two dark "
                  "bands (the medians' 95% intervals) overlap, the difference may be noise.</p>\n");
  if (unsampled) {
    absl::StrAppend(&out, "<p class=\"note\" id=\"no-samples\">",
                    sampled ? "Some of these times" : "These times",
                    " were taken before samples were kept: each is a median alone, with no "
                    "spread to show.</p>\n");
  }
  absl::StrAppend(&out, BoxSvg(s, AnswerLabel(in.record, s)));
  if (const std::string decision = DecisionSentence(s); !decision.empty()) {
    absl::StrAppend(&out, "<p id=\"decision\">", HtmlEscape(decision), "</p>\n");
  } else if (sampled) {
    absl::StrAppend(&out,
                    "<p id=\"decision\">Fewer than two candidates verified: nothing to "
                    "compare.</p>\n");
  }
  if (s.has_vs_library()) {
    if (in.record.has_library()) {
      absl::StrAppend(&out,
                      "<p id=\"vs-library-interval\">The answer is the library: no schedule "
                      "was faster than it beyond the noise.</p>\n");
    } else {
      absl::StrAppendFormat(
          &out,
          "<p id=\"vs-library-interval\">Against the library: the answer took %sx the fastest "
          "library configuration's time%s.</p>\n",
          Ratio(s.vs_library()),
          s.has_vs_library_ci_low() && s.has_vs_library_ci_high()
              ? absl::StrFormat(
                    ", %d%% interval %s-%s",
                    base::CiPercent(s.has_vs_library_ci_level() ? s.vs_library_ci_level() : 0.95),
                    Ratio(s.vs_library_ci_low()), Ratio(s.vs_library_ci_high()))
              : std::string(" (no interval recorded)"));
    }
  }
  return absl::StrCat(out, "</section>\n");
}

// `program` is the record's trace lowered, `cost` its cost (nullptr when it did not lower).
std::string LowerBoundSection(const ReportInput& in,
                              const absl::StatusOr<codegen::Program>& program,
                              const cost::CostReport* cost) {
  std::string out = "<section id=\"lower-bound\">\n<h2>Gap to the lower bound</h2>\n";
  std::optional<double> bound;
  if (program.ok()) {
    // The problem as lowered: it parsed when the trace lowered.
    if (absl::StatusOr<ir::Problem> problem = ProblemOf(in.record.problem()); problem.ok())
      bound = search::CommLowerBound(*problem, program->Ranks());
  }
  if (bound && *bound <= 0 && cost != nullptr) {
    absl::StrAppendFormat(&out,
                          "<p>The lower bound is 0 words: the statement splits without "
                          "communication. This schedule receives %d words a rank.</p>\n",
                          cost->comm_words_per_rank);
  } else if (!bound || cost == nullptr) {
    absl::StrAppend(&out,
                    "<p class=\"note\">No lower bound: it is known on more than one rank, "
                    "for a statement that names each tensor once and a trace that lowers.</p>\n");
  } else {
    absl::StrAppendFormat(&out,
                          "<table>\n<tr><th>words received per rank (most)</th><td "
                          "class=\"num\">%d</td></tr>\n<tr><th>lower bound</th><td "
                          "class=\"num\">%.6g</td></tr>\n<tr><th>ratio</th><td class=\"num\" "
                          "id=\"lower-bound-ratio\">%.3f</td></tr>\n</table>\n",
                          cost->comm_words_per_rank, *bound,
                          static_cast<double>(cost->comm_words_per_rank) / *bound);
  }
  if (in.summary && in.summary->has_lower_bound_ratio()) {
    absl::StrAppendFormat(&out, "<p>At tune time: %.3f times the lower bound.</p>\n",
                          in.summary->lower_bound_ratio());
  }
  return absl::StrCat(out, "</section>\n");
}

// The library measured in the same tune: each configuration's time, the answer's ratio, and
// whether the answer is the library.
std::string LibrarySection(const ReportInput& in) {
  std::string out = "<section id=\"library\">\n<h2>Against the library</h2>\n";
  if (in.record.has_library()) {
    const v1::LibraryRun& l = in.record.library();
    absl::StrAppendFormat(&out,
                          "<p id=\"library-answer\">The answer is the library: ScaLAPACK's %s on "
                          "a %dx%d grid, NB %d, measured %.4g s, faster than every schedule "
                          "beyond the noise; the schedule above is the fastest one, kept for "
                          "reference.</p>\n",
                          HtmlEscape(l.library()), l.prow(), l.pcol(), l.nb(), l.measured_s());
  }
  if (!in.summary || in.summary->library().empty()) {
    return absl::StrCat(out,
                        "<p class=\"note\">The library was not measured (a problem not of matmul "
                        "form, given layouts, a model-only tune, or a record from before).</p>\n"
                        "</section>\n");
  }
  if (in.summary->has_vs_library()) {
    absl::StrAppendFormat(&out,
                          "<p>The answer took <span id=\"vs-library\">%.3f</span> times the "
                          "fastest library run's time.</p>\n",
                          in.summary->vs_library());
  }
  absl::StrAppend(&out,
                  "<table id=\"library-runs\">\n<tr><th>library</th><th>grid</th><th>NB</th>"
                  "<th>measured s</th></tr>\n");
  for (const v1::LibraryRun& l : in.summary->library()) {
    absl::StrAppendFormat(
        &out,
        "<tr class=\"library-run\"><td>%s</td><td>%dx%d</td><td class=\"num\">%d</td><td "
        "class=\"num\">%s</td></tr>\n",
        HtmlEscape(l.library()), l.prow(), l.pcol(), l.nb(),
        l.has_measured_s() ? absl::StrFormat("%.4g", l.measured_s())
                           : HtmlEscape(absl::StrCat("failed: ", l.error())));
  }
  return absl::StrCat(out, "</table>\n</section>\n");
}

std::string PruningSection(const ReportInput& in) {
  std::string out = "<section id=\"pruning\">\n<h2>Search space and pruning</h2>\n";
  if (!in.summary) return absl::StrCat(out, Missing("counts"), "</section>\n");
  const v1::TuneSummary& s = *in.summary;
  const char* est = s.legal_estimated() ? " (estimated)" : "";
  std::vector<std::pair<std::string, int64_t>> pruned(s.pruned().begin(), s.pruned().end());
  std::sort(pruned.begin(), pruned.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  absl::StrAppendFormat(&out,
                        "<table id=\"space-counts\">\n<tr><th>candidates</th><td "
                        "class=\"num\">%d</td></tr>\n<tr><th>legal%s</th><td "
                        "class=\"num\">%d</td></tr>\n<tr><th>costed</th><td "
                        "class=\"num\">%d</td></tr>\n<tr><th>duplicates</th><td "
                        "class=\"num\">%d</td></tr>\n<tr><th>bounded</th><td "
                        "class=\"num\">%d</td></tr>\n</table>\n",
                        s.enumerated(), est, s.legal(), s.costed(), s.duplicates(), s.bounded());
  absl::StrAppendFormat(&out, "<h3>Pruned by reason%s</h3>\n<table id=\"pruned\">\n", est);
  absl::StrAppend(&out, "<tr><th>reason</th><th>points</th></tr>\n");
  for (const auto& [reason, n] : pruned) {
    absl::StrAppendFormat(&out,
                          "<tr class=\"pruned-reason\"><td><code>%s</code></td><td "
                          "class=\"num\">%d</td></tr>\n",
                          HtmlEscape(reason), n);
  }
  return absl::StrCat(out, "</table>\n</section>\n");
}

// The schedules a program's tune ranked and measured.
std::string ProgramSchedulesSection(const ReportInput& in) {
  std::string out = "<section id=\"schedules\">\n<h2>Schedules of the program</h2>\n";
  if (!in.program) {
    return absl::StrCat(out,
                        "<p class=\"missing\">A stored program record keeps its winner only: "
                        "the schedules its tune ranked and measured are in the tune's own "
                        "report (tune --report).</p>\n</section>\n");
  }
  absl::StrAppend(&out,
                  "<table id=\"program-schedules\">\n<tr><th>schedule</th><th>mesh</th>"
                  "<th>predicted s</th><th>measured s</th><th>outcome</th></tr>\n");
  std::vector<const v1::ProgramResult::Schedule*> rows = {&in.program->best(),
                                                          &in.program->separate()};
  for (const v1::ProgramResult::Schedule& m : in.program->measured()) rows.push_back(&m);
  for (const v1::ProgramResult::Schedule* s : rows) {
    absl::StrAppend(
        &out, "<tr class=\"program-schedule\"><td>", HtmlEscape(s->label()), "</td><td>",
        HtmlEscape(s->mesh()), "</td><td class=\"num\">", absl::StrFormat("%.4g", s->predicted_s()),
        "</td><td class=\"num\">",
        s->has_measured_s() ? absl::StrFormat("%.4g", s->measured_s()) : "-", "</td><td>",
        HtmlEscape(s->has_measured_s() || !s->error().empty()
                       ? (s->verified() ? "verified" : absl::StrCat("failed: ", s->error()))
                       : "not measured"),
        "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n");
  if (in.program->has_separate_over_best()) {
    absl::StrAppendFormat(&out,
                          "<p>Tuning each statement alone, then moving: measured <span "
                          "id=\"separate-over-best\">%.3f</span> times the best's time.</p>\n",
                          in.program->separate_over_best());
  }
  return absl::StrCat(out, "</section>\n");
}

// Each tensor one statement leaves for a later one: read there in place or moved.
std::string LayoutsBetweenSection(const ReportInput& in, const ir::StatementProgram& program,
                                  const std::vector<absl::StatusOr<codegen::Program>>& lowered) {
  std::string out = absl::StrCat(
      "<section id=\"layouts-between\">\n<h2>Layouts between the statements</h2>\n",
      "<table id=\"moves\">\n<tr><th>tensor</th><th>from statement</th><th>to "
      "statement</th><th>read</th><th>bytes (busiest rank)</th><th>predicted s</th></tr>\n");
  for (const std::string& t : program.Tensors()) {
    const int home = program.Home(t);
    for (int c : program.Consumers(t)) {
      if (c <= home) continue;
      std::string read = "-";
      if (lowered[home].ok() && lowered[c].ok()) {
        read = codegen::ReadsWhereItLives(*lowered[home], *lowered[c], t) ? "in place" : "moved";
      }
      std::string bytes = "-", seconds = "-";
      for (int m = 0; in.program && m < in.program->best().moves_size(); ++m) {
        const v1::ProgramResult::Move& move = in.program->best().moves(m);
        if (move.tensor() != t || move.consumer() != c + 1) continue;
        bytes = absl::StrCat(move.bytes_max());
        seconds = absl::StrFormat("%.4g", move.predicted_s());
      }
      absl::StrAppend(&out, "<tr class=\"move\"><td>", HtmlEscape(t), "</td><td class=\"num\">",
                      home + 1, "</td><td class=\"num\">", c + 1, "</td><td>", read,
                      "</td><td class=\"num\">", bytes, "</td><td class=\"num\">", seconds,
                      "</td></tr>\n");
    }
  }
  return absl::StrCat(out, "</table>\n</section>\n");
}

// The report of a program of several statements.
std::string ProgramReportHtml(const ReportInput& in, const ir::StatementProgram& program) {
  const v1::Mesh mesh = RecordMesh(in.record);
  const int n = static_cast<int>(program.statements.size());
  absl::StatusOr<std::vector<ir::Trace>> traces =
      ir::ParseProgramTrace(in.record.trace().text(), n);
  std::vector<absl::StatusOr<codegen::Program>> lowered;
  std::vector<std::string> statement_html;
  for (int s = 0; s < n; ++s) {
    ReportInput one = in;
    one.record.mutable_problem()->set_expr(program.statements[s].ToString());
    one.record.mutable_problem()->set_extents(program.statements[s].ExtentsString());
    one.record.mutable_trace()->set_text(traces.ok() ? (*traces)[s].ToString() : "");
    one.record.clear_measured_s();
    one.record.set_predicted_s(in.program && s < in.program->best().statements_size()
                                   ? in.program->best().statements(s).predicted_s()
                                   : 0);
    lowered.push_back(traces.ok() ? LowerTrace(one.record.problem(), mesh, one.record.trace())
                                  : absl::StatusOr<codegen::Program>(traces.status()));
    std::optional<cost::CostReport> cost;
    if (lowered.back().ok()) {
      cost =
          cost::EstimateCost(*lowered.back(), cost::ForRanks(in.params, lowered.back()->Ranks()));
    }
    const std::string sections =
        absl::StrCat(WinnerSection(one, lowered.back(), cost ? &*cost : nullptr),
                     ShardingSection(lowered.back()));
    statement_html.push_back(
        absl::StrCat("<section id=\"statement-", s + 1, "\">\n<h2>Statement ", s + 1, ": <code>",
                     HtmlEscape(program.statements[s].ToString()), "</code></h2>\n",
                     absl::StrReplaceAll(sections, {{" id=\"", absl::StrCat(" id=\"s", s + 1, "-")},
                                                    {"<h2>Winner</h2>", "<h3>Its schedule</h3>"},
                                                    {"<h2>", "<h3>"},
                                                    {"</h2>", "</h3>"}}),
                     "</section>\n"));
  }
  const std::string title =
      absl::StrCat("meshtune report: ", in.record.problem().expr(), " on ", in.record.mesh());
  std::string body = absl::StrCat(in.header_html, "<h1 id=\"title\">", HtmlEscape(title), "</h1>\n",
                                  ProblemSection(in), ProgramSchedulesSection(in),
                                  LayoutsBetweenSection(in, program, lowered));
  for (const std::string& html : statement_html) absl::StrAppend(&body, html);
  return HtmlDocument(title, body);
}

}  // namespace

std::string ReportHtml(const ReportInput& in) {
  if (absl::StatusOr<ir::StatementProgram> program = ProgramOf(in.record.problem());
      program.ok() && !program->single()) {
    return ProgramReportHtml(in, *program);
  }
  const v1::Mesh mesh = RecordMesh(in.record);
  const absl::StatusOr<codegen::Program> program =
      LowerTrace(in.record.problem(), mesh, in.record.trace());
  std::optional<cost::CostReport> cost;
  // As the tuner costs a mesh: gamma scaled to how its ranks share a node's cores.
  if (program.ok())
    cost = cost::EstimateCost(*program, cost::ForRanks(in.params, program->Ranks()));
  const cost::CostReport* c = cost ? &*cost : nullptr;
  const std::string title =
      absl::StrCat("meshtune report: ", in.record.problem().expr(), " on ", in.record.mesh());
  std::string body =
      absl::StrCat(in.header_html, "<h1 id=\"title\">", HtmlEscape(title), "</h1>\n");
  absl::StrAppend(&body, ProblemSection(in), WinnerSection(in, program, c),
                  ShardingSection(program), CurveSection(in), MeasuredSection(in),
                  SideBySideSection(in), LibrarySection(in), LowerBoundSection(in, program, c),
                  PruningSection(in));
  return HtmlDocument(title, body);
}

cost::CostParams ReportCostParams(const std::string& profile, std::string* note) {
  const std::string name = profile.empty() ? "default" : profile;
  absl::StatusOr<v1::HardwareProfile> loaded = storage::LoadProfile(name);
  if (loaded.ok()) {
    *note = absl::StrCat("Costed with the hardware profile \"", name, "\" of this machine.");
    return storage::ToCostParams(*loaded);
  }
  *note = absl::StrCat("Costed with built-in machine numbers: the hardware profile \"", name, "\" ",
                       absl::IsNotFound(loaded.status())
                           ? "does not exist here"
                           : absl::StrCat("cannot be read (", loaded.status().message(), ")"),
                       " (meshtune calibrate measures one).");
  return BuiltinCostParams();
}

absl::StatusOr<std::string> RecordReportHtml(storage::TuningDb& db, int64_t id,
                                             const std::string& header_html) {
  MT_ASSIGN_OR_RETURN(std::optional<v1::TuneSummary> summary, GetTuneSummary(db, id));
  v1::GetRecordRequest get;
  get.set_id(id);
  if (summary) *get.mutable_problem() = summary->problem();
  absl::StatusOr<v1::Record> record = GetRecord(db, get);
  if (!record.ok() && summary) {  // the summary's names do not fit: canonical names instead
    get.clear_problem();
    record = GetRecord(db, get);
  }
  if (!record.ok()) return record.status();
  ReportInput in;
  in.record = *std::move(record);
  in.summary = std::move(summary);
  in.params = ReportCostParams(in.record.profile(), &in.params_note);
  in.origin = absl::StrCat("record ", id);
  in.header_html = header_html;
  return ReportHtml(in);
}

}  // namespace meshtune::engine
