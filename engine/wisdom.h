// Wisdom files: tuning records written out of one database and merged into another, as
// FFTW's wisdom export and import. A wisdom file is JSON lines, one meshtune.v1.Record a
// line in protobuf's JSON mapping, in canonical names (T0.., i0..), with the workload in
// each record (problem, workload_mesh, profile) and without database ids, sorted so that
// exporting the same records gives the same bytes (a file can live in a repository). A
// record's timing says how its measured_s was taken: a line with measured_s but no timing
// was written before meshtune 0.9, and reads as "paced" (its time scaled by the machine's
// pace, not a measurement; storage::Timing). The
// measured runs kept for refitting the cost model (engine/runs.h) may follow, one
// meshtune.v1.WisdomRunLine a line ({"run": {...}}); lookups skip them.
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
// ranking: verified, checked, measured before paced, faster), then trace, mesh and creation
// time; one JSON line
// each, every line ending in '\n'.
std::string WisdomText(std::vector<v1::Record> records);

// `runs` as wisdom lines, one WisdomRunLine each (ids cleared), in the order given.
std::string WisdomRunsText(const std::vector<v1::MeasuredRun>& runs);

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
  int64_t runs_added = 0, runs_present = 0;  // measured runs of the file
  std::vector<ImportedWorkload> workloads;   // in the order of their first line in the file
};

// Merges the wisdom file `text` into `db`: every record not already there (same workload,
// trace, mesh, times, sample, timing, verified, checked, machine and creation time) is
// added, with its sample and timing (a measured record without timing as "paced"), so the
// workload's best follows the database's ranking and a verified faster record stays best
// whichever side it came from. Measured runs are added unless one with the same group,
// trace, mesh, creation time and times is there (one without timing as "paced",
// MarkPacedRun). Blank lines and lines starting with '#' are skipped.
// InvalidArgument "wisdom line N: ..." for a line that is not a Record or names a bad
// workload, trace or timing; nothing is added then (every line is checked first). Database
// errors as they come.
absl::StatusOr<ImportReport> ImportWisdom(storage::TuningDb& db, const std::string& text);

// The text of the wisdom file at `path`; NotFound "cannot read wisdom file PATH".
absl::StatusOr<std::string> ReadWisdomFile(const std::string& path);

// ImportWisdom of the wisdom file at `path` into `db`: ReadWisdomFile's error, or
// ImportWisdom's with "PATH: " before it.
absl::StatusOr<ImportReport> ImportWisdomFile(storage::TuningDb& db, const std::string& path);

// The best record of `request`'s workload in the wisdom file at `path`, in the request's
// names, as engine::Lookup answers it, read into an in-memory database (no tuning database
// or home directory is touched). NotFound "cannot read wisdom file PATH" when the file
// cannot be read; InvalidArgument "PATH: wisdom line N: ..." for a bad line; NotFound "no
// tuning record for WORKLOAD in wisdom file PATH" when the file has none for the workload;
// InvalidArgument for a bad request (engine::Lookup's message).
absl::StatusOr<v1::LookupResponse> LookupInWisdomFile(const std::string& path,
                                                      const v1::LookupRequest& request);

// ---- Programs in wisdom files (FFTW-like: the wisdom carries the plan) ----
//
// `records export` writes, in each record, its trace lowered by the exporting meshtune
// (judged with isl, lowered and translation-validated, as LowerTrace does) as a serialized
// meshtune.v1.Program in the canonical names, with a digest binding it to the record. A
// plan made from the file (meshtune/plan.h) runs that program without isl when the digest
// is the one the reading meshtune computes; otherwise it lowers the trace. Trust model: a
// wisdom file is trusted input, as FFTW's wisdom is — it is produced by meshtune, and a
// program whose digest matches is not re-verified (someone who edits the program and
// recomputes the digest is believed); what the digest catches is a program that does not
// belong to its record: another workload, mesh, trace or meshtune version, an edit or a
// corruption of the program, or no digest at all. The database never stores programs:
// import drops them, export lowers again.

// Lowercase hex SHA-256 of a text of storage::kTunerVersion (this meshtune's), the
// canonical text of `w` (the record's workload), and `r`'s mesh, trace text and program
// bytes. Internal only if hashing fails.
absl::StatusOr<std::string> ProgramDigest(const storage::Workload& w, const v1::Record& r);

// The workload a wisdom record names (problem, workload_mesh, profile), checked against its
// fingerprint when it has one. InvalidArgument naming the field otherwise.
absl::StatusOr<storage::Workload> RecordWorkload(const v1::Record& r);

// Sets `r`'s program (its trace lowered on its problem and mesh, validated) and
// program_digest; `r` is a record in canonical names as ListRecords returns it. A record
// whose trace does not lower here is left without them and the error is returned. A record
// of a program of several statements is left as its traces (OK: plans lower them).
absl::Status AddProgram(v1::Record* r);

// What a plan takes from a wisdom file: the best record of one workload as the file holds
// it (canonical names, with its program and digest, if any).
struct WisdomRecord {
  storage::Workload workload;  // the request's workload, in the request's names
  v1::Record record;           // as in the file (a measured one without timing: "paced")
  std::string trace;           // the record's trace in the request's names
  int line = 0;                // its line in the file (1-based)
  // Whether `record` carries a program whose digest is ProgramDigest's.
  bool program_trusted = false;
};

// The best record of the request's workload (problem with mesh axes or ranks, profile; its
// machine and memory budget are not looked at) in the wisdom file `text`, ranked as the
// database ranks a workload's records (storage::BetterRecord, the earlier line first among
// equals): what ImportWisdom into an empty database and Lookup would give. Only the lines
// that name the workload's fingerprint (or no fingerprint) are parsed, so a big file costs
// little more than a scan; those lines are checked as ImportWisdom checks them
// (InvalidArgument "wisdom line N: ..."). NotFound "no tuning record for PROBLEM on MESH
// with profile PROFILE" when the file has none; InvalidArgument for a bad request.
absl::StatusOr<WisdomRecord> LookupWisdom(const std::string& text,
                                          const v1::LookupRequest& request);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_WISDOM_H_
