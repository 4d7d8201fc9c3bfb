#include "engine/report_html.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/curve_svg.h"
#include "engine/html_page.h"
#include "engine/sharding_svg.h"
#include "engine/tune_options.h"
#include "engine/tune_summary.h"
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
    if (nb == 64) l->set_measured_s(1.5e-5);
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
}

TEST(ReportHtmlTest, RecordWithoutSummarySaysItPredatesThem) {
  const std::string html = ReportHtml(Input(false));
  EXPECT_EQ(Count(html, "This record predates tune summaries"), 3);  // curve, measured, pruning
  EXPECT_EQ(Count(html, "class=\"rank-cell\""), 12);                 // recomputed all the same
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
