// How a tune's progress and result read: the text of `meshtune tune` (and the progress
// lines of `meshtune batch`), from the TuneResult message — so that an in-process tune and
// one answered by meshtuned print the same. (Their JSON is the TuneResult message itself,
// base/json.h's ToJsonLine.) Stateless; thread-safe.
#ifndef MESHTUNE_CLI_TUNE_OUTPUT_H_
#define MESHTUNE_CLI_TUNE_OUTPUT_H_

#include <string>

#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// The result as text: the winner's mesh and search summary, its trace, predicted and
// measured seconds, transfers, words per rank, the stored record, and one line per run
// (predicted and measured seconds or the failure, transfers, and the schedule family).
std::string TuneResultText(const v1::TuneResult& result);

// One line (no newline) of a tune's progress: stage, seconds, counts, measured k of K,
// best predicted and measured seconds so far.
std::string TuneProgressText(const v1::TuneProgress& progress);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_TUNE_OUTPUT_H_
