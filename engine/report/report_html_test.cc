#include "engine/report/report_html.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/report/box_svg.h"
#include "engine/report/curve_svg.h"
#include "engine/report/html_page.h"
#include "engine/report/sharding_svg.h"
#include "engine/tune/tune_options.h"
#include "engine/tune/tune_summary.h"
#include "gtest/gtest.h"
#include "storage/tuning_db.h"
#include "tests/test_util.h"

namespace meshtune::engine {
namespace {

using ::meshtune::testing::ReadFile;

// SUMMA (examples/summa.trace, k in 8 steps) and how often `what` occurs in `text`.
const std::string kSumma = ReadFile("examples/summa.trace");
int Count(const std::string& text, const std::string& what) {
  return ::meshtune::testing::Occurrences(text, what);
}

v1::Record SummaRecord() {
  v1::Record r;
  r.set_id(3);
  r.mutable_problem()->set_expr("C[m,n] += A[m,k] * B[k,n]");
  r.mutable_problem()->set_extents("m=16,n=16,k=16");
  r.set_mesh("x=2,y=2");
  r.mutable_trace()->set_text(kSumma);
  r.set_predicted_s(2.5e-6);
  r.set_checked("simulated");
  return r;
}

v1::CurvePoint Point(int64_t costed, double predicted, int measured = 0, double best = 0) {
  v1::CurvePoint p;
  p.set_costed(costed);
  p.set_best_predicted_s(predicted);
  p.set_measured(measured);
  if (best > 0) p.set_best_measured_s(best);
  return p;
}

v1::TuneSummary Summary() {
  v1::TuneSummary s;
  s.set_strategy("exhaustive");
  s.set_enumerated(1000);
  s.set_legal(90);
  (*s.mutable_pruned())["non_local_access"] = 900;
  (*s.mutable_pruned())["overhang"] = 10;
  s.set_costed(90);
  *s.add_curve() = Point(10, 4e-6);
  *s.add_curve() = Point(50, 3e-6);
  *s.add_curve() = Point(90, 2.5e-6);
  *s.add_curve() = Point(90, 2.5e-6, 1, 3e-5);
  *s.add_curve() = Point(90, 2.5e-6, 2, 2e-5);
  v1::MeasuredCandidate* m = s.add_measurements();
  m->mutable_trace()->set_text(kSumma);  // the record's: the answer
  m->set_mesh("x=2,y=2");
  m->set_predicted_s(2.5e-6);
  m->set_measured_s(2e-5);
  m->set_verified(true);
  m->set_family("x=2,y=2: A Broadcast(y); B Broadcast(x)");
  m = s.add_measurements();
  m->set_predicted_s(3e-6);
  m->set_error("timeout");
  s.set_lower_bound_ratio(1.5);
  return s;
}

// A sample of n runs with these order statistics and the median's interval.
v1::TimeSample Sample(int n, double min, double q1, double median, double q3, double max,
                      double ci_low, double ci_high, double ci_level = 0.96) {
  v1::TimeSample t;
  t.set_n(n);
  t.set_batch(1);
  t.set_min_s(min);
  t.set_q1_s(q1);
  t.set_median_s(median);
  t.set_q3_s(q3);
  t.set_max_s(max);
  t.set_ci_low_s(ci_low);
  t.set_ci_high_s(ci_high);
  t.set_ci_level(ci_level);
  for (int i = 0; i < n; ++i) t.add_samples_s(median);
  return t;
}

// Summary() measured in rounds side by side: the answer (SUMMA on 2x2) with a sample of 12,
// a candidate refused as implausible, the failed one, and the library with a sample of 12;
// the answer faster than the library beyond the noise.
v1::TuneSummary SampledSummary() {
  v1::TuneSummary s = Summary();
  v1::MeasuredCandidate* answer = s.mutable_measurements(0);
  answer->set_measured_s(0.0153);
  *answer->mutable_sample() = Sample(12, 0.015, 0.0152, 0.0153, 0.0155, 0.016, 0.0151, 0.0156);
  v1::MeasuredCandidate* implausible = s.add_measurements();
  implausible->set_mesh("x=4");
  implausible->set_predicted_s(4e-6);
  implausible->set_implausible("implausible_time: 1e-09 s is below reading <A> once");
  *implausible->mutable_sample() = Sample(12, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9);
  v1::LibraryRun* l = s.add_library();
  l->set_library("PSGEMM");
  l->set_prow(2);
  l->set_pcol(2);
  l->set_nb(64);
  l->set_measured_s(0.0165);
  l->set_verified(true);
  *l->mutable_sample() = Sample(12, 0.0158, 0.0162, 0.0165, 0.0167, 0.0171, 0.0163, 0.0168);
  v1::Comparison* c = s.mutable_comparison();
  c->set_leader("x=2,y=2 #1");
  c->set_runner_up("PSGEMM 2x2, NB 64");
  c->set_rounds(12);
  c->set_ratio(0.93);
  c->set_ratio_ci_low(0.9);
  c->set_ratio_ci_high(0.96);
  c->set_ratio_ci_level(0.96);
  c->set_separated(true);
  s.set_decision("separated");
  s.set_vs_library(0.93);
  s.set_vs_library_ci_low(0.9);
  s.set_vs_library_ci_high(0.96);
  s.set_vs_library_ci_level(0.96);
  return s;
}

ReportInput Input(bool with_summary) {
  ReportInput in;
  in.record = SummaRecord();
  if (with_summary) in.summary = Summary();
  in.params = BuiltinCostParams();
  in.params_note = "built-in numbers";
  in.origin = "record 3 <of a test>";
  return in;
}

TEST(ReportHtmlTest, HasEverySectionWithTheWinnersNumbers) {
  const std::string html = ReportHtml(Input(true));
  for (const char* id : {"problem", "winner", "trace", "pseudocode", "transfers", "sharding",
                         "curve", "measured", "lower-bound", "pruning", "lower-bound-ratio"}) {
    EXPECT_TRUE(absl::StrContains(html, absl::StrCat("id=\"", id, "\""))) << id;
  }
  EXPECT_TRUE(absl::StrContains(html, "communicate(A, ko)\ncommunicate(B, ko)"));
  EXPECT_TRUE(absl::StrContains(html, "for ko in range(0, 8):"));
  EXPECT_EQ(Count(html, "<tr class=\"transfer\">"), 2);  // A and B broadcast
  EXPECT_TRUE(absl::StrContains(html, "Broadcast(axes=[1])"));
  // One cell per rank and tensor, and the blocks SUMMA's layouts say.
  EXPECT_EQ(Count(html, "class=\"rank-cell\""), 12);
  EXPECT_EQ(Count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sharding\""), 3);
  EXPECT_TRUE(absl::StrContains(html, "A[8:16, 0:8] held by 1 rank"));
  // Curve: one predicted circle per stored point, one measured per point with a measurement.
  EXPECT_EQ(Count(html, "class=\"curve-point predicted\""), 5);
  EXPECT_EQ(Count(html, "class=\"curve-point measured\""), 2);
  EXPECT_TRUE(absl::StrContains(html, "<span id=\"curve-points\">5</span>"));
  EXPECT_TRUE(absl::StrContains(html, "<span id=\"curve-points-measured\">2</span>"));
  // The scatter draws the verified measurement only; the table lists both.
  EXPECT_EQ(Count(html, "<circle class=\"point\""), 1);
  EXPECT_EQ(Count(html, "<tr class=\"measurement\">"), 2);
  EXPECT_TRUE(absl::StrContains(html, "failed: timeout"));
  // Words: 2 broadcasts of 8x8 per rank; the bound for 16^3 on 4 ranks.
  EXPECT_TRUE(absl::StrContains(html, "<td class=\"num\">128</td>"));
  EXPECT_TRUE(absl::StrContains(html, "At tune time: 1.500 times the lower bound."));
  // Pruning by reason, the largest first.
  EXPECT_LT(html.find("<code>non_local_access</code></td><td class=\"num\">900"),
            html.find("<code>overhang</code></td><td class=\"num\">10"));
  EXPECT_TRUE(absl::StrContains(html, "record 3 &lt;of a test&gt;"));
  EXPECT_FALSE(absl::StrContains(html, "<of a test>"));
  EXPECT_FALSE(absl::StrContains(html, "<script"));
  EXPECT_FALSE(absl::StrContains(html, "http://") &&
               Count(html, "http://") != Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(ReportHtmlTest, TheLibraryMeasuredBesideAndTheAnswerWhenItWins) {
  ReportInput in = Input(true);
  EXPECT_TRUE(absl::StrContains(ReportHtml(in), "The library was not measured"));
  for (int nb : {64, 256}) {
    v1::LibraryRun* l = in.summary->add_library();
    l->set_library("PSGEMM");
    l->set_prow(2);
    l->set_pcol(2);
    l->set_nb(nb);
    if (nb == 64) {
      l->set_measured_s(1.5e-5);
      l->set_verified(true);
    }
    if (nb == 256) l->set_error("the output did not verify <at 3>");
  }
  in.summary->set_vs_library(1.0);
  *in.record.mutable_library() = in.summary->library(0);
  const std::string html = ReportHtml(in);
  EXPECT_TRUE(absl::StrContains(html, "id=\"library\""));
  EXPECT_EQ(Count(html, "<tr class=\"library-run\">"), 2);
  EXPECT_TRUE(absl::StrContains(html, "<td class=\"num\">1.5e-05</td>"));
  EXPECT_TRUE(absl::StrContains(html, "failed: the output did not verify &lt;at 3&gt;"));
  EXPECT_TRUE(absl::StrContains(html, "<span id=\"vs-library\">1.000</span>"));
  EXPECT_TRUE(absl::StrContains(html,
                                "The answer is the library: ScaLAPACK's PSGEMM on a 2x2 "
                                "grid, NB 64, measured 1.5e-05 s"));
  // Side by side, the library's configuration is the answer.
  EXPECT_TRUE(absl::StrContains(html,
                                "<g class=\"median-only answer\" data-label=\"PSGEMM 2x2, NB "
                                "64\" data-kind=\"library\" data-median=\"1.5e-05\">"));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<g class=\"unmeasured\" data-label=\"PSGEMM 2x2, NB 256\" data-kind=\"library\" "
      "data-reason=\"failed: the output did not verify &lt;at 3&gt;\">"));
  EXPECT_TRUE(absl::StrContains(html, "<p id=\"vs-library-interval\">The answer is the library"));
}

TEST(ReportHtmlTest, MeasuredSideBySideAsBoxesOnOneAxis) {
  ReportInput in = Input(true);
  *in.summary = SampledSummary();
  const std::string html = ReportHtml(in);
  EXPECT_TRUE(absl::StrContains(html, "<section id=\"side-by-side\">\n<h2>Measured side by side"));
  EXPECT_EQ(Count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"boxes\""), 1);
  // A box each for the answer (highlighted) and the library; the others listed with why.
  EXPECT_EQ(Count(html, "<g class=\"box"), 2);
  EXPECT_TRUE(absl::StrContains(
      html,
      "<g class=\"box answer\" data-label=\"x=2,y=2 #1\" data-kind=\"schedule\" data-n=\"12\" "
      "data-min=\"0.015\" data-q1=\"0.0152\" data-median=\"0.0153\" data-q3=\"0.0155\" "
      "data-max=\"0.016\" data-ci-low=\"0.0151\" data-ci-high=\"0.0156\" "
      "data-ci-level=\"0.96\">"));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<g class=\"box\" data-label=\"PSGEMM 2x2, NB 64\" data-kind=\"library\" data-n=\"12\" "
      "data-min=\"0.0158\" data-q1=\"0.0162\" data-median=\"0.0165\" data-q3=\"0.0167\" "
      "data-max=\"0.0171\" data-ci-low=\"0.0163\" data-ci-high=\"0.0168\" "
      "data-ci-level=\"0.96\">"));
  EXPECT_TRUE(absl::StrContains(html,
                                "<g class=\"unmeasured\" data-label=\" #2\" data-kind=\"schedule\" "
                                "data-reason=\"failed: timeout\">"));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<g class=\"unmeasured\" data-label=\"x=4 #3\" data-kind=\"schedule\" "
      "data-reason=\"implausible_time: 1e-09 s is below reading &lt;A&gt; once\">"));
  EXPECT_EQ(Count(html, "<rect class=\"iqr\""), 2);
  EXPECT_EQ(Count(html, "<rect class=\"median-ci\""), 2);
  EXPECT_EQ(Count(html, "<line class=\"median\""), 2);
  EXPECT_EQ(Count(html, "<rect class=\"answer-band\""), 1);
  EXPECT_TRUE(absl::StrContains(html, ">n 12, median 15.3 ms, the answer</text>"));
  EXPECT_TRUE(absl::StrContains(html, ">n 12, median 16.5 ms</text>"));
  // 15 to 17.1 ms: a linear axis (the refused 1e-9 s is not drawn), ticks in ms.
  EXPECT_TRUE(absl::StrContains(html, ">time of one run, ms</text>"));
  EXPECT_TRUE(absl::StrContains(html, "text-anchor=\"middle\">16.0</text>"));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<p id=\"decision\">x=2,y=2 #1 is faster than PSGEMM 2x2, NB 64 beyond the noise: 0.93x, "
      "95% interval 0.90-0.96 over 12 rounds.</p>"));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<p id=\"vs-library-interval\">Against the library: the answer took 0.93x the fastest "
      "library configuration's time, 95% interval 0.90-0.96.</p>"));
  EXPECT_FALSE(absl::StrContains(html, "id=\"no-samples\""));
  EXPECT_EQ(Count(html, "pace"), Count(html, "space"));  // nothing of the machine's pace

  // A tie: the sentence says so and what the rule chose.
  in.summary->mutable_comparison()->set_separated(false);
  in.summary->mutable_comparison()->set_ratio_ci_high(1.02);
  in.summary->set_decision("tie within noise");
  EXPECT_TRUE(absl::StrContains(
      ReportHtml(in),
      "<p id=\"decision\">tie within noise: x=2,y=2 #1 against PSGEMM 2x2, NB 64, 0.93x, 95% "
      "interval 0.90-1.02 over 12 rounds; the interval holds 1, so the rule chose: "));

  // Three rounds: their whole range holds the median with probability 1 - 2^-2, and the
  // sentence says 75%; a record from before the level was kept gets that of its rounds.
  in.summary->mutable_comparison()->set_rounds(3);
  in.summary->mutable_comparison()->set_ratio_ci_level(0.75);
  EXPECT_TRUE(absl::StrContains(ReportHtml(in), "0.93x, 75% interval 0.90-1.02 over 3 rounds;"));
  in.summary->mutable_comparison()->clear_ratio_ci_level();
  EXPECT_TRUE(absl::StrContains(ReportHtml(in), "0.93x, 75% interval 0.90-1.02 over 3 rounds;"));
}

