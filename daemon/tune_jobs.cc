#include "daemon/tune_jobs.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/status/status.h"

namespace meshtune::daemon {

namespace {

// How often a queued job checks whether it was cancelled.
constexpr auto kQueuePoll = std::chrono::milliseconds(100);

}  // namespace

TuneJob::Update TuneJob::Wait(int64_t* seen, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
               [&] { return result_.has_value() || version_ > *seen; });
  Update update;
  if (version_ > *seen) {
    update.progress = progress_;
    *seen = version_;
  }
  if (result_.has_value()) update.result = *result_;
  return update;
}

void TuneJob::Subscribe() {
  std::lock_guard<std::mutex> lock(mu_);
  ++subscribers_;
}

void TuneJob::Leave() {
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = --subscribers_ == 0 && !result_.has_value();
  }
  if (last) Cancel();
}

void TuneJob::Cancel() {
  cancelled_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

TuneJob::Snapshot TuneJob::Snap() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Snapshot{description_, progress_, subscribers_, result_.has_value()};
}

void TuneJob::Publish(const v1::TuneProgress& progress) {
  std::lock_guard<std::mutex> lock(mu_);
  progress_ = progress;
  ++version_;
  cv_.notify_all();
}

void TuneJob::Finish(absl::StatusOr<v1::TuneResult> result) {
  std::lock_guard<std::mutex> lock(mu_);
  result_ = std::move(result);
  cv_.notify_all();
}

TuneJobs::TuneJobs(int max_concurrent) : max_concurrent_(std::max(1, max_concurrent)) {}

TuneJobs::~TuneJobs() {
  CancelAll(absl::InfiniteDuration());
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<Worker>& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

absl::StatusOr<std::shared_ptr<TuneJob>> TuneJobs::Join(const std::string& key, TuneJobFn run,
                                                        bool* shared,
                                                        const std::string& description) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return absl::UnavailableError("the daemon is shutting down; no new tunes");
  ReapLocked();
  auto it = jobs_.find(key);
  if (it != jobs_.end() && !it->second->cancelled()) {
    it->second->Subscribe();
    *shared = true;
    return it->second;
  }
  // No job, or one that is winding down after its last caller left: start afresh.
  auto job = std::make_shared<TuneJob>(key, description);
  job->Subscribe();
  jobs_[key] = job;
  auto worker = std::make_unique<Worker>();
  worker->job = job;
  Worker* w = worker.get();
  workers_.push_back(std::move(worker));
  waiting_.push_back(job.get());
  w->thread = std::thread(&TuneJobs::RunJob, this, w, std::move(run));
  *shared = false;
  return job;
}

void TuneJobs::RunJob(Worker* worker, TuneJobFn run) {
  TuneJob& job = *worker->job;
  v1::TuneProgress queued;
  queued.set_stage("queued");
  job.Publish(queued);
  bool started = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Jobs start in the order they were joined: only the oldest waiting job takes a slot.
    while (!job.cancelled() && (running_ >= max_concurrent_ || waiting_.front() != &job)) {
      cv_.wait_for(lock, kQueuePoll);
    }
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &job));
    if (!job.cancelled()) {
      ++running_;
      started = true;
    }
    cv_.notify_all();  // the next waiting job may be at the front now
  }
  absl::StatusOr<v1::TuneResult> result =
      absl::CancelledError("the tune was cancelled before it started");
  if (started) {
    result = run([&job] { return job.cancelled(); },
                 [&job](const v1::TuneProgress& p) { job.Publish(p); });
  }
  job.Finish(std::move(result));
  std::lock_guard<std::mutex> lock(mu_);
  if (started) --running_;
  auto it = jobs_.find(job.key());
  if (it != jobs_.end() && it->second.get() == &job) jobs_.erase(it);
  worker->done = true;
  cv_.notify_all();
}

void TuneJobs::ReapLocked() {
  auto ended = std::stable_partition(workers_.begin(), workers_.end(),
                                     [](const std::unique_ptr<Worker>& w) { return !w->done; });
  for (auto it = ended; it != workers_.end(); ++it) (*it)->thread.join();
  workers_.erase(ended, workers_.end());
}

bool TuneJobs::CancelAll(absl::Duration grace) {
  std::unique_lock<std::mutex> lock(mu_);
  closed_ = true;
  for (const std::unique_ptr<Worker>& w : workers_) w->job->Cancel();
  auto all_done = [&] {
    return std::all_of(workers_.begin(), workers_.end(),
                       [](const std::unique_ptr<Worker>& w) { return w->done; });
  };
  bool done = true;
  if (grace == absl::InfiniteDuration()) {
    cv_.wait(lock, all_done);
  } else {
    done = cv_.wait_for(lock, absl::ToChronoNanoseconds(grace), all_done);
  }
  ReapLocked();
  return done;
}

std::vector<TuneJob::Snapshot> TuneJobs::Snapshots() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TuneJob::Snapshot> out;
  for (const std::unique_ptr<Worker>& w : workers_) {  // in the order the jobs started
    const auto it = jobs_.find(w->job->key());
    if (it == jobs_.end() || it->second != w->job) continue;
    TuneJob::Snapshot snap = w->job->Snap();
    if (!snap.ended) out.push_back(std::move(snap));
  }
  return out;
}

int TuneJobs::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(jobs_.size());
}

}  // namespace meshtune::daemon
