// A run's RunStats as the meshtune.v1.RunResult message: the one JSON line that rank 0
// of meshtune_worker and of the programs `meshtune codegen` writes prints (the launcher
// parses it), and what `meshtune run --simulate` reports. Stateless; thread-safe.
#ifndef MESHTUNE_RUNTIME_LAUNCH_RUN_RESULT_H_
#define MESHTUNE_RUNTIME_LAUNCH_RUN_RESULT_H_

#include <string>
#include <vector>

#include "proto/meshtune.pb.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

// verified, seconds, sample (SamplesOf(seconds, batch) summarized), median_s (the sample's
// median; 0 when there are none), bytes_sent_max, checksum and error of `m`; `checked` is
// left empty.
v1::RunResult RunResultOf(const RunStats& m);

// `samples` (seconds each, in the order taken; `batch` repetitions a sample) as the
// TimeSample message (base/sample_stats.h); n = 0 and nothing else set when empty.
v1::TimeSample TimeSampleOf(const std::vector<double>& samples, int batch);

// RunResultOf(m) in protobuf's JSON mapping, one line without a newline (base/json.h).
std::string RunResultLine(const RunStats& m);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_RUN_RESULT_H_
