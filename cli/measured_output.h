// How measured times read (base/sample_stats.h, proto TimeSample): a sample's median with
// its interval, and how a tune chose among its candidates measured side by side. Shared by
// the tune's, the program's and the records' text. Stateless; thread-safe.
#ifndef MESHTUNE_CLI_MEASURED_OUTPUT_H_
#define MESHTUNE_CLI_MEASURED_OUTPUT_H_

#include <string>

#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// "median of 12 samples, 95% CI 0.0121-0.0125 s" of a sample (its interval's coverage when
// below 95%: fewer than 6 samples); "" when it has none.
std::string SampleText(const v1::TimeSample& sample);

// "0.0153 s (median of 12 samples, 95% CI 0.0151-0.0156 s)": a measured time with its
// sample, or "0.0153 s" without one.
std::string Timed(double median_s, const v1::TimeSample& sample);

// How the answer was chosen among what was measured, one line with its newline, e.g.
// "decision   tie within noise: x=4 #1 0.0152 s (median of 12, 95% CI 0.0150-0.0155 s)
// against PSGEMM 2x2, NB 64 0.0153 s (...): 0.99x (95% interval 0.97-1.02, 12 rounds); the
// rule picks: ..."; "" when fewer than two candidates were measured.
std::string DecisionText(const v1::TuneResult& result);

// "answer: ScaLAPACK's PSGEMM on a 2x2 grid, NB 64, measured ..., verified; no schedule is
// faster beyond the noise" and a blank line, when the record's answer is the library; else "".
std::string LibraryAnswerText(const v1::Record& record);

// The answer against the fastest library run ("vs library 1.2 x ...") and a line per library
// run measured ("  library: PSGEMM 2x2, NB 64, measured ..."); "" when none was.
std::string LibraryRunsText(const v1::TuneResult& result);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_MEASURED_OUTPUT_H_
