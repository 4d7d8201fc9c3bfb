#include "daemon/http_pages.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/http_server.h"
#include "engine/records.h"
#include "gtest/gtest.h"
#include "storage/tuning_db.h"
#include "tests/test_util.h"

namespace meshtune::daemon {
namespace {

using ::meshtune::testing::ReadFile;

// SUMMA (examples/summa.trace, k in 8 steps) and how often `what` occurs in `text`.
const std::string kSumma = ReadFile("examples/summa.trace");
int Count(const std::string& text, const std::string& what) {
  return ::meshtune::testing::Occurrences(text, what);
}

class HttpPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = storage::NewInMemoryTuningDb();
    v1::Problem problem;
    problem.set_expr("C[m,n] += A[m,k] * B[k,n]");
    problem.set_extents("m=16,n=16,k=16");
    v1::Mesh mesh;
    mesh.set_axes("x=2,y=2");
    absl::StatusOr<storage::Workload> w = engine::RequestWorkload(problem, mesh, 0, "default");
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < 51; ++i) {  // a page and one more
      v1::TuneResult result;
      *result.mutable_record()->mutable_problem() = problem;
      result.mutable_record()->set_mesh("x=2,y=2");
      result.mutable_record()->mutable_trace()->set_text(kSumma);
      result.mutable_record()->set_predicted_s(1e-5 + i * 1e-7);
      v1::TuneSummary summary;
      *summary.mutable_problem() = problem;
      summary.set_enumerated(100);
      const absl::Status s = engine::StoreTuneResult(*db_, *w, &result, &summary);
      ASSERT_TRUE(s.ok()) << s;
    }
  }

  HttpPages Pages() {
    return HttpPages(db_.get(), "/data/tuning.db", [this] { return tunes_; });
  }

  std::unique_ptr<storage::TuningDb> db_;
  std::vector<TuneJob::Snapshot> tunes_;
};

TEST_F(HttpPagesTest, IndexLinksThePages) {
  const HttpPage page = Pages().Get("/", {});
  EXPECT_EQ(page.status, 200);
  EXPECT_TRUE(absl::StrContains(page.html, "<a href=\"/records\">records</a>: every"));
  EXPECT_TRUE(absl::StrContains(page.html, "<a href=\"/tunes\">tunes in progress</a>: 0 running"));
  EXPECT_TRUE(absl::StrContains(page.html, "<code>/data/tuning.db</code>"));
}

TEST_F(HttpPagesTest, RecordsComeAPageAtATime) {
  HttpPage page = Pages().Get("/records", {});
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(Count(page.html, "<tr class=\"record\">"), 50);
  EXPECT_TRUE(absl::StrContains(page.html, "<a href=\"/records/1\">1</a>"));
  EXPECT_TRUE(absl::StrContains(page.html, "<code>T0[i0,i1] += T1[i0,i2] * T2[i2,i1]</code>"));
  EXPECT_TRUE(absl::StrContains(page.html, "<a id=\"next\" href=\"/records?after=50\">"));
  page = Pages().Get("/records", {{"after", "50"}});
  EXPECT_EQ(Count(page.html, "<tr class=\"record\">"), 1);
  EXPECT_TRUE(absl::StrContains(page.html, "<a href=\"/records/51\">51</a>"));
  EXPECT_FALSE(absl::StrContains(page.html, "id=\"next\""));
  page = Pages().Get("/records", {{"after", "<x>"}});
  EXPECT_EQ(page.status, 400);
  EXPECT_TRUE(absl::StrContains(page.html, "after=&lt;x&gt; is not a record id"));
}

TEST_F(HttpPagesTest, RecordIsItsReportWithNavigation) {
  const HttpPage page = Pages().Get("/records/2", {});
  EXPECT_EQ(page.status, 200);
  EXPECT_TRUE(absl::StrContains(page.html, "<nav id=\"nav\">"));
  EXPECT_TRUE(absl::StrContains(page.html, "id=\"sharding\""));
  EXPECT_EQ(Count(page.html, "class=\"rank-cell\""), 12);
  EXPECT_TRUE(absl::StrContains(page.html, "C[m,n] += A[m,k] * B[k,n]"));  // the tune's names
}

TEST_F(HttpPagesTest, UnknownPathsAndRecordsAreNotFound) {
  HttpPage page = Pages().Get("/records/99", {});
  EXPECT_EQ(page.status, 404);
  EXPECT_TRUE(absl::StrContains(
      page.html, "Nothing at <code>/records/99</code>. no tuning record with id 99.</p>"));
  page = Pages().Get("/records/<b>", {});
  EXPECT_EQ(page.status, 404);
  EXPECT_TRUE(absl::StrContains(page.html,
                                "<code>/records/&lt;b&gt;</code>. A record is "
                                "addressed by its id, e.g. /records/1."));
  page = Pages().Get("/favicon.ico", {});
  EXPECT_EQ(page.status, 404);
  EXPECT_TRUE(
      absl::StrContains(page.html, "meshtuned serves /, /records, /records/ID and /tunes."));
  EXPECT_EQ(MethodNotAllowedPage("POST").status, 405);
}

TEST_F(HttpPagesTest, TunesShowTheirProgressNumbers) {
  HttpPage page = Pages().Get("/tunes", {});
  EXPECT_TRUE(absl::StrContains(page.html, "id=\"no-tunes\""));
  TuneJob::Snapshot t;
  t.description = "C[m,n] += A[m,k] * B[k,n] (m=<b>)";
  t.progress.set_stage("measure");
  t.progress.set_enumerated(771840);
  t.progress.set_legal(18712);
  t.progress.set_costed(915);
  t.progress.set_measured(1);
  t.progress.set_to_measure(3);
  t.progress.set_best_predicted_s(2.19627e-06);
  t.callers = 2;
  tunes_ = {t};
  page = Pages().Get("/tunes", {});
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(Count(page.html, "<tr class=\"tune\">"), 1);
  EXPECT_TRUE(absl::StrContains(page.html, "(m=&lt;b&gt;)</td><td>measure</td>"));
  EXPECT_TRUE(absl::StrContains(page.html, ">771840</td>"));
  EXPECT_TRUE(absl::StrContains(page.html, ">1 of 3</td>"));
  EXPECT_TRUE(absl::StrContains(page.html, ">2.19627e-06</td><td class=\"num\">-</td>"));
}

TEST(HttpAddressTest, DefaultsToLoopbackAndRefusesBadValues) {
  absl::StatusOr<HttpAddress> a = ParseHttpAddress("8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  a = ParseHttpAddress(":0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 0);
  a = ParseHttpAddress("0.0.0.0:80");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "0.0.0.0");
  a = ParseHttpAddress("[::1]:9");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(ParseHttpAddress("localhost:65536").status().message(),
            "'localhost:65536': port 65536 is out of range (0 to 65535; 0 picks a free port)");
  EXPECT_EQ(ParseHttpAddress("::1:80").status().message(),
            "'::1:80': the host is not a name, an IPv4 address or a bracketed IPv6 address "
            "([::1])");
  EXPECT_EQ(ParseHttpAddress("localhost").status().message(),
            "'localhost': the port 'localhost' is not a number");
  EXPECT_EQ(ParseHttpAddress("unix:/tmp/s").status().message(),
            "'unix:/tmp/s': the pages are served over TCP only; give HOST:PORT, :PORT or PORT");
  EXPECT_FALSE(ParseHttpAddress("").ok());
  EXPECT_FALSE(ParseHttpAddress("host:").ok());
  EXPECT_FALSE(ParseHttpAddress("+80").ok());
}

}  // namespace
}  // namespace meshtune::daemon
