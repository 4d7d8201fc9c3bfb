#include "cli/tune_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/measured_output.h"
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

// The measured schedule the record's trace is (the chosen one); nullptr when none is.
const v1::MeasuredCandidate* ChosenSchedule(const v1::TuneResult& r) {
  for (const v1::MeasuredCandidate& m : r.measurements()) {
    if (m.verified() && m.has_measured_s() && m.trace().text() == r.record().trace().text() &&
        m.mesh() == r.record().mesh())
      return &m;
  }
  return nullptr;
}

}  // namespace

std::string TuneResultText(const v1::TuneResult& r) {
  if (r.has_program()) return ProgramResultText(r);
  const v1::Record& best = r.record();
  std::string out;
  const v1::MeasuredCandidate* chosen = ChosenSchedule(r);
  absl::StrAppend(&out, LibraryAnswerText(best));
  absl::StrAppend(&out, best.has_library() ? "chosen schedule on " : "best schedule on ",
                  best.mesh(), IdleRanks(best), " (", r.strategy(), " search; ", r.enumerated(),
                  " candidates, ", r.legal_estimated() ? "about " : "", r.legal(),
                  r.legal_estimated() ? " legal (estimated), " : " legal, ", r.costed(),
                  " costed, ", r.measurements_size(), " measured, ",
                  absl::StrFormat("%.2f", r.seconds()), " s):\n\n");
  absl::StrAppend(&out, best.trace().text(), "\n");
  absl::StrAppend(&out, absl::StrFormat("predicted  %.6g s\n", best.predicted_s()));
  if (chosen != nullptr) {
    absl::StrAppend(&out, "measured   ", Timed(chosen->measured_s(), chosen->sample()),
                    ", verified\n");
  } else {
    absl::StrAppend(&out, "measured   -\n");
  }
  absl::StrAppend(&out, "checked    ", Checked(best), "\n");
  for (const std::string& refused : r.refused())
    absl::StrAppend(&out, "refused    ", refused, "\n");
  absl::StrAppend(&out, "transfers  ",
                  best.patterns().empty() ? "none" : absl::StrJoin(best.patterns(), "; "), "\n");
  absl::StrAppend(&out, "words      ", r.comm_words_per_rank(), " per rank");
  if (r.has_lower_bound_ratio()) {
    absl::StrAppend(&out, absl::StrFormat(" (%.3g x the lower bound)", r.lower_bound_ratio()));
  } else if (r.has_lower_bound_words()) {
    absl::StrAppend(&out, " (the lower bound is 0: the statement splits without communication)");
  }
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "record     ", r.stored() ? absl::StrCat(best.id()) : "- (not stored)",
                  "\n");
  for (const v1::MeasuredCandidate& m : r.measurements()) {
    const std::string failed = !m.implausible().empty()
                                   ? m.implausible()
                                   : (m.error().empty() ? std::string("not verified") : m.error());
    absl::StrAppend(
        &out,
        absl::StrFormat("  run: predicted %.4g s, %s  %s%s\n", m.predicted_s(),
                        m.has_measured_s() ? "measured " + Timed(m.measured_s(), m.sample())
                                           : "failed: " + failed,
                        absl::StrJoin(m.patterns(), "; "),
                        m.family().empty() ? "" : absl::StrCat("  [family ", m.family(), "]")));
  }
  absl::StrAppend(&out, DecisionText(r), LibraryRunsText(r));
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
