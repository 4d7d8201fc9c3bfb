// How many repetitions a measured run makes, decided between them (the timing loops of
// RankRuntimeBase::Measure, the library's GEMM and the statements executor ask a gate).
// Without a gate a loop runs `warmup` untimed repetitions, then `reps` timed ones. A gate
// may decide from the times it is told, and may block between repetitions: the rounds of
// runtime/launch/rounds.h run several candidates side by side, one repetition batch at a time.
// Every rank of a job must get the same answers from its gate (decisions from the times
// the ranks reduced alike, or from rank 0's word).
#ifndef MESHTUNE_RUNTIME_LAUNCH_REPETITIONS_H_
#define MESHTUNE_RUNTIME_LAUNCH_REPETITIONS_H_

#include <cstdint>
#include <vector>

namespace meshtune::runtime {

// What the next repetition of a run is.
enum class Repetition {
  kStop,    // no more: the run checks its output (of the last repetition) and returns
  kWarmup,  // untimed: its time is told (Timed) but not kept
  kTimed,   // timed: its time joins RunStats::seconds
};

class RepetitionGate {
 public:
  virtual ~RepetitionGate() = default;
  // Called before each repetition, outside its time and before its output is reset.
  virtual Repetition Next() = 0;
  // Called after each repetition that Next allowed: its time, the slowest rank's.
  virtual void Timed(double seconds) = 0;
};

// How candidates measured side by side take their rounds (runtime/launch/rounds.h).
struct RoundsOptions {
  int min_rounds = 6;    // rounds before the rule may stop (at least 1)
  int max_rounds = 30;   // rounds at most
  double budget_s = 60;  // wall time from the first warm-up (rank 0's clock)
  uint64_t seed = 1;     // of the rounds' orders
};

// Repetition i of a loop under `gate`; without one (nullptr), warm-ups while i < warmup,
// then timed ones while i < warmup + reps.
inline Repetition NextRepetition(RepetitionGate* gate, int i, int warmup, int reps) {
  if (gate != nullptr) return gate->Next();
  return i < warmup          ? Repetition::kWarmup
         : i < warmup + reps ? Repetition::kTimed
                             : Repetition::kStop;
}

// The rule for the size of a sample (RunStats::batch): repetitions shorter than
// kMinSampleS are timed in back-to-back batches that take at least that long together,
// so that a sample is long enough for the clock and the noise of one call does not rule
// it; a batch is ceil(kMinSampleS / the last warm-up's time), at most kMaxBatch (and 1
// without a warm-up).
inline constexpr double kMinSampleS = 1e-3;
inline constexpr int kMaxBatch = 1000;

// The batch for a repetition of `seconds` (kMinSampleS / seconds rounded up, in [1, kMaxBatch]).
int BatchFor(double seconds);

// Each sample's time per repetition: the mean of each run of `batch` consecutive entries
// of `seconds` (a trailing partial batch is dropped).
std::vector<double> SamplesOf(const std::vector<double>& seconds, int batch);

// `warmup` warm-up repetitions, then `samples` samples of BatchFor(the last warm-up's time)
// repetitions each: what one run alone measures (meshtune run, a plan's measure mode).
class CountGate : public RepetitionGate {
 public:
  CountGate(int warmup, int samples) : warmup_(warmup), samples_(samples) {}
  Repetition Next() override;
  void Timed(double seconds) override;
  int batch() const { return batch_; }

 private:
  int warmup_, samples_;
  int done_ = 0;  // repetitions run
  int batch_ = 1;
  double last_ = 0;
};

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_REPETITIONS_H_
