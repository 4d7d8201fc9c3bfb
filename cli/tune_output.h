// How a tune's progress and result read: the text and JSON of `meshtune tune` (and the
// progress lines of `meshtune batch`), from the TuneResult message — so that an in-process
// tune and one answered by meshtuned print the same. Stateless; thread-safe.
#ifndef MESHTUNE_CLI_TUNE_OUTPUT_H_
#define MESHTUNE_CLI_TUNE_OUTPUT_H_

#include <string>

#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// The result as one line of JSON (no newline):
//   {"best": {"trace": str, "mesh": str, "predicted_s": x, "measured_s": x|null,
//             "verified": bool, "patterns": [str...], "comm_words_per_rank": n,
//             "lower_bound_ratio": x|null},
//    "enumerated": n, "legal": n, "pruned": {"reason": n...}, "costed": n,
//    "duplicates": n, "measured": n, "measurements": [{"trace", "mesh", "predicted_s",
//    "measured_s", "verified", "error"}...], "strategy": str, "seconds": x,
//    "record_id": n|null}
// (pruned in reason order; record_id null when the winner was not stored).
std::string TuneResultJson(const v1::TuneResult& result);

// The result as text: the winner's mesh and search summary, its trace, predicted and
// measured seconds, transfers, words per rank, the stored record, and one line per run.
std::string TuneResultText(const v1::TuneResult& result);

// One line (no newline) of a tune's progress: stage, seconds, counts, measured k of K,
// best predicted and measured seconds so far.
std::string TuneProgressText(const v1::TuneProgress& progress);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_TUNE_OUTPUT_H_
