// The spread of a tune's measured times in the tuning report, as one self-contained SVG
// element (no scripts, no external references): a horizontal box plot per measured candidate
// and per library configuration on one shared time axis, so that what is a difference and
// what is noise shows at a glance.
#ifndef MESHTUNE_ENGINE_REPORT_BOX_SVG_H_
#define MESHTUNE_ENGINE_REPORT_BOX_SVG_H_

#include <string>

#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// "x=2,y=2 #1": the measured candidate `m` at `place` (1-based) of TuneSummary.measurements,
// the model's order; the tuner's name for it in TuneSummary.comparison.
std::string CandidateLabel(const v1::MeasuredCandidate& m, int place);

// "PSGEMM 2x2, NB 64": the library configuration `l`, as the tuner names it.
std::string LibraryLabel(const v1::LibraryRun& l);

// The SVG (class "boxes") of `summary`'s measurements, then its library runs, one row each,
// labelled as above. A row whose run verified, was not refused as implausible and has a
// sample is a box (<g class="box"> with data-label, data-kind "schedule" or "library",
// data-n, data-min, data-q1, data-median, data-q3, data-max, data-ci-low, data-ci-high and
// data-ci-level, times in seconds as %.6g): a whisker min to max (line.whisker), the
// quartiles (rect.iqr), the median's interval as a darker, thinner band (rect.median-ci) and
// the median (line.median), with n and the median as text. Such a run measured before
// samples were kept is its median alone (g.median-only, data-median). Any other row (failed,
// implausible) has no box: g.unmeasured with data-label and data-reason, its reason as text.
// The row labelled `answer` (CandidateLabel or LibraryLabel of the tune's answer; "" for
// none) has the class "answer" too and is highlighted. The time axis is logarithmic when the
// largest time drawn is more than 10 times the smallest, else linear; ticks in ms (s from
// 1 s up, µs below 1 ms). Text is escaped.
std::string BoxSvg(const v1::TuneSummary& summary, const std::string& answer);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REPORT_BOX_SVG_H_
