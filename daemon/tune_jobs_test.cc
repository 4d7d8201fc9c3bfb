#include "daemon/tune_jobs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace meshtune::daemon {
namespace {

// A job body that reports progress until cancelled or released, counting its runs.
struct FakeTune {
  std::atomic<int> runs{0};
  std::atomic<bool> release{false};

  TuneJobFn Fn() {
    return [this](const std::function<bool()>& cancelled,
                  const std::function<void(const v1::TuneProgress&)>& progress)
               -> absl::StatusOr<v1::TuneResult> {
      ++runs;
      v1::TuneProgress p;
      p.set_stage("search");
      progress(p);
      while (!release.load()) {
        if (cancelled()) return absl::CancelledError("cancelled");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      v1::TuneResult r;
      r.set_strategy("fake");
      return r;
    };
  }
};

// Waits on `job` until it ends (at most 10 s); the updates' progress stages go to `stages`.
absl::StatusOr<v1::TuneResult> WaitForEnd(TuneJob& job,
                                          std::vector<std::string>* stages = nullptr) {
  int64_t seen = 0;
  for (int i = 0; i < 1000; ++i) {
    TuneJob::Update u = job.Wait(&seen, absl::Milliseconds(10));
    if (u.progress && stages) stages->push_back(u.progress->stage());
    if (u.result) return *u.result;
  }
  return absl::DeadlineExceededError("the job did not end");
}

TEST(TuneJobsTest, IdenticalKeysShareOneRun) {
  TuneJobs jobs(1);
  FakeTune fake;
  bool shared = true;
  absl::StatusOr<std::shared_ptr<TuneJob>> a = jobs.Join("k", fake.Fn(), &shared);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(shared);
  absl::StatusOr<std::shared_ptr<TuneJob>> b = jobs.Join("k", fake.Fn(), &shared);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(shared);
  EXPECT_EQ(a->get(), b->get());
  fake.release = true;
  std::vector<std::string> stages;
  absl::StatusOr<v1::TuneResult> r = WaitForEnd(**a, &stages);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->strategy(), "fake");
  EXPECT_TRUE(WaitForEnd(**b).ok());
  EXPECT_EQ(fake.runs.load(), 1);
  ASSERT_FALSE(stages.empty());
}

TEST(TuneJobsTest, TheLastSubscriberToLeaveCancelsTheJob) {
  TuneJobs jobs(1);
  FakeTune fake;
  bool shared = false;
  std::shared_ptr<TuneJob> a = *jobs.Join("k", fake.Fn(), &shared);
  std::shared_ptr<TuneJob> b = *jobs.Join("k", fake.Fn(), &shared);
  a->Leave();
  EXPECT_FALSE(a->cancelled());
  b->Leave();
  EXPECT_TRUE(a->cancelled());
  EXPECT_EQ(WaitForEnd(*a).status().code(), absl::StatusCode::kCancelled);
  // A new caller with the same key gets a fresh job.
  std::shared_ptr<TuneJob> c = *jobs.Join("k", fake.Fn(), &shared);
  EXPECT_FALSE(shared);
  fake.release = true;
  EXPECT_TRUE(WaitForEnd(*c).ok());
}

TEST(TuneJobsTest, JobsBeyondTheLimitQueue) {
  TuneJobs jobs(1);
  FakeTune first, second;
  bool shared = false;
  std::shared_ptr<TuneJob> a = *jobs.Join("a", first.Fn(), &shared);
  std::shared_ptr<TuneJob> b = *jobs.Join("b", second.Fn(), &shared);
  for (int i = 0; i < 1000 && first.runs.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(first.runs.load(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(second.runs.load(), 0);
  int64_t seen = 0;
  TuneJob::Update u = b->Wait(&seen, absl::Milliseconds(10));
  ASSERT_TRUE(u.progress.has_value());
  EXPECT_EQ(u.progress->stage(), "queued");
  first.release = true;
  second.release = true;
  EXPECT_TRUE(WaitForEnd(*a).ok());
  EXPECT_TRUE(WaitForEnd(*b).ok());
  EXPECT_EQ(second.runs.load(), 1);
}

TEST(TuneJobsTest, SnapshotsListRunningAndQueuedJobsOldestFirst) {
  TuneJobs jobs(1);
  FakeTune first, second;
  bool shared = false;
  std::shared_ptr<TuneJob> a = *jobs.Join("a", first.Fn(), &shared, "first tune");
  std::shared_ptr<TuneJob> b = *jobs.Join("b", second.Fn(), &shared, "second tune");
  std::shared_ptr<TuneJob> again = *jobs.Join("a", first.Fn(), &shared, "ignored: shared");
  for (int i = 0; i < 1000 && first.runs.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int64_t seen = 0;
  ASSERT_TRUE(b->Wait(&seen, absl::Seconds(10)).progress.has_value());  // queued, published
  std::vector<TuneJob::Snapshot> snaps = jobs.Snapshots();
  ASSERT_EQ(snaps.size(), 2u);
  EXPECT_EQ(snaps[0].description, "first tune");
  EXPECT_EQ(snaps[0].callers, 2);
  EXPECT_EQ(snaps[0].progress.stage(), "search");
  EXPECT_EQ(snaps[1].description, "second tune");
  EXPECT_EQ(snaps[1].progress.stage(), "queued");
  first.release = true;
  second.release = true;
  EXPECT_TRUE(WaitForEnd(*a).ok());
  EXPECT_TRUE(WaitForEnd(*b).ok());
  for (const TuneJob::Snapshot& s : jobs.Snapshots()) EXPECT_FALSE(s.ended);
  for (int i = 0; i < 1000 && !jobs.Snapshots().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(jobs.Snapshots().empty());
}

TEST(TuneJobsTest, CancelAllEndsEveryJobAndRefusesNewOnes) {
  TuneJobs jobs(1);
  FakeTune running, queued;
  bool shared = false;
  std::shared_ptr<TuneJob> a = *jobs.Join("a", running.Fn(), &shared);
  std::shared_ptr<TuneJob> b = *jobs.Join("b", queued.Fn(), &shared);
  EXPECT_TRUE(jobs.CancelAll(absl::Seconds(10)));
  EXPECT_EQ(WaitForEnd(*a).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(WaitForEnd(*b).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(queued.runs.load(), 0);
  EXPECT_EQ(jobs.Join("c", running.Fn(), &shared).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(jobs.active(), 0);
}

}  // namespace
}  // namespace meshtune::daemon
