#include "runtime/launch/rounds.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "base/sample_stats.h"
#include "runtime/launch/repetitions.h"
#include "runtime/launch/run_job.h"

namespace meshtune::runtime {

namespace {

constexpr int kScheduler = -1;

// Who may run: the scheduler or one job's thread. Exactly one holds it at a time.
class Baton {
 public:
  void PassTo(int who) {
    std::lock_guard<std::mutex> lock(mu_);
    holder_ = who;
    cv_.notify_all();
  }
  void WaitFor(int who) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return holder_ == who; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int holder_ = kScheduler;
};

// A job's gate in the rounds: runs the scheduler's command (`warm` untimed repetitions,
// then `timed` timed ones; none of either: stop), then hands the baton back and waits for
// the next.
class RoundGate : public RepetitionGate {
 public:
  RoundGate(int index, Baton* baton) : index_(index), baton_(baton) {}

  // Set by the scheduler before it passes the baton.
  void Command(int warm, int timed) {
    warm_ = warm;
    timed_ = timed;
    times_.clear();
  }
  // The times of the last command's timed repetitions, and of its last warm-up (0: none).
  const std::vector<double>& times() const { return times_; }
  double last_warm() const { return last_warm_; }

  Repetition Next() override {
    // The first call runs the command the job's thread started with; later ones hand the
    // baton back once the command is done, and wait for the next.
    if (warm_ == 0 && timed_ == 0 && started_) {
      baton_->PassTo(kScheduler);
      baton_->WaitFor(index_);
    }
    started_ = true;
    if (warm_ == 0 && timed_ == 0) return Repetition::kStop;
    current_ = warm_ > 0 ? Repetition::kWarmup : Repetition::kTimed;
    --(warm_ > 0 ? warm_ : timed_);
    return current_;
  }
  void Timed(double seconds) override {
    if (current_ == Repetition::kTimed) {
      times_.push_back(seconds);
    } else {
      last_warm_ = seconds;
    }
  }

 private:
  int index_;
  Baton* baton_;
  bool started_ = false;
  int warm_ = 0, timed_ = 0;
  Repetition current_ = Repetition::kStop;
  std::vector<double> times_;
  double last_warm_ = 0;
};

double Mean(const std::vector<double>& v) {
  return v.empty() ? std::numeric_limits<double>::quiet_NaN()
                   : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The jobs one after another: `min_rounds` samples each (no threads).
std::vector<RunStats> RunInTurn(const std::vector<WorkerJob>& jobs, const RoundsOptions& options,
                                MPI_Comm comm) {
  std::vector<RunStats> out;
  for (WorkerJob job : jobs) {
    job.options.reps = std::max(1, options.min_rounds);
    job.options.warmup = std::max(1, job.options.warmup);
    out.push_back(RunJob(job, comm));
  }
  return out;
}

// The state of one round-robin measurement.
class Rounds {
 public:
  Rounds(const std::vector<WorkerJob>& jobs, const RoundsOptions& options, MPI_Comm comm)
      : jobs_(jobs),
        options_(options),
        comm_(comm),
        stats_(jobs.size()),
        done_(jobs.size()),
        samples_(jobs.size()),
        batch_(jobs.size(), 1) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      gates_.push_back(std::make_unique<RoundGate>(static_cast<int>(j), &baton_));
    }
  }

  std::vector<RunStats> Run() {
    std::vector<std::thread> threads;
    for (size_t j = 0; j < jobs_.size(); ++j) threads.emplace_back([this, j] { JobThread(j); });
    const double start = MPI_Wtime();
    // Warm-ups: at least two, so that the batch is sized on a warm repetition.
    for (size_t j = 0; j < jobs_.size(); ++j) {
      Step(j, std::max(2, jobs_[j].options.warmup), 0);
      if (!done_[j]) batch_[j] = BatchFor(gates_[j]->last_warm());
    }
    std::vector<size_t> order(jobs_.size());
    std::iota(order.begin(), order.end(), 0);
    for (int round = 0; round < std::max(1, options_.max_rounds); ++round) {
      std::mt19937_64 rng(options_.seed + static_cast<uint64_t>(round));
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t j : order) {
        if (done_[j]) {
          samples_[j].push_back(std::numeric_limits<double>::quiet_NaN());
          continue;
        }
        // One untimed repetition first: the candidate's data and code back in the caches
        // the others' samples took, as a run alone has them.
        Step(j, 1, batch_[j]);
        samples_[j].push_back(done_[j] ? std::numeric_limits<double>::quiet_NaN()
                                       : Mean(gates_[j]->times()));
      }
      if (Stop(round + 1, MPI_Wtime() - start)) break;
    }
    for (size_t j = 0; j < jobs_.size(); ++j) {
      if (!done_[j]) Step(j, 0, 0);  // stop: the job checks its output and ends
    }
    for (std::thread& t : threads) t.join();
    for (size_t j = 0; j < jobs_.size(); ++j) stats_[j].batch = batch_[j];
    return std::move(stats_);
  }

