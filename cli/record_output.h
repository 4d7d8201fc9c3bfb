// How tuning records read in `meshtune lookup` and `meshtune records`: a whole record as
// text, or one line of a listing. (--json prints the Record message in protobuf's JSON
// mapping instead, base/json.h ToJsonLine.) Stateless; thread-safe.
#ifndef MESHTUNE_CLI_RECORD_OUTPUT_H_
#define MESHTUNE_CLI_RECORD_OUTPUT_H_

#include <cstdint>
#include <string>

#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// `unix_ms` as UTC ISO 8601 to the second, "2026-11-23T12:40:01Z".
std::string UtcTime(int64_t unix_ms);

// The record as text:
//   record 3: C[m,n] += A[m,k] * B[k,n] (m=64,n=64,k=64, f32) on ranks=4, profile default
//   created 2026-11-23T12:40:01Z by meshtune 0.4
//
//   distribute(...)
//   ...
//
//   mesh       x=2,y=2
//   predicted  1.2e-05 s
//   measured   - | 0.0123 s (verified) | 0.0123 s (not verified)
//              | 0.0123 s (verified; median of 12 samples, 95% CI 0.0121-0.0125 s)
//              | 0.0123 s (verified; paced: scaled by the machine's pace when it was
//                written, not a measurement)
//   transfers  A@k AllGather(axes=[0]); ...
// How the record's schedule is known to be right: "measured", "simulated" or
// "simulated-scaled at k=8,m=8,n=8" ("" for records written before meshtune 0.5).
std::string Checked(const v1::Record& r);

std::string RecordText(const v1::Record& record);

// A schedule transferred from another record's extents (LookupResponse.transferred):
//   transferred from record 1 (extents m=64,n=64,k=64), not tuned at these extents
//   C[m,n] += A[m,k] * B[k,n] (m=128,n=128,k=128, f32) on x=2,y=2, profile default
//
//   distribute(...)
//   ...
//
//   mesh       x=2,y=2
//   predicted  2.4e-05 s (the cost model at these extents)
//   measured   - (check it with meshtune run --simulate, or tune these extents)
//   transfers  A@ko Broadcast(axes=[1]); ...
std::string TransferredText(const v1::LookupResponse& response);

// The record as one line (no newline): id, time, problem, workload mesh, winner's mesh,
// profile, predicted and measured seconds (with its sample or paced mark, as RecordText).
std::string RecordLine(const v1::Record& record);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_RECORD_OUTPUT_H_
