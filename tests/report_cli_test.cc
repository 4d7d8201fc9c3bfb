// `meshtune tune --report` and `meshtune report` as a user runs them: a model-only tune
// writes its report, the stored record's report shows the same tune, a record without a tune
// summary (imported from a wisdom file) still gets one that says what it lacks, and bad input
// gets exact messages and exit statuses before any work.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "proto/meshtune.pb.h"
#include "tests/proto_json.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::ParsesAs;
using ::meshtune::testing::ReadFile;

const std::string kTune =
    "tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=32,k=32 --mesh x=2,y=2 "
    "--model-only --max-evaluations 200 ";

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The number in <span id="ID">N</span>; -1 when missing.
int SpanNumber(const std::string& html, const std::string& id) {
  const std::string open = "<span id=\"" + id + "\">";
  const size_t at = html.find(open);
  if (at == std::string::npos) return -1;
  int n = -1;
  const size_t from = at + open.size();
  if (!absl::SimpleAtoi(html.substr(from, html.find('<', from) - from), &n)) return -1;
  return n;
}

class ReportCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp");
    setenv("MESHTUNE_HOME", (dir_ + "/home").c_str(), 1);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(ReportCliTest, TuneReportAndTheRecordsReportShowTheSameTune) {
  const std::string db = Path("same.db");
  const CliRun tune = Meshtune(kTune + "--json --db " + db + " --report " + Path("tune.html"));
  ASSERT_EQ(tune.status, 0) << tune.err << tune.out;
  meshtune::v1::TuneResult result;
  ASSERT_TRUE(ParsesAs(tune.out, &result)) << tune.out;
  ASSERT_EQ(result.record().id(), 1);
  const CliRun report = Meshtune("report 1 -o " + Path("record.html") + " --db " + db);
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_EQ(report.out, "");
  for (const char* name : {"tune.html", "record.html"}) {
    const std::string html = ReadFile(Path(name));
    SCOPED_TRACE(name);
    EXPECT_TRUE(absl::StartsWith(html, "<!DOCTYPE html>"));
    for (const char* id : {"problem", "winner", "trace", "pseudocode", "transfers", "sharding",
                           "curve", "measured", "lower-bound", "pruning"}) {
      EXPECT_TRUE(absl::StrContains(html, absl::StrCat("id=\"", id, "\""))) << id;
    }
    // The winner's trace, line by line (escaped as HTML).
    EXPECT_TRUE(absl::StrContains(
        html, absl::StrCat("<pre id=\"trace\">", result.record().trace().text(), "</pre>")));
    EXPECT_EQ(Count(html, "class=\"rank-cell\""), 12);  // 4 ranks x 3 tensors
    EXPECT_EQ(Count(html, "class=\"sharding\""), 3);
    // One circle per stored progress point with a best predicted time (the first report,
    // of the space, has none yet).
    const int predicted = SpanNumber(html, "curve-points-predicted");
    EXPECT_GT(predicted, 0);
    EXPECT_GE(SpanNumber(html, "curve-points"), predicted);
    EXPECT_EQ(Count(html, "class=\"curve-point predicted\""), predicted);
    EXPECT_EQ(SpanNumber(html, "curve-points-measured"), 0);
    EXPECT_TRUE(absl::StrContains(html, "Nothing was measured (a model-only tune)."));
    EXPECT_TRUE(absl::StrContains(html, "<code>non_local_access</code>"));
    EXPECT_TRUE(absl::StrContains(html, absl::StrCat(">", result.enumerated(), "</td>")));
    EXPECT_TRUE(absl::StrContains(html, "id=\"lower-bound-ratio\""));
    EXPECT_FALSE(absl::StrContains(html, "<script"));
    EXPECT_FALSE(absl::StrContains(html, "predates tune summaries"));
  }
  // To standard output with "-".
  const CliRun out = Meshtune("report 1 -o - --db " + db);
  ASSERT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(absl::StartsWith(out.out, "<!DOCTYPE html>"));
  EXPECT_TRUE(absl::EndsWith(out.out, "</html>\n"));
}

TEST_F(ReportCliTest, ImportedRecordWithoutSummaryGetsAReportSayingSo) {
  const std::string db = Path("first.db"), other = Path("imported.db");
  ASSERT_EQ(Meshtune(kTune + "--db " + db).status, 0);
  ASSERT_EQ(
      std::system(("cli/meshtune records export --db " + db + " > " + Path("w.jsonl")).c_str()), 0);
  ASSERT_EQ(Meshtune("records import " + Path("w.jsonl") + " --db " + other).status, 0);
  const CliRun report = Meshtune("report 1 -o " + Path("imported.html") + " --db " + other);
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = ReadFile(Path("imported.html"));
  EXPECT_EQ(Count(html, "This record predates tune summaries"), 3);  // curve, measured, pruning
  EXPECT_EQ(Count(html, "class=\"rank-cell\""), 12);                 // recomputed from the trace
  EXPECT_TRUE(absl::StrContains(html, "T0[i0,i1] += T1[i0,i2] * T2[i2,i1]"));  // canonical names
}

TEST_F(ReportCliTest, BadInputIsRefusedBeforeAnyWork) {
  const std::string db = Path("bad.db");
  ASSERT_EQ(Meshtune(kTune + "--db " + db).status, 0);
  CliRun r = Meshtune("report 7 -o " + Path("x.html") + " --db " + db);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "meshtune: no tuning record with id 7\n");
  r = Meshtune("report 1 -o /nonexistent/dir/r.html --db " + db);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: cannot open '/nonexistent/dir/r.html' for writing: No such file or "
            "directory\n");
  r = Meshtune("report 1 -o " + Path("x.html") + " --db " + Path("missing.db"));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(absl::StartsWith(r.err, "meshtune: no tuning database at ")) << r.err;
  r = Meshtune("report 0 -o " + Path("x.html") + " --db " + db);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(absl::StartsWith(r.err, "record: '0' is out of range")) << r.err;
  r = Meshtune("report 1 --db " + db);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--output is required")) << r.err;
  // tune checks the report's path before tuning: nothing is tuned or stored.
  const std::string untouched = Path("untouched.db");
  r = Meshtune(kTune + "--db " + untouched + " --report /nonexistent/dir/r.html");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "meshtune: cannot open '/nonexistent/dir/r.html' for writing: No such file or "
            "directory\n");
  EXPECT_EQ(ReadFile(untouched), "");
}

}  // namespace
