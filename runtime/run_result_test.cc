// A run's measurement as the RunResult message the worker prints and the launcher parses.
#include "runtime/run_result.h"

#include <gtest/gtest.h>

#include "base/json.h"

namespace meshtune::runtime {
namespace {

TEST(RunResultTest, CarriesEveryFieldAndTheUpperMedian) {
  RunStats m;
  m.verified = false;
  m.seconds = {0.5, 0.125, 0.25, 1.0};
  m.kernel_seconds = {0.25, 0.0625, 0.125, 0.5};
  m.bytes_sent_max = 64;
  m.bytes_copied_max = 32;
  m.checksum = 1.5;
  m.error = "rank \"0\"\\\n";
  m.pace_s = 0.002;
  const v1::RunResult r = RunResultOf(m);
  EXPECT_FALSE(r.verified());
  EXPECT_EQ(r.seconds_size(), 4);
  EXPECT_EQ(r.median_s(), 0.5);  // the upper median of 0.125, 0.25, 0.5, 1.0
  EXPECT_EQ(r.kernel_median_s(), 0.25);
  EXPECT_EQ(r.bytes_sent_max(), 64);
  EXPECT_EQ(r.bytes_copied_max(), 32);
  EXPECT_EQ(r.checksum(), 1.5);
  EXPECT_EQ(r.error(), m.error);
  EXPECT_EQ(r.checked(), "");
  EXPECT_EQ(r.pace_s(), 0.002);
  EXPECT_EQ(RunResultOf(RunStats{}).median_s(), 0);
}

TEST(RunResultTest, TheLineParsesBackToTheSameMessage) {
  RunStats m;
  m.verified = true;
  m.seconds = {0.25};
  m.checksum = -27.5;
  m.error = "quote \" backslash \\ newline \n tab \t";
  const std::string line = RunResultLine(m);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  v1::RunResult back;
  ASSERT_TRUE(base::FromJson(line, &back).ok()) << line;
  EXPECT_EQ(back.SerializeAsString(), RunResultOf(m).SerializeAsString());
}

}  // namespace
}  // namespace meshtune::runtime
