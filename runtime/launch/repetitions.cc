#include "runtime/launch/repetitions.h"

#include <algorithm>
#include <cmath>

namespace meshtune::runtime {

int BatchFor(double seconds) {
  if (!(seconds > 0)) return 1;
  const double n = std::ceil(kMinSampleS / seconds);
  return n >= kMaxBatch ? kMaxBatch : std::max(1, static_cast<int>(n));
}

std::vector<double> SamplesOf(const std::vector<double>& seconds, int batch) {
  std::vector<double> out;
  batch = std::max(1, batch);
  for (size_t i = 0; i + batch <= seconds.size(); i += batch) {
    double sum = 0;
    for (int j = 0; j < batch; ++j) sum += seconds[i + j];
    out.push_back(sum / batch);
  }
  return out;
}

Repetition CountGate::Next() {
  if (done_ == warmup_) batch_ = warmup_ > 0 ? BatchFor(last_) : 1;
  if (done_ < warmup_) return Repetition::kWarmup;
  return done_ < warmup_ + samples_ * batch_ ? Repetition::kTimed : Repetition::kStop;
}

void CountGate::Timed(double seconds) {
  last_ = seconds;
  ++done_;
}

}  // namespace meshtune::runtime
