#include "cli/measured_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/sample_stats.h"
#include "engine/tune/tune_messages.h"

namespace meshtune::cli {

std::string SampleText(const v1::TimeSample& s) {
  if (s.n() == 0) return "";
  // At least 95% from 6 samples (TimeSample.ci_level); fewer give less, rounded down.
  const int level = base::CiPercent(s.ci_level());
  return absl::StrFormat("median of %d sample%s, %d%% CI %.4g-%.4g s", s.n(), s.n() == 1 ? "" : "s",
                         level, s.ci_low_s(), s.ci_high_s());
}

std::string Timed(double median_s, const v1::TimeSample& s) {
  if (s.n() == 0) return absl::StrFormat("%.4g s", median_s);
  return absl::StrFormat("%.4g s (%s)", median_s, SampleText(s));
}

std::string DecisionText(const v1::TuneResult& r) {
  if (r.decision().empty()) return "";
  const v1::Comparison& c = r.comparison();
  return absl::StrFormat(
      "decision   %s: %s %s against %s %s: %.3gx (%d%% interval %.3g-%.3g, %d rounds)%s\n",
      r.decision(), c.leader(), Timed(c.leader_sample().median_s(), c.leader_sample()),
      c.runner_up(), Timed(c.runner_up_sample().median_s(), c.runner_up_sample()), c.ratio(),
      base::CiPercent(engine::RatioCiLevel(c)), c.ratio_ci_low(), c.ratio_ci_high(), c.rounds(),
      c.separated() ? ""
                    : "; the rule picks: the lower median, and the library unless a schedule "
                      "is faster than it beyond the noise");
}

std::string LibraryAnswerText(const v1::Record& record) {
  if (!record.has_library()) return "";
  const v1::LibraryRun& l = record.library();
  return absl::StrFormat(
      "answer: ScaLAPACK's %s on a %dx%d grid, NB %d, measured %s, verified; no schedule is "
      "faster beyond the noise\n\n",
      l.library(), l.prow(), l.pcol(), l.nb(), Timed(l.measured_s(), l.sample()));
}

std::string LibraryRunsText(const v1::TuneResult& r) {
  std::string out;
  if (r.has_vs_library()) {
    absl::StrAppend(
        &out, absl::StrFormat("vs library %.3g x the fastest library run below", r.vs_library()));
    if (r.has_vs_library_ci_low()) {
      // Results from before the level was kept called their interval 95%.
      const double level = r.has_vs_library_ci_level() ? r.vs_library_ci_level() : 0.95;
      absl::StrAppend(&out, absl::StrFormat(" (%d%% interval %.3g-%.3g)", base::CiPercent(level),
                                            r.vs_library_ci_low(), r.vs_library_ci_high()));
    }
    absl::StrAppend(&out, "\n");
  }
  for (const v1::LibraryRun& l : r.library()) {
    const std::string failed = !l.implausible().empty() ? l.implausible() : l.error();
    absl::StrAppend(
        &out,
        absl::StrFormat("  library: %s %dx%d, NB %d, %s\n", l.library(), l.prow(), l.pcol(), l.nb(),
                        l.has_measured_s() ? "measured " + Timed(l.measured_s(), l.sample())
                                           : "failed: " + failed));
  }
  return out;
}

}  // namespace meshtune::cli
