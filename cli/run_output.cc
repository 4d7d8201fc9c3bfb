#include "cli/run_output.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/launch/run_result.h"

namespace meshtune::cli {

v1::RunResult RunResultOfLaunch(const runtime::LaunchResult& launched) {
  v1::RunResult r;
  r.set_verified(launched.verified);
  for (double s : launched.seconds) r.add_seconds(s);
  r.set_median_s(launched.median_s);
  r.set_kernel_median_s(launched.kernel_median_s);
  r.set_bytes_sent_max(static_cast<double>(launched.bytes_sent_max));
  r.set_bytes_copied_max(static_cast<double>(launched.bytes_copied_max));
  r.set_checksum(launched.checksum);
  r.set_error(launched.error.value_or(""));
  r.set_checked("measured");
  if (!launched.samples.empty()) {
    *r.mutable_sample() = runtime::TimeSampleOf(launched.samples, launched.batch);
  }
  if (launched.statements > 1) r.set_statements(launched.statements);
  return r;
}

std::string RunResultText(const v1::RunResult& r) {
  std::string how = r.checked();
  if (r.checked() == "measured") how = "measured under MPI";
  if (r.checked() == "simulated")
    how = "simulated: every rank in this process, the times are the simulation's";
  std::string out = absl::StrCat("verified   ", r.verified() ? "yes" : "no",
                                 how.empty() ? "" : " (" + how + ")", "\n");
  if (!r.error().empty()) absl::StrAppend(&out, "error      ", r.error(), "\n");
  if (r.seconds_size() > 0) {
    const v1::TimeSample& t = r.sample();
    std::vector<std::string> samples;
    for (double s : t.samples_s()) samples.push_back(absl::StrFormat("%.6g", s));
    absl::StrAppend(&out, absl::StrFormat("median     %.6g s of %d sample%s of %d repetition%s "
                                          "each (%s s)\n",
                                          r.median_s(), t.n(), t.n() == 1 ? "" : "s", t.batch(),
                                          t.batch() == 1 ? "" : "s", absl::StrJoin(samples, ", ")));
    if (t.n() > 0) {
      absl::StrAppend(&out,
                      absl::StrFormat("spread     min %.6g, quartiles %.6g-%.6g, max %.6g s; the "
                                      "median within %.6g-%.6g s at %.0f%% confidence\n",
                                      t.min_s(), t.q1_s(), t.q3_s(), t.max_s(), t.ci_low_s(),
                                      t.ci_high_s(), 100 * t.ci_level()));
    }
    if (r.statements() > 1) {
      absl::StrAppend(&out,
                      absl::StrFormat("statements %d, run one after another on the same ranks\n",
                                      r.statements()),
                      absl::StrFormat("moved      %.0f bytes between statements by the busiest "
                                      "rank in one repetition\n",
                                      r.bytes_sent_max()),
                      absl::StrFormat("checksum   %.17g\n", r.checksum()));
    } else {
      absl::StrAppend(
          &out,
          absl::StrFormat("kernels    %.6g s of it in local kernels (the slowest "
                          "rank's, median)\n",
                          r.kernel_median_s()),
          absl::StrFormat("sent       %.0f bytes by the busiest rank in one repetition\n",
                          r.bytes_sent_max()),
          absl::StrFormat("copied     %.0f bytes packed or copied by the busiest rank\n",
                          r.bytes_copied_max()),
          absl::StrFormat("checksum   %.17g\n", r.checksum()));
    }
  }
  return out;
}

}  // namespace meshtune::cli
