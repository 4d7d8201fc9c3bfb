// `meshtune lookup` and `meshtune records`: the tuning records of the database, from this
// process or from meshtuned (a Backend), as text (record_output.h) or protobuf JSON.
#ifndef MESHTUNE_CLI_RECORD_CMDS_H_
#define MESHTUNE_CLI_RECORD_CMDS_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "engine/backend.h"

namespace meshtune::cli {

// A workload as flags: the problem, exactly one of mesh and ranks, the hardware profile.
struct WorkloadFlags {
  std::string expr, extents, dtype = "f32";
  std::string mesh;  // "x=2,y=2"
  int64_t ranks = 0;
  std::string mem_per_rank;   // lookup: the best record that fits this budget per rank
  bool nearest = false;       // lookup: else a schedule transferred from other extents
  std::string profile;        // "" means "default"
  bool same_machine = false;  // lookup: only records with this machine's fingerprint
};

// `meshtune lookup`: the best record of the workload, in its names. Prints the record
// (RecordText, or with `json` the meshtune.v1.Record message as one line of protobuf's
// JSON mapping) on `out`. With `flags.nearest`, a schedule transferred from other extents
// when the workload has no record (TransferredText), and `json` prints the whole
// meshtune.v1.LookupResponse (so that `transferred` shows) rather than the Record. Exit
// status: 0 when found; 1 with "meshtune: no tuning record for PROBLEM on MESH with profile
// P; tune it first" when not (or when the daemon cannot be reached); 2 on bad input (the
// message names the token).
int RunLookup(const WorkloadFlags& flags, bool json, engine::Backend& backend, std::ostream& out,
              std::ostream& err);

struct RecordsFlags {
  WorkloadFlags workload;  // a filter when workload.expr is set
  int limit = 50;          // 1..1000
  int64_t after = 0;       // list records with larger ids
  int64_t id = 0;          // when set: that one record (in the filter problem's names if given)
  bool json = false;
};

// `meshtune records`: one line a record in the order of ids (RecordLine, or with --json
// one meshtune.v1.Record a line in protobuf's JSON mapping), at most `limit`, telling on `err` how
// to go on when more follow; or with `id` the one record as `lookup` prints it. Exit status: 0 when
// listed (an empty list included); 1 for an unknown id or an unreachable daemon; 2 on bad input.
int RunRecords(const RecordsFlags& flags, engine::Backend& backend, std::ostream& out,
               std::ostream& err);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_RECORD_CMDS_H_
