// A run's measurement as the RunResult message the worker prints and the launcher parses.
#include "runtime/launch/run_result.h"

#include <gtest/gtest.h>

#include "base/json.h"

namespace meshtune::runtime {
namespace {

TEST(RunResultTest, CarriesEveryFieldAndTheSamplesMedian) {
  RunStats m;
  m.verified = false;
  m.seconds = {0.5, 0.125, 0.25, 1.0};
  m.kernel_seconds = {0.25, 0.0625, 0.125, 0.5};
  m.bytes_sent_max = 64;
  m.bytes_copied_max = 32;
  m.checksum = 1.5;
  m.error = "rank \"0\"\\\n";
  const v1::RunResult r = RunResultOf(m);
  EXPECT_FALSE(r.verified());
  EXPECT_EQ(r.seconds_size(), 4);
  EXPECT_EQ(r.median_s(), 0.375);  // the median of 0.125, 0.25, 0.5, 1.0
  EXPECT_EQ(r.sample().n(), 4);
  EXPECT_EQ(r.sample().batch(), 1);
  EXPECT_EQ(r.sample().min_s(), 0.125);
  EXPECT_EQ(r.sample().max_s(), 1.0);
  EXPECT_EQ(r.sample().samples_s_size(), 4);
  EXPECT_EQ(r.kernel_median_s(), 0.25);
  EXPECT_EQ(r.bytes_sent_max(), 64);
  EXPECT_EQ(r.bytes_copied_max(), 32);
  EXPECT_EQ(r.checksum(), 1.5);
  EXPECT_EQ(r.error(), m.error);
  EXPECT_EQ(r.checked(), "");
  EXPECT_EQ(RunResultOf(RunStats{}).median_s(), 0);
  EXPECT_FALSE(RunResultOf(RunStats{}).has_sample());
}

// Repetitions in batches: a sample is the mean of its batch, in the order taken.
TEST(RunResultTest, BatchedRepetitionsFormSamples) {
  RunStats m;
  m.seconds = {1, 3, 2, 2, 10, 20, 7};  // the trailing partial batch is dropped
  m.batch = 2;
  const v1::RunResult r = RunResultOf(m);
  ASSERT_EQ(r.sample().samples_s_size(), 3);
  EXPECT_EQ(r.sample().samples_s(0), 2);
  EXPECT_EQ(r.sample().samples_s(1), 2);
  EXPECT_EQ(r.sample().samples_s(2), 15);
  EXPECT_EQ(r.sample().batch(), 2);
  EXPECT_EQ(r.median_s(), 2);
  EXPECT_EQ(r.sample().ci_low_s(), 2);  // three samples: the whole range
  EXPECT_EQ(r.sample().ci_high_s(), 15);
  EXPECT_DOUBLE_EQ(r.sample().ci_level(), 0.75);
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
