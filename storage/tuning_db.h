// The tuning database: every tuning record (a schedule found for a workload, its predicted
// and measured time) and the best record of each workload, so that a renamed but identical
// problem is answered from the cache.
//
// Records hold traces in the workload's canonical names (see workload.h: translate with
// ToCanonicalTrace before Add and FromCanonicalTrace after Best/Get/List). Two
// implementations: SQLite on a file (sqlite_tuning_db.cc; safe to share between threads
// and between processes) and memory (memory_tuning_db.cc; for tests and --no-db runs).
// Both are thread-safe and behave alike.
#ifndef MESHTUNE_STORAGE_TUNING_DB_H_
#define MESHTUNE_STORAGE_TUNING_DB_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/workload.h"

namespace meshtune::storage {

inline constexpr char kTunerVersion[] = "meshtune 0.6";
// The newest SQLite schema this code knows (PRAGMA user_version).
inline constexpr int kTuningDbSchemaVersion = 7;
// List returns at most this many records a call.
inline constexpr int kMaxListLimit = 1000;

// How a record's measured_s was taken (meshtune.v1.Record.timing).
enum class Timing {
  kNone,      // "": not measured (no measured_s)
  kPaced,     // "paced": written before meshtune 0.9, the time scaled by the machine's pace
              // (a GEMM timed beside each run): not a measurement
  kMeasured,  // "measured": as measured, a sample of timed repetitions
};

// The text of `t` in meshtune.v1.Record.timing: "", "paced" or "measured".
absl::string_view TimingName(Timing t);

// The timing whose text is `text` ("", "paced" or "measured"); InvalidArgument "timing
// \"TEXT\" is not \"measured\", \"paced\" or empty" otherwise.
absl::StatusOr<Timing> ParseTiming(absl::string_view text);

struct TuningRecord {
  int64_t id = 0;                     // assigned by Add: 1, 2, ... never reused
  std::string fingerprint;            // the workload's; Add fills it in
  std::string canonical_workload;     // the workload's canonical text; Add fills it in
  std::string trace;                  // canonical names, canonical text (ir::Trace::ToString)
  std::string mesh;                   // the winner's mesh axes, "x=2,y=2"
  double predicted_s = 0;             // the cost model's seconds
  std::optional<double> measured_s;   // median seconds under MPI, when measured
  bool verified = false;              // measured and the output checked out
  std::vector<std::string> patterns;  // pattern summary, e.g. {"A: Shift", "B: Broadcast"}
  std::string tuner_version;          // kTunerVersion when left empty
  // "measured", "simulated" or "simulated-scaled" (meshtune.v1.Record.checked); "" before 0.5.
  std::string checked;
  std::string checked_extents;  // the extents simulated when "simulated-scaled"
  int64_t created_unix_ms = 0;  // now when left 0
  // The machine fingerprint of the hardware profile it was tuned with (MachineFingerprint in
  // machine_fingerprint.h); "" when unknown (records from before meshtune 0.6).
  std::string machine;
  // How the tune that wrote it went: a serialized meshtune.v1.TuneSummary (the tuning
  // report's curve, measured candidates, counts); empty for records without one (written
  // before schema version 4, imported from a wisdom file, or stored by a caller that has none).
  std::string summary;
  // When the answer is the library (meshtune.v1.Record.library): a serialized
  // meshtune.v1.LibraryRun; empty for a schedule. `measured_s` and `verified` are then the
  // library's, `trace` the fastest schedule's.
  std::string library;
  // measured_s as a sample: a serialized meshtune.v1.TimeSample (its median is measured_s);
  // empty when not measured, or for records written before schema version 7.
  std::string sample;
  // How measured_s was taken. Add stores kMeasured when measured_s is set and this is left
  // kNone (every record written from now on is measured); records written before schema
  // version 7 with a measured_s read back kPaced; records without measured_s read kNone.
  Timing timing = Timing::kNone;
};

// A measured run of a schedule, kept to refit the cost model (engine/runs.h): the columns
// it is found by, and the run itself.
struct StoredRun {
  int64_t id = 0;               // assigned by AddRun: 1, 2, ... never reused
  int64_t created_unix_ms = 0;  // now when left 0
  std::string profile;          // the hardware profile whose numbers predicted it; "" built-in
  std::string machine;          // the machine fingerprint of those numbers
  std::string run;              // a serialized meshtune.v1.MeasuredRun
};

class TuningDb {
 public:
  virtual ~TuningDb() = default;

  // Adds `r` as a record of workload `w` (storing `w` on first use), assigns and returns its
  // id, and updates the workload's best record, in one transaction. InvalidArgument when
  // CheckRecord rejects the record; DataLoss when `w`'s fingerprint is stored with another
  // canonical text; other failures (I/O, a lock held past the busy timeout) name the file.
  virtual absl::StatusOr<int64_t> Add(const Workload& w, TuningRecord r) = 0;

  // The best record of the workload `fingerprint` (see BetterRecord); nullopt when the
  // workload has no record.
  virtual absl::StatusOr<std::optional<TuningRecord>> Best(const std::string& fingerprint) = 0;