TEST(ReportHtmlTest, TimesFromBeforeSamplesAreMediansAlone) {
  const std::string html = ReportHtml(Input(true));  // Summary(): no sample kept
  EXPECT_TRUE(absl::StrContains(html,
                                "<p class=\"note\" id=\"no-samples\">These times were taken "
                                "before samples were kept: each is a median alone"));
  EXPECT_EQ(Count(html, "<g class=\"box"), 0);
  EXPECT_TRUE(absl::StrContains(html,
                                "<g class=\"median-only answer\" data-label=\"x=2,y=2 #1\" "
                                "data-kind=\"schedule\" data-median=\"2e-05\">"));
  EXPECT_TRUE(absl::StrContains(html, ">median 20 \u00b5s, no sample, the answer</text>"));
  EXPECT_EQ(Count(html, "<g class=\"unmeasured\""), 1);
  EXPECT_FALSE(absl::StrContains(html, "id=\"decision\""));
  EXPECT_FALSE(absl::StrContains(html, "id=\"vs-library-interval\""));
}

TEST(BoxSvgTest, TimesTenfoldApartGoOnALogarithmicAxis) {
  v1::TuneSummary s;
  for (double median : {1e-3, 5e-2}) {
    v1::MeasuredCandidate* m = s.add_measurements();
    m->set_mesh("x=2");
    m->set_verified(true);
    m->set_measured_s(median);
    *m->mutable_sample() = Sample(3, median, median, median, median, median, median, median, 0.75);
  }
  const std::string svg = BoxSvg(s, "");
  EXPECT_EQ(Count(svg, "<g class=\"box\""), 2);
  EXPECT_EQ(Count(svg, "answer"), 1);  // the legend's word only
  EXPECT_TRUE(absl::StrContains(svg, ">time of one run, ms (logarithmic)</text>"));
  EXPECT_TRUE(absl::StrContains(svg, "text-anchor=\"middle\">10</text>"));  // 10 ms
  EXPECT_TRUE(absl::StrContains(svg, "data-label=\"x=2 #2\""));
  EXPECT_TRUE(absl::StrContains(svg, "the median's 75% interval 50 ms to 50 ms"));
  // A box of no width (every run equal) is still drawn 2 pixels wide.
  EXPECT_EQ(Count(svg, "width=\"2.0\""), 4);  // two boxes, two intervals
  // Seconds from 1 s up.
  s.mutable_measurements(1)->mutable_sample()->set_max_s(2);
  EXPECT_TRUE(absl::StrContains(BoxSvg(s, ""), ">time of one run, s (logarithmic)</text>"));
  EXPECT_TRUE(absl::StrContains(BoxSvg(v1::TuneSummary(), ""), "no measured time to draw"));
}

