#include "runtime/run_result.h"

#include <algorithm>
#include <vector>

#include "base/json.h"

namespace meshtune::runtime {

v1::RunResult RunResultOf(const RunStats& m) {
  v1::RunResult r;
  r.set_verified(m.verified);
  for (double s : m.seconds) r.add_seconds(s);
  std::vector<double> sorted = m.seconds;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) r.set_median_s(sorted[sorted.size() / 2]);
  std::vector<double> kernels = m.kernel_seconds;
  std::sort(kernels.begin(), kernels.end());
  if (!kernels.empty()) r.set_kernel_median_s(kernels[kernels.size() / 2]);
  r.set_bytes_sent_max(static_cast<double>(m.bytes_sent_max));
  r.set_bytes_copied_max(static_cast<double>(m.bytes_copied_max));
  r.set_checksum(m.checksum);
  r.set_error(m.error);
  r.set_pace_s(m.pace_s);
  if (m.statements > 1) r.set_statements(m.statements);
  return r;
}

std::string RunResultLine(const RunStats& m) { return base::ToJsonLine(RunResultOf(m)); }

}  // namespace meshtune::runtime