 private:
  // Job j's thread: waits for its first command, runs the job under its gate, ends.
  void JobThread(size_t j) {
    baton_.WaitFor(static_cast<int>(j));
    WorkerJob job = jobs_[j];
    job.options.gate = gates_[j].get();
    stats_[j] = RunJob(job, comm_);
    done_[j] = true;
    baton_.PassTo(kScheduler);
  }

  // Gives job j `warm` untimed and then `timed` timed repetitions (none of either: stop)
  // and waits until it hands the baton back.
  void Step(size_t j, int warm, int timed) {
    gates_[j]->Command(warm, timed);
    baton_.PassTo(static_cast<int>(j));
    baton_.WaitFor(kScheduler);
  }

  // Rank 0's decision after `rounds` rounds, `elapsed` s in, told to every rank.
  bool Stop(int rounds, double elapsed) {
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    int stop = 0;
    if (rank == 0) {
      stop = rounds >= options_.max_rounds || elapsed >= options_.budget_s ||
             (rounds >= options_.min_rounds && LeaderSeparated(samples_));
      size_t alive = 0;
      for (size_t j = 0; j < jobs_.size(); ++j) alive += done_[j] ? 0 : 1;
      if (alive <= 1 && rounds >= options_.min_rounds) stop = 1;
      if (alive == 0) stop = 1;
    }
    MPI_Bcast(&stop, 1, MPI_INT, 0, comm_);
    return stop != 0;
  }

  const std::vector<WorkerJob>& jobs_;
  const RoundsOptions& options_;
  MPI_Comm comm_;
  Baton baton_;
  std::vector<std::unique_ptr<RoundGate>> gates_;
  std::vector<RunStats> stats_;
  std::vector<char> done_;  // the job's thread has ended (checked, or failed early)
  std::vector<std::vector<double>> samples_;
  std::vector<int> batch_;
};

}  // namespace

bool LeaderSeparated(const std::vector<std::vector<double>>& samples) {
  std::vector<std::pair<double, size_t>> medians;
  for (size_t j = 0; j < samples.size(); ++j) {
    std::vector<double> finite;
    for (double s : samples[j]) {
      if (std::isfinite(s)) finite.push_back(s);
    }
    if (!finite.empty()) medians.push_back({base::Summarize(finite).median, j});
  }
  if (medians.size() < 2) return false;
  std::sort(medians.begin(), medians.end());
  return base::ComparePaired(samples[medians[0].second], samples[medians[1].second]).separated;
}

std::vector<RunStats> RunJobsInRounds(const std::vector<WorkerJob>& jobs,
                                      const RoundsOptions& options, MPI_Comm comm) {
  int size = 0, provided = MPI_THREAD_SINGLE;
  MPI_Comm_size(comm, &size);
  MPI_Query_thread(&provided);
  std::vector<WorkerJob> runnable;
  std::vector<RunStats> out(jobs.size());
  std::vector<size_t> where;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (JobRanks(jobs[j]) != size) {
      out[j] = RunJob(jobs[j], comm);  // carries the error: the job's ranks differ
      continue;
    }
    runnable.push_back(jobs[j]);
    where.push_back(j);
  }
  std::vector<RunStats> measured = provided >= MPI_THREAD_SERIALIZED && runnable.size() > 1
                                       ? Rounds(runnable, options, comm).Run()
                                       : RunInTurn(runnable, options, comm);
  for (size_t i = 0; i < where.size(); ++i) out[where[i]] = std::move(measured[i]);
  return out;
}

}  // namespace meshtune::runtime
