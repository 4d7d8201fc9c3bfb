// Tuning jobs shared between callers: the daemon's Tune RPC runs each distinct request once.
//
//   caller ──Join(key, run)──▶ TuneJobs ── no job under key: new TuneJob, own thread
//     │                          │            waits for a slot (max concurrent), then run()
//     ▼                          ▼
//   TuneJob::Wait ◀── latest progress (coalesced) ... then the final result or error
//
// A job's callers are its subscribers. A subscriber that leaves early (cancelled, past its
// deadline) calls Leave(); when the last one has left, the job is cancelled through the
// `cancelled` hook its run function polls. CancelAll (shutdown) cancels every job and
// refuses new ones. Thread-safe.
#ifndef MESHTUNE_DAEMON_TUNE_JOBS_H_
#define MESHTUNE_DAEMON_TUNE_JOBS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/meshtune.pb.h"

namespace meshtune::daemon {

// What a job runs: the tune itself. It polls `cancelled` between steps and reports progress
// through `progress` (any thread-compatible rate; the job coalesces it).
using TuneJobFn = std::function<absl::StatusOr<v1::TuneResult>(
    const std::function<bool()>& cancelled,
    const std::function<void(const v1::TuneProgress&)>& progress)>;

class TuneJob {
 public:
  // What a subscriber sees after Wait: progress newer than what it had seen, and the end.
  struct Update {
    std::optional<v1::TuneProgress> progress;
    std::optional<absl::StatusOr<v1::TuneResult>> result;  // set once the job has ended
  };

  // What a status page shows of a job.
  struct Snapshot {
    std::string description;  // as given to TuneJobs::Join
    v1::TuneProgress progress;
    int callers = 0;     // subscribers waiting for it
    bool ended = false;  // its result is in (it leaves the registry next)
  };

  explicit TuneJob(std::string key, std::string description = "")
      : key_(std::move(key)), description_(std::move(description)) {}

  const std::string& key() const { return key_; }

  // Its description, latest progress and callers, read consistently.
  Snapshot Snap() const;

  // Blocks until the job has progress past `*seen` (then advances `*seen`), has ended, or
  // `timeout` has passed (then both fields are empty).
  Update Wait(int64_t* seen, absl::Duration timeout);

  // The subscriber goes away before the end. The last one to leave cancels the job.
  void Leave();

  // Cancels the job whether or not anyone waits.
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class TuneJobs;
  void Subscribe();
  void Publish(const v1::TuneProgress& progress);
  void Finish(absl::StatusOr<v1::TuneResult> result);

  const std::string key_;
  const std::string description_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int subscribers_ = 0;
  int64_t version_ = 0;  // bumped on every published progress
  v1::TuneProgress progress_;
  std::optional<absl::StatusOr<v1::TuneResult>> result_;
};

class TuneJobs {
 public:
  // At most `max_concurrent` (>= 1) jobs run at once; the others wait in stage "queued"
  // and start in the order they were joined.
  explicit TuneJobs(int max_concurrent);
  // Cancels every job and waits for their threads.
  ~TuneJobs();

  TuneJobs(const TuneJobs&) = delete;
  TuneJobs& operator=(const TuneJobs&) = delete;

  // Subscribes the caller to the running job under `key`, or starts `run` as a new one
  // (described as `description` on status pages). `*shared` tells which. Unavailable after
  // CancelAll.
  absl::StatusOr<std::shared_ptr<TuneJob>> Join(const std::string& key, TuneJobFn run, bool* shared,
                                                const std::string& description = "");

  // The jobs running or queued, oldest first, as status pages show them (a job whose result
  // is in is left out).
  std::vector<TuneJob::Snapshot> Snapshots() const;

  // Cancels every job, refuses new ones from now on, and waits up to `grace` for the jobs'
  // threads to end. False when some job is still running at the deadline.
  bool CancelAll(absl::Duration grace);

  // Jobs running or queued.
  int active() const;

 private:
  struct Worker {
    std::shared_ptr<TuneJob> job;
    std::thread thread;
    bool done = false;  // RunJob has left its last critical section
  };
  void RunJob(Worker* worker, TuneJobFn run);
  void ReapLocked();  // joins the threads of ended jobs

  const int max_concurrent_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a slot freed, a job ended
  bool closed_ = false;
  int running_ = 0;
  std::map<std::string, std::shared_ptr<TuneJob>> jobs_;  // active jobs by key
  std::deque<const TuneJob*> waiting_;                    // jobs not yet started, oldest first
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace meshtune::daemon

#endif  // MESHTUNE_DAEMON_TUNE_JOBS_H_