TEST(ReportHtmlTest, RecordWithoutSummarySaysItPredatesThem) {
  const std::string html = ReportHtml(Input(false));
  EXPECT_EQ(Count(html, "This record predates tune summaries"), 3);  // curve, measured, pruning
  EXPECT_TRUE(absl::StrContains(html, "its measured samples are not known either"));
  EXPECT_EQ(Count(html, "class=\"rank-cell\""), 12);  // recomputed all the same
  EXPECT_TRUE(absl::StrContains(html, "id=\"lower-bound-ratio\""));
}

TEST(ReportHtmlTest, TraceThatDoesNotLowerIsSaidNotFatal) {
  ReportInput in = Input(true);
  in.record.set_mesh("x=4");
  const std::string html = ReportHtml(in);
  EXPECT_TRUE(absl::StrContains(html, "id=\"lowering-error\""));
  EXPECT_TRUE(absl::StrContains(html, "id=\"curve\""));
}

TEST(ReportHtmlTest, RecordReportOfAnUnknownIdIsNotFound) {
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  absl::StatusOr<std::string> html = RecordReportHtml(*db, 9);
  EXPECT_EQ(html.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(html.status().message(), "no tuning record with id 9");
}

TEST(ShardingSvgTest, ReplicatedTensorSharesOneColourAcrossItsHolders) {
  codegen::TensorInfo t;
  t.name = "B";
  t.dims = {"k", "n"};
  t.shape = {8, 8};
  t.local_shape = {8, 4};
  t.layout.resize(2);
  t.layout[1].blocks.push_back({4, codegen::Expr::Var("y")});  // split over y, copies along x
  EXPECT_EQ(BlockOfRank(t, {"x", "y"}, {1, 1}), "B[0:8, 4:8]");
  const std::string svg = ShardingSvg(t, {"x", "y"}, {3, 2});
  EXPECT_EQ(Count(svg, "class=\"rank-cell\""), 6);
  EXPECT_EQ(Count(svg, "class=\"legend-swatch\""), 2);
  EXPECT_TRUE(absl::StrContains(svg, "B[0:8, 0:4] held by 3 ranks"));
  // A 3-D mesh: one grid per coordinate of its first axis.
  const std::string cube = ShardingSvg(t, {"x", "y", "z"}, {2, 2, 2});
  EXPECT_EQ(Count(cube, "class=\"rank-cell\""), 8);
  EXPECT_TRUE(absl::StrContains(cube, ">x = 1</text>"));
}

TEST(CurveSvgTest, EmptyCurveSaysSo) {
  EXPECT_TRUE(absl::StrContains(CurveSvg({}), "no progress with a best time recorded"));
}

TEST(TuneCurveTest, MergesRepeatsAndThinsToTheCap) {
  TuneCurve curve;
  v1::TuneProgress p;
  p.set_costed(1);
  curve.Add(p);
  p.set_elapsed_s(1);
  curve.Add(p);  // the same but for time: merged
  EXPECT_EQ(curve.points().size(), 1u);
  for (int i = 2; i < 2000; ++i) {
    p.set_costed(i);
    curve.Add(p);
  }
  EXPECT_LE(static_cast<int>(curve.points().size()), kMaxCurvePoints);
  EXPECT_GT(static_cast<int>(curve.points().size()), kMaxCurvePoints / 2);
  EXPECT_EQ(curve.points().front().costed(), 1);
  EXPECT_EQ(curve.points().back().costed(), 1999);
}

TEST(HtmlPageTest, EscapesAndFrames) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  const std::string page = HtmlDocument("a < b", "<p>hi</p>");
  EXPECT_TRUE(absl::StrContains(page, "<title>a &lt; b</title>"));
  EXPECT_TRUE(absl::StrContains(page, "<body>\n<p>hi</p>"));
}

}  // namespace
}  // namespace meshtune::engine
