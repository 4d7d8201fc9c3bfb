#include "runtime/pace.h"

#include <cblas.h>

#include "base/median.h"

namespace meshtune::runtime {

namespace {
constexpr size_t kElems = static_cast<size_t>(kPaceGemmN) * kPaceGemmN;
}  // namespace

Pacer::Pacer(MPI_Comm comm) : comm_(comm), a_(kElems), b_(kElems), c_(kElems) {
  for (size_t i = 0; i < kElems; ++i) {
    a_[i] = 1.0f / static_cast<float>(1 + i % 7);
    b_[i] = 1.0f / static_cast<float>(1 + i % 5);
  }
}

void Pacer::Step() {
  const int n = kPaceGemmN;
  const double t0 = MPI_Wtime();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a_.data(), n, b_.data(), n,
              0.0f, c_.data(), n);
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm_);
  steps_.push_back(slowest);
}

double Pacer::PaceOf(const std::vector<double>& seconds) const {
  if (seconds.empty() || steps_.size() < seconds.size()) return 0;
  const size_t first = steps_.size() - seconds.size();
  std::vector<double> per_pace;
  for (size_t i = 0; i < seconds.size(); ++i) {
    if (!(steps_[first + i] > 0)) return 0;
    per_pace.push_back(seconds[i] / steps_[first + i]);
  }
  const double ratio = base::Median(per_pace);
  return ratio > 0 ? base::Median(seconds) / ratio : 0;
}

}  // namespace meshtune::runtime
