// Wisdom files: tuning records written out of one database and merged into another, as
// FFTW's wisdom export and import. A wisdom file is JSON lines, one meshtune.v1.Record a
// line in protobuf's JSON mapping, in canonical names (T0.., i0..), with the workload in
// each record (problem, workload_mesh, profile) and without database ids, sorted so that
// exporting the same records gives the same bytes (a file can live in a repository).
#ifndef MESHTUNE_ENGINE_WISDOM_H_
#define MESHTUNE_ENGINE_WISDOM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {

// `records` (canonical names, as ListRecords returns them without a problem) as a wisdom
// file: ids cleared, sorted by workload fingerprint, then best first (the database's
// ranking: verified, checked, faster), then trace, mesh and creation time; one JSON line
// each, every line ending in '\n'.
std::string WisdomText(std::vector<v1::Record> records);

// What an import did with one workload of the file.
struct ImportedWorkload {
  std::string fingerprint;
  std::string description;     // "T0[i0,i1] += ... (i0=64,...) on x=2,y=2, profile default"
  int64_t added = 0;           // records of the file added
  int64_t duplicates = 0;      // records of the file already in the database
  v1::Record best;             // the workload's best record after the merge
  bool best_imported = false;  // whether that best came from the file
};

struct ImportReport {
  int64_t added = 0, duplicates = 0;
  std::vector<ImportedWorkload> workloads;  // in the order of their first line in the file
};

// Merges the wisdom file `text` into `db`: every record not already there (same workload,
// trace, mesh, times, verified, checked, machine and creation time) is added, so the
// workload's best follows the database's ranking and a verified faster record stays best
// whichever side it came from. Blank lines and lines starting with '#' are skipped.
// InvalidArgument "wisdom line N: ..." for a line that is not a Record or names a bad
// workload or trace; nothing is added then (every line is checked first). Database errors
// as they come.
absl::StatusOr<ImportReport> ImportWisdom(storage::TuningDb& db, const std::string& text);

// The best record of `request`'s workload in the wisdom file at `path`, in the request's
// names, as engine::Lookup answers it, read into an in-memory database (no tuning database
// or home directory is touched). NotFound "cannot read wisdom file PATH" when the file
// cannot be read; InvalidArgument "PATH: wisdom line N: ..." for a bad line; NotFound "no
// tuning record for WORKLOAD in wisdom file PATH" when the file has none for the workload;
// InvalidArgument for a bad request (engine::Lookup's message).
absl::StatusOr<v1::LookupResponse> LookupInWisdomFile(const std::string& path,
                                                      const v1::LookupRequest& request);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_WISDOM_H_
