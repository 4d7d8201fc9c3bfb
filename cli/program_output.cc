#include "cli/program_output.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/bytes.h"
#include "cli/measured_output.h"

namespace meshtune::cli {

namespace {

// "H: read in place by statement 2 (nothing moves)" or "H: moved from statement 1 to 2,
// 1.5 MiB sent by the busiest rank, predicted 2.1e-4 s".
std::string MoveText(const v1::ProgramResult::Move& m) {
  if (m.in_place()) {
    return absl::StrCat(m.tensor(), ": statement ", m.consumer(), " reads statement ", m.producer(),
                        "'s shards in place (nothing moves)");
  }
  return absl::StrFormat(
      "%s: moved from statement %d to %d, %s sent by the busiest rank, "
      "predicted %.6g s",
      m.tensor(), m.producer(), m.consumer(), base::FormatBytes(m.bytes_max()), m.predicted_s());
}

std::string Measured(const v1::ProgramResult::Schedule& s) {
  if (s.has_measured_s()) return Timed(s.measured_s(), s.sample()) + ", verified";
  if (!s.error().empty()) return absl::StrCat("- (", s.error(), ")");
  return "-";
}

}  // namespace

std::string ProgramResultText(const v1::TuneResult& r) {
  const v1::ProgramResult& p = r.program();
  const v1::ProgramResult::Schedule& best = p.best();
  std::string out = LibraryAnswerText(r.record());
  absl::StrAppend(
      &out, absl::StrFormat(
                "%s program on %s (%d statements with %s; %s costed; %d measured; %.2f s):\n\n",
                r.record().has_library() ? "chosen" : "best", best.mesh(), best.statements_size(),
                p.extents(), absl::StrJoin(p.costed(), " + "), p.measured_size(), r.seconds()));
  for (int s = 0; s < best.statements_size(); ++s) {
    const v1::ProgramResult::Statement& st = best.statements(s);
    if (s > 0) out += "---\n";
    absl::StrAppend(&out, "# statement ", s + 1, ": ", st.expr(), "\n", st.trace());
    absl::StrAppend(&out,
                    absl::StrFormat("# predicted %.6g s; transfers %s\n", st.predicted_s(),
                                    st.transfers().empty() ? std::string("none")
                                                           : absl::StrJoin(st.transfers(), ", ")));
  }
  out += "\n";
  for (const v1::ProgramResult::Move& m : best.moves())
    absl::StrAppend(&out, "between    ", MoveText(m), "\n");
  absl::StrAppend(&out, absl::StrFormat("predicted  %.6g s\n", best.predicted_s()));
  absl::StrAppend(&out, "measured   ", Measured(best), "\n");
  absl::StrAppend(&out, "checked    ", p.checked(), "\n");
  if (r.has_lower_bound_words()) {
    absl::StrAppend(&out, absl::StrFormat("bound      %.6g words some rank must receive (the "
                                          "largest statement's lower bound)\n",
                                          r.lower_bound_words()));
  }
  const v1::ProgramResult::Schedule& sep = p.separate();
  int64_t most = 0;
  for (const v1::ProgramResult::Move& m : sep.moves()) most = std::max(most, m.bytes_max());
  absl::StrAppend(
      &out, absl::StrFormat("separate   predicted %.6g s (%.2fx the best), measured %s; "
                            "each statement's own best on %s, moving up to %s a rank between\n",
                            sep.predicted_s(),
                            best.predicted_s() > 0 ? sep.predicted_s() / best.predicted_s() : 0.0,
                            Measured(sep), sep.mesh(), base::FormatBytes(most)));
  if (p.has_separate_over_best()) {
    absl::StrAppend(&out, absl::StrFormat("joint      measured %.2fx faster than separate\n",
                                          p.separate_over_best()));
  }
  for (const v1::ProgramResult::Schedule& m : p.measured()) {
    absl::StrAppend(&out, absl::StrFormat("run        %-9s predicted %.6g s, measured %s\n",
                                          m.label(), m.predicted_s(), Measured(m)));
  }
  absl::StrAppend(&out, DecisionText(r), LibraryRunsText(r));
  for (const std::string& refused : r.refused())
    absl::StrAppend(&out, "refused    ", refused, "\n");
  absl::StrAppend(&out, "record     ",
                  r.stored() ? absl::StrCat(r.record().id()) : std::string("- (not stored)"), "\n");
  return out;
}

}  // namespace meshtune::cli
