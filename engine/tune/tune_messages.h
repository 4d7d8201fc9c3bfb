// The Tune RPC's messages and the tuner's values: a TuneRequest to search::TuneOptions
// (tune_options.h: TuneOptionsFromRequest), and the tuner's progress and result to
// TuneProgress and TuneResult messages. Stateless; thread-safe.
#ifndef MESHTUNE_ENGINE_TUNE_TUNE_MESSAGES_H_
#define MESHTUNE_ENGINE_TUNE_TUNE_MESSAGES_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/tune/tune_options.h"
#include "proto/meshtune.pb.h"
#include "search/tuner.h"
#include "storage/workload.h"

namespace meshtune::engine {

// The hardware profile a request names: its `profile`, or "default" when empty.
std::string RequestedProfile(const std::string& profile);

// A key equal for two requests that ask the tuner for the same work, given the workload's
// fingerprint (problem up to renaming, extents, dtype, mesh or rank count, profile): it
// adds every option that changes the search (memory budget, top-k, budget, model-only,
// evaluations, seed, replication). For a program of several statements, the whole request.
std::string TuneJobKey(const std::string& fingerprint, const search::TuneOptions& options,
                       const v1::TuneRequest& request);

// The progress message of one tuner report.
v1::TuneProgress ProgressMessage(const search::SearchProgress& progress);

// `run`'s samples as the TimeSample message (runtime::TimeSampleOf).
v1::TimeSample SampleMessage(const search::CandidateRun& run);

// The coverage of `c`'s ratio interval: its ratio_ci_level, or for a record from before
// that was kept, the coverage of `rounds` paired ratios (base::MedianCiLevel).
double RatioCiLevel(const v1::Comparison& c);

// The comparison `c` of candidate `leader` (measured in `leader_run`) with `runner_up` as
// the Comparison message: labels, both samples, rounds, the ratio and its interval.
v1::Comparison ComparisonMessage(const search::Compared& c, const std::string& leader,
                                 const search::CandidateRun& leader_run,
                                 const std::string& runner_up,
                                 const search::CandidateRun& runner_up_run);

// The result message of a finished tune of `request`, whose workload is `w` (record.trace in
// the tuned problem's names; the database fields of the record — id, fingerprint, version,
// time — are left for the caller). When the tuner chose the library (no schedule faster
// beyond the noise: search/decision.h), the record is the library's call (Record.library)
// and a warning says so; vs_library is the answer's time over the fastest library
// configuration's, with its interval; comparison and decision say how the answer was chosen.
// A program's tune (result.program set; `options` the tune's) answers with the result's
// `program`: the best, separate and measured schedules, the moves, and the record of the
// winner, its trace a program trace (ir/program_trace.h) in the request's names.
v1::TuneResult ResultMessage(const search::SearchResult& result, const v1::TuneRequest& request,
                             const storage::Workload& w, const search::TuneOptions& options);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_TUNE_MESSAGES_H_
