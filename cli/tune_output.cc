#include "cli/tune_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/program_output.h"
#include "cli/record_output.h"

namespace meshtune::cli {

namespace {

// " (2 of 4 ranks, 2 idle)" when the best mesh uses fewer ranks than the workload's rank
// count (a tune with --allow-idle-ranks), else "".
std::string IdleRanks(const v1::Record& best) {
  const int64_t asked = best.workload_ranks();
  int64_t used = 1;
  for (const v1::MeshAxis& axis : best.mesh_dims()) used *= axis.size();
  if (asked == 0 || used >= asked) return "";
  return absl::StrCat(" (", used, " of ", asked, " ranks, ", asked - used, " idle)");
}

// The fastest verified measured schedule's time; 0 when none verified.
double FastestSchedule(const v1::TuneResult& r) {
  double fastest = 0;
  for (const v1::MeasuredCandidate& m : r.measurements()) {
    if (m.verified() && m.has_measured_s() && (fastest == 0 || m.measured_s() < fastest))
      fastest = m.measured_s();
  }
  return fastest;
}

}  // namespace

std::string TuneResultText(const v1::TuneResult& r) {
  if (r.has_program()) return ProgramResultText(r);
  const v1::Record& best = r.record();
  std::string out;
  if (best.has_library()) {
    const v1::LibraryRun& l = best.library();
    const double schedule = FastestSchedule(r);
    absl::StrAppend(
        &out, absl::StrFormat("answer: ScaLAPACK's %s on a %dx%d grid, NB %d, measured %.6g s "
                              "(verified), %.2fx faster than the fastest schedule below\n\n",
                              l.library(), l.prow(), l.pcol(), l.nb(), l.measured_s(),
                              schedule > 0 ? schedule / l.measured_s() : 0.0));
  }
  absl::StrAppend(&out, best.has_library() ? "fastest schedule on " : "best schedule on ",
                  best.mesh(), IdleRanks(best), " (", r.strategy(), " search; ", r.enumerated(),
                  " candidates, ", r.legal_estimated() ? "about " : "", r.legal(),
                  r.legal_estimated() ? " legal (estimated), " : " legal, ", r.costed(),
                  " costed, ", r.measurements_size(), " measured, ",
                  absl::StrFormat("%.2f", r.seconds()), " s):\n\n");
  absl::StrAppend(&out, best.trace().text(), "\n");
  absl::StrAppend(&out, absl::StrFormat("predicted  %.6g s\n", best.predicted_s()));
  if (best.has_library()) {
    absl::StrAppend(&out, absl::StrFormat("measured   %.6g s (verified)\n", FastestSchedule(r)));
  } else if (best.has_measured_s()) {
    absl::StrAppend(&out, absl::StrFormat("measured   %.6g s (verified)\n", best.measured_s()));
  } else {
    absl::StrAppend(&out, "measured   -\n");
  }
  absl::StrAppend(&out, "checked    ", Checked(best), "\n");
  for (const std::string& refused : r.refused())
    absl::StrAppend(&out, "refused    ", refused, "\n");
  absl::StrAppend(&out, "transfers  ",
                  best.patterns().empty() ? "none" : absl::StrJoin(best.patterns(), "; "), "\n");
  absl::StrAppend(&out, "words      ", r.comm_words_per_rank(), " per rank");
  if (r.has_lower_bound_ratio())
    absl::StrAppend(&out, absl::StrFormat(" (%.3g x the lower bound)", r.lower_bound_ratio()));
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "record     ", r.stored() ? absl::StrCat(best.id()) : "- (not stored)",
                  "\n");
  for (const v1::MeasuredCandidate& m : r.measurements()) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "  run: predicted %.4g s, %s  %s%s\n", m.predicted_s(),
                  m.has_measured_s()
                      ? absl::StrFormat("measured %.4g s", m.measured_s())
                      : "failed: " + (m.error().empty() ? std::string("not verified") : m.error()),
                  absl::StrJoin(m.patterns(), "; "),
                  m.family().empty() ? "" : absl::StrCat("  [family ", m.family(), "]")));
  }
  if (r.pace_s() > 0) {
    absl::StrAppend(&out, absl::StrFormat("times read at the machine's median pace, %.3g ms a "
                                          "256-cubed GEMM (each run's by the pace beside it)\n",
                                          1e3 * r.pace_s()));
  }
  if (r.has_vs_library()) {
    absl::StrAppend(
        &out, absl::StrFormat("vs library %.3g x the fastest library run below\n", r.vs_library()));
  }
  for (const v1::LibraryRun& l : r.library()) {
    absl::StrAppend(
        &out,
        absl::StrFormat("  library: %s %dx%d, NB %d, %s\n", l.library(), l.prow(), l.pcol(), l.nb(),
                        l.has_measured_s() ? absl::StrFormat("measured %.4g s", l.measured_s())
                                           : "failed: " + l.error()));
  }
  return out;
}

std::string TuneProgressText(const v1::TuneProgress& p) {
  int64_t pruned = 0;
  for (const auto& [reason, n] : p.pruned()) pruned += n;
  std::string line = p.statement() > 0
                         ? absl::StrFormat("statement %d of %d: ", p.statement(), p.statements())
                         : "";
  absl::StrAppend(
      &line,
      absl::StrFormat("%-7s %.1fs  enumerated %d, pruned %s%d, legal %s%d, costed %d", p.stage(),
                      p.elapsed_s(), p.enumerated(), p.legal_estimated() ? "~" : "", pruned,
                      p.legal_estimated() ? "~" : "", p.legal(), p.costed()));
  if (p.to_measure() > 0)
    absl::StrAppend(&line, absl::StrFormat(", measured %d of %d", p.measured(), p.to_measure()));
  if (p.has_best_predicted_s())
    absl::StrAppend(&line, absl::StrFormat(", best predicted %.4g s", p.best_predicted_s()));
  if (p.has_best_measured_s())
    absl::StrAppend(&line, absl::StrFormat(", best measured %.4g s", p.best_measured_s()));
  return line;
}

}  // namespace meshtune::cli
