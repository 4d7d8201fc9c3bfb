#include "cli/record_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "cli/measured_output.h"

namespace meshtune::cli {

namespace {

std::string Problem(const v1::Record& r) {
  return absl::StrCat(r.problem().expr(), " (", r.problem().extents(), ", ", r.problem().dtype(),
                      ")");
}

// "0.0123 s (verified)", then how the time was taken: "; median of 12 samples, 95% CI
// 0.0121-0.0125 s" with a sample, "; paced: ..." for a paced record.
std::string Measured(const v1::Record& r) {
  if (!r.has_measured_s()) return "-";
  std::string how;
  if (r.timing() == "paced") {
    how = "; paced: scaled by the machine's pace when it was written, not a measurement";
  } else if (r.sample().n() > 0) {
    how = "; " + SampleText(r.sample());
  }
  return absl::StrFormat("%.6g s (%s%s%s)", r.measured_s(),
                         r.verified() ? "verified" : "not verified",
                         r.has_library() ? ", the library's" : "", how);
}

// "PSGEMM 1x4, NB 16".
std::string Library(const v1::LibraryRun& l) {
  return absl::StrFormat("%s %dx%d, NB %d", l.library(), l.prow(), l.pcol(), l.nb());
}

}  // namespace

std::string Checked(const v1::Record& r) {
  return r.checked_extents().empty() ? r.checked()
                                     : absl::StrCat(r.checked(), " at ", r.checked_extents());
}

std::string UtcTime(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string RecordText(const v1::Record& r) {
  std::string out = absl::StrCat("record ", r.id(), ": ", Problem(r), " on ", r.workload_mesh(),
                                 ", profile ", r.profile(), "\n", "created ",
                                 UtcTime(r.created_unix_ms()), " by ", r.tuner_version(), "\n\n");
  if (r.has_library()) {
    absl::StrAppend(&out, "answer     ScaLAPACK's ", Library(r.library()),
                    " on block-cyclic shards (run, codegen and plans call it); the fastest "
                    "schedule, kept for reference:\n\n");
  }
  absl::StrAppend(&out, absl::StripSuffix(r.trace().text(), "\n"), "\n\n");
  absl::StrAppend(&out, "mesh       ", r.mesh(), "\n");
  absl::StrAppend(&out, absl::StrFormat("predicted  %.6g s\n", r.predicted_s()));
  absl::StrAppend(&out, "measured   ", Measured(r), "\n");
  if (!r.checked().empty()) absl::StrAppend(&out, "checked    ", Checked(r), "\n");
  absl::StrAppend(&out, "transfers  ",
                  r.patterns().empty() ? "none" : absl::StrJoin(r.patterns(), "; "), "\n");
  return out;
}

std::string TransferredText(const v1::LookupResponse& response) {
  const v1::Record& r = response.record();
  std::string out =
      absl::StrCat("transferred from record ", response.transferred_from(), " (extents ",
                   response.transferred_extents(), "), not tuned at these extents\n", Problem(r),
                   " on ", r.workload_mesh(), ", profile ", r.profile(), "\n\n");
  absl::StrAppend(&out, absl::StripSuffix(r.trace().text(), "\n"), "\n\n");
  absl::StrAppend(&out, "mesh       ", r.mesh(), "\n");
  absl::StrAppend(&out, absl::StrFormat("predicted  %.6g s (the cost model at these extents)\n",
                                        r.predicted_s()));
  absl::StrAppend(&out,
                  "measured   - (check it with meshtune run --simulate, or tune these extents)\n");
  absl::StrAppend(&out, "transfers  ",
                  r.patterns().empty() ? "none" : absl::StrJoin(r.patterns(), "; "), "\n");
  return out;
}

std::string RecordLine(const v1::Record& r) {
  return absl::StrCat(r.id(), "  ", UtcTime(r.created_unix_ms()), "  ", Problem(r), "  on ",
                      r.workload_mesh(), " -> ", r.mesh(), "  profile ", r.profile(),
                      "  predicted ", absl::StrFormat("%.6g s", r.predicted_s()), "  measured ",
                      Measured(r), r.has_library() ? "  answer " + Library(r.library()) : "");
}

}  // namespace meshtune::cli
