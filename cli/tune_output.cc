#include "cli/tune_output.h"

#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cli_io.h"
#include "cli/record_output.h"

namespace meshtune::cli {

namespace {

// JSON values (keys keep the documented order).
std::string Num(double v) { return std::isfinite(v) ? absl::StrFormat("%.9g", v) : "null"; }
std::string Bool(bool b) { return b ? "true" : "false"; }
template <typename Strings>
std::string StringList(const Strings& v) {
  std::vector<std::string> quoted;
  for (const std::string& s : v) quoted.push_back(JsonQuote(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

}  // namespace

std::string TuneResultJson(const v1::TuneResult& r) {
  const v1::Record& best = r.record();
  const std::map<std::string, int64_t> sorted(r.pruned().begin(), r.pruned().end());
  std::vector<std::string> pruned, runs;
  for (const auto& [reason, n] : sorted) pruned.push_back(absl::StrCat(JsonQuote(reason), ": ", n));
  for (const v1::Measurement& m : r.measurements()) {
    runs.push_back(absl::StrCat(
        "{\"trace\": ", JsonQuote(m.trace().text()), ", \"mesh\": ", JsonQuote(m.mesh()),
        ", \"predicted_s\": ", Num(m.predicted_s()), ", \"measured_s\": ",
        m.has_measured_s() ? Num(m.measured_s()) : "null", ", \"verified\": ", Bool(m.verified()),
        ", \"error\": ", m.error().empty() ? "null" : JsonQuote(m.error()), "}"));
  }
  return absl::StrCat(
      "{\"best\": {\"trace\": ", JsonQuote(best.trace().text()),
      ", \"mesh\": ", JsonQuote(best.mesh()), ", \"predicted_s\": ", Num(best.predicted_s()),
      ", \"measured_s\": ", best.has_measured_s() ? Num(best.measured_s()) : "null",
      ", \"verified\": ", Bool(best.verified()), ", \"checked\": ", JsonQuote(best.checked()),
      ", \"checked_extents\": ", best.checked_extents().empty() ? "null" : JsonQuote(best.checked_extents()),
      ", \"patterns\": ", StringList(best.patterns()),
      ", \"comm_words_per_rank\": ", r.comm_words_per_rank(),
      ", \"lower_bound_ratio\": ", r.has_lower_bound_ratio() ? Num(r.lower_bound_ratio()) : "null",
      "}", ", \"enumerated\": ", r.enumerated(), ", \"legal\": ", r.legal(), ", \"pruned\": {",
      absl::StrJoin(pruned, ", "), "}, \"costed\": ", r.costed(),
      ", \"duplicates\": ", r.duplicates(), ", \"measured\": ", r.measurements_size(),
      ", \"measurements\": [", absl::StrJoin(runs, ", "),
      "], \"strategy\": ", JsonQuote(r.strategy()), ", \"seconds\": ", Num(r.seconds()),
      ", \"record_id\": ", r.stored() ? absl::StrCat(best.id()) : "null", "}");
}

std::string TuneResultText(const v1::TuneResult& r) {
  const v1::Record& best = r.record();
  std::string out = absl::StrCat("best schedule on ", best.mesh(), " (", r.strategy(), " search; ",
                                 r.enumerated(), " candidates, ", r.legal(), " legal, ", r.costed(),
                                 " costed, ", r.measurements_size(), " measured, ",
                                 absl::StrFormat("%.2f", r.seconds()), " s):\n\n");
  absl::StrAppend(&out, best.trace().text(), "\n");
  absl::StrAppend(&out, absl::StrFormat("predicted  %.6g s\n", best.predicted_s()));
  if (best.has_measured_s()) {
    absl::StrAppend(&out, absl::StrFormat("measured   %.6g s (verified)\n", best.measured_s()));
  } else {
    absl::StrAppend(&out, "measured   -\n");
  }
  absl::StrAppend(&out, "checked    ", Checked(best), "\n");
  for (const std::string& refused : r.refused()) absl::StrAppend(&out, "refused    ", refused, "\n");
  absl::StrAppend(&out, "transfers  ",
                  best.patterns().empty() ? "none" : absl::StrJoin(best.patterns(), "; "), "\n");
  absl::StrAppend(&out, "words      ", r.comm_words_per_rank(), " per rank");
  if (r.has_lower_bound_ratio())
    absl::StrAppend(&out, absl::StrFormat(" (%.3g x the lower bound)", r.lower_bound_ratio()));
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "record     ", r.stored() ? absl::StrCat(best.id()) : "- (not stored)",
                  "\n");
  for (const v1::Measurement& m : r.measurements()) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "  run: predicted %.4g s, %s  %s\n", m.predicted_s(),
                  m.has_measured_s()
                      ? absl::StrFormat("measured %.4g s", m.measured_s())
                      : "failed: " + (m.error().empty() ? std::string("not verified") : m.error()),
                  absl::StrJoin(m.patterns(), "; ")));
  }
  return out;
}

std::string TuneProgressText(const v1::TuneProgress& p) {
  int64_t pruned = 0;
  for (const auto& [reason, n] : p.pruned()) pruned += n;
  std::string line =
      absl::StrFormat("%-7s %.1fs  enumerated %d, pruned %d, legal %d, costed %d", p.stage(),
                      p.elapsed_s(), p.enumerated(), pruned, p.legal(), p.costed());
  if (p.to_measure() > 0)
    absl::StrAppend(&line, absl::StrFormat(", measured %d of %d", p.measured(), p.to_measure()));
  if (p.has_best_predicted_s())
    absl::StrAppend(&line, absl::StrFormat(", best predicted %.4g s", p.best_predicted_s()));
  if (p.has_best_measured_s())
    absl::StrAppend(&line, absl::StrFormat(", best measured %.4g s", p.best_measured_s()));
  return line;
}

}  // namespace meshtune::cli