  // The record `id`; nullopt when there is none.
  virtual absl::StatusOr<std::optional<TuningRecord>> Get(int64_t id) = 0;

  // Up to `limit` records with id > `after_id`, ascending by id, of the workload
  // `fingerprint` (of every workload when empty). Page on with the last id returned.
  // InvalidArgument for limit < 1 or after_id < 0; a limit over kMaxListLimit is lowered to it.
  virtual absl::StatusOr<std::vector<TuningRecord>> List(const std::string& fingerprint, int limit,
                                                         int64_t after_id) = 0;

  // A number that changes whenever a record may have been added since the last call — by
  // this object, or (SQLite) by any other connection to the same file — so that callers can
  // cache what they read. Cheap: no query of the records.
  virtual absl::StatusOr<int64_t> Generation() = 0;

  // The best record of every other workload of `w`'s structure: the same canonical expr,
  // dtype, mesh text (axes or "ranks=N") and profile as `w`, other extents (never `w`'s own
  // record), ascending by id. Empty when there is none.
  virtual absl::StatusOr<std::vector<TuningRecord>> BestOfSameStructure(const Workload& w) = 0;

  // Adds the measured run `r` (its id is assigned; created_unix_ms filled in when 0) and
  // returns its id. InvalidArgument for an empty run or a negative time; I/O errors name
  // the file.
  virtual absl::StatusOr<int64_t> AddRun(StoredRun r) = 0;

  // Up to `limit` runs with id > `after_id`, ascending by id, of the profile `profile` (of
  // every profile when `profile` is nullopt). InvalidArgument as List's.
  virtual absl::StatusOr<std::vector<StoredRun>> ListRuns(const std::optional<std::string>& profile,
                                                          int limit, int64_t after_id) = 0;
};

// AddRun's checks and defaults, shared by the implementations.
absl::Status CheckRun(StoredRun* r);

// Opens (creating when missing, with its parent directories) the SQLite database at
// `path`: WAL journal, synchronous=FULL, a busy timeout, and schema migrations up to
// kTuningDbSchemaVersion. FailedPrecondition "tuning database PATH has schema version N,
// but meshtune 0.4 knows versions up to 1; use a newer meshtune or another database file"
// for a newer file; every other error names `path` and carries SQLite's or the system's
// message (DataLoss for a file that is not a database or is corrupt).
absl::StatusOr<std::unique_ptr<TuningDb>> OpenSqliteTuningDb(const std::string& path);

// Opens the existing SQLite database at `path` for reading only (SQLITE_OPEN_READONLY):
// creates no file or directory, switches no journal, migrates nothing. NotFound "no
// tuning database at PATH (...)" when there is no file; FailedPrecondition for a
// directory, a file without meshtune's schema or a schema older than 3 (an older file is
// read as it is: a version-3 file's records without summary, and before version 7 without
// sample, a measured one with timing kPaced); otherwise as OpenSqliteTuningDb. Add fails
// (PermissionDenied) on the result.
absl::StatusOr<std::unique_ptr<TuningDb>> OpenSqliteTuningDbReadOnly(const std::string& path);

// An empty database in memory, gone with the object.
std::unique_ptr<TuningDb> NewInMemoryTuningDb();

// $XDG_CACHE_HOME/meshtune/tuning.db when XDG_CACHE_HOME is an absolute path, else
// $HOME/.cache/meshtune/tuning.db (the password database's home when HOME is unset).
std::string DefaultDbPath();

// The checks and defaults Add applies, shared by the implementations: fills in
// fingerprint, canonical_workload, tuner_version (when empty), created_unix_ms (when 0) and
// mesh (when empty and `w` has mesh axes), and rewrites the trace in canonical text.
// InvalidArgument, naming the field, for: a workload without fingerprint; a record
// fingerprint that differs from `w`'s; a trace that does not parse; a mesh that does not
// parse, differs from `w`'s axes, or does not have `w`'s rank count; a negative or
// non-finite time; verified without measured_s; a pattern that is empty or holds a
// newline; a negative created_unix_ms; a sample or a timing other than kNone without
// measured_s ("tuning record: a sample without measured_s", "tuning record: timing paced
// without measured_s"). Sets timing to kMeasured when measured_s is set and timing kNone.
absl::Status CheckRecord(const Workload& w, TuningRecord* r);

// Every record of the workload `fingerprint`, ascending by id (List page by page); List's
// errors as they come.
absl::StatusOr<std::vector<TuningRecord>> ListAllRecords(TuningDb& db,
                                                         const std::string& fingerprint);

// OK when List may run with these arguments; else List's InvalidArgument.
absl::Status CheckListArguments(int limit, int64_t after_id);

// True when `a` ranks before `b` as a workload's best: a verified record before an
// unverified one, then a checked one (Record.checked set) before one written before checks
// existed; among verified ones a measured one (timing kMeasured) before a paced one, whatever
// their times (a paced time is no measurement to compare), then the lower measured_s; among
// unverified ones the lower predicted_s; then the lower id.
bool BetterRecord(const TuningRecord& a, const TuningRecord& b);

}  // namespace meshtune::storage

#endif  // MESHTUNE_STORAGE_TUNING_DB_H_
