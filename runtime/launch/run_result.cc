#include "runtime/launch/run_result.h"

#include <algorithm>
#include <vector>

#include "base/json.h"
#include "base/sample_stats.h"
#include "runtime/launch/repetitions.h"

namespace meshtune::runtime {

v1::RunResult RunResultOf(const RunStats& m) {
  v1::RunResult r;
  r.set_verified(m.verified);
  for (double s : m.seconds) r.add_seconds(s);
  const std::vector<double> samples = SamplesOf(m.seconds, m.batch);
  if (!samples.empty()) {
    *r.mutable_sample() = TimeSampleOf(samples, m.batch);
    r.set_median_s(r.sample().median_s());
  }
  std::vector<double> kernels = m.kernel_seconds;
  std::sort(kernels.begin(), kernels.end());
  if (!kernels.empty()) r.set_kernel_median_s(kernels[kernels.size() / 2]);
  r.set_bytes_sent_max(static_cast<double>(m.bytes_sent_max));
  r.set_bytes_copied_max(static_cast<double>(m.bytes_copied_max));
  r.set_checksum(m.checksum);
  r.set_error(m.error);
  if (m.statements > 1) r.set_statements(m.statements);
  return r;
}

v1::TimeSample TimeSampleOf(const std::vector<double>& samples, int batch) {
  const base::SampleStats s = base::Summarize(samples);
  v1::TimeSample out;
  out.set_n(s.n);
  out.set_batch(batch);
  if (s.n == 0) return out;
  out.set_min_s(s.min);
  out.set_q1_s(s.q1);
  out.set_median_s(s.median);
  out.set_q3_s(s.q3);
  out.set_max_s(s.max);
  out.set_ci_low_s(s.ci_low);
  out.set_ci_high_s(s.ci_high);
  out.set_ci_level(s.ci_level);
  for (double x : samples) out.add_samples_s(x);
  return out;
}

std::string RunResultLine(const RunStats& m) { return base::ToJsonLine(RunResultOf(m)); }

}  // namespace meshtune::runtime
