// meshtuned --http as a browser's HTTP client sees it: a daemon started with --http on a free
// loopback port over a database holding a tuned record (a model-only tune, no MPI) serves
// the index, the records, the record's report and the tunes in progress; unknown paths and
// records are 404 pages, other methods 405; a bad --http value is refused with exit status 2.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "httplib.h"
#include "tests/meshtuned_process.h"
#include "tests/test_util.h"

namespace {

using ::meshtune::testing::CliRun;
using ::meshtune::testing::Meshtune;
using ::meshtune::testing::MeshtunedProcess;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class DaemonHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
    setenv("MESHTUNE_HOME", (dir_ + "/home").c_str(), 1);
    db_ = dir_ + "/http.db";
    const CliRun tune = Meshtune(
        "tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=32,k=32 --mesh x=2,y=2 "
        "--model-only --max-evaluations 200 --db " +
        db_);
    ASSERT_EQ(tune.status, 0) << tune.err;
  }
  std::string dir_, db_;
};

// The port of "http://127.0.0.1:PORT/"; 0 when it is not such a URL.
int PortOf(const std::string& url) {
  const std::string prefix = "http://127.0.0.1:";
  if (url.rfind(prefix, 0) != 0 || url.back() != '/') return 0;
  int port = 0;
  return absl::SimpleAtoi(url.substr(prefix.size(), url.size() - prefix.size() - 1), &port) ? port
                                                                                            : 0;
}

TEST_F(DaemonHttpTest, ServesRecordsReportsAndTunesReadOnly) {
  MeshtunedProcess daemon(db_, dir_ + "/daemon.log", "", {"--http", ":0"});
  ASSERT_NE(daemon.address(), "") << daemon.log();
  const int port = PortOf(daemon.http_url());
  ASSERT_GT(port, 0) << daemon.http_url() << daemon.log();
  httplib::Client client("127.0.0.1", port);

  httplib::Result index = client.Get("/");
  ASSERT_TRUE(index) << httplib::to_string(index.error());
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_TRUE(absl::StrContains(index->body, "<a href=\"/records\">records</a>"));
  EXPECT_TRUE(absl::StrContains(index->body, db_));

  httplib::Result records = client.Get("/records");
  ASSERT_TRUE(records);
  EXPECT_EQ(records->status, 200);
  EXPECT_EQ(Count(records->body, "<tr class=\"record\">"), 1);
  EXPECT_TRUE(absl::StrContains(records->body, "<a href=\"/records/1\">1</a>"));

  httplib::Result report = client.Get("/records/1");
  ASSERT_TRUE(report);
  EXPECT_EQ(report->status, 200);
  for (const char* id : {"nav", "winner", "trace", "sharding", "curve", "pruning"}) {
    EXPECT_TRUE(absl::StrContains(report->body, std::string("id=\"") + id + "\"")) << id;
  }
  EXPECT_EQ(Count(report->body, "class=\"rank-cell\""), 12);

  httplib::Result tunes = client.Get("/tunes");
  ASSERT_TRUE(tunes);
  EXPECT_EQ(tunes->status, 200);
  EXPECT_TRUE(absl::StrContains(tunes->body, "No tune is running or queued."));

  httplib::Result missing = client.Get("/records/7");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(absl::StrContains(missing->body, "no tuning record with id 7."));
  httplib::Result nowhere = client.Get("/admin");
  ASSERT_TRUE(nowhere);
  EXPECT_EQ(nowhere->status, 404);

  httplib::Result post = client.Post("/records", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  httplib::Result del = client.Delete("/records/1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  EXPECT_EQ(client.Get("/records/1")->status, 200);  // still there

  EXPECT_EQ(daemon.Stop(SIGTERM, 20), 0) << daemon.log();
}

TEST_F(DaemonHttpTest, TunesShowsATuneInProgress) {
  MeshtunedProcess daemon(db_, dir_ + "/tunes.log", "", {"--http", "127.0.0.1:0"});
  const int port = PortOf(daemon.http_url());
  ASSERT_GT(port, 0) << daemon.http_url() << daemon.log();
  // A model-only tune of every mesh of 1024 ranks takes seconds: long enough to be seen.
  CliRun tune;
  std::thread tuner([&] {
    tune = Meshtune(
        "tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=8192,n=8192,k=8192 --ranks 1024 "
        "--model-only --server " +
        daemon.address());
  });
  httplib::Client client("127.0.0.1", port);
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
    httplib::Result page = client.Get("/tunes");
    if (page && absl::StrContains(page->body, "<tr class=\"tune\">")) seen = page->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  tuner.join();
  EXPECT_EQ(tune.status, 0) << tune.err;
  ASSERT_FALSE(seen.empty()) << "no tune seen in progress";
  EXPECT_EQ(Count(seen, "<tr class=\"tune\">"), 1);
  EXPECT_TRUE(absl::StrContains(
      seen,
      "C[m,n] += A[m,k] * B[k,n] (m=8192,n=8192,k=8192, f32) on ranks=1024, profile "
      "default, model only</td>"))
      << seen;
  httplib::Result after = client.Get("/tunes");
  ASSERT_TRUE(after);
  EXPECT_TRUE(absl::StrContains(after->body, "No tune is running or queued."));
}

TEST_F(DaemonHttpTest, OffByDefaultAndBadValuesRefused) {
  {
    MeshtunedProcess daemon(db_, dir_ + "/plain.log");
    ASSERT_NE(daemon.address(), "") << daemon.log();
    EXPECT_EQ(daemon.http_url(), "");
  }
  const std::string out = dir_ + "/bad.out";
  const int rc = std::system(
      ("daemon/meshtuned --db " + db_ + " --http 127.0.0.1:99999 >" + out + " 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_EQ(meshtune::testing::ReadFile(out),
            "--http: '127.0.0.1:99999': port 99999 is out of range (0 to 65535; 0 picks a free "
            "port)\nRun with --help for more information.\n");
}

}  // namespace
