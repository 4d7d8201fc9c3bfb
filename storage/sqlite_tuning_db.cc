// The tuning database on SQLite (C API).
//
// One connection per TuningDb, behind one mutex: calls from threads of a process take
// turns, which is plenty for records that each cost seconds of measuring. Processes share
// the file through SQLite's locks: WAL lets readers run beside the one writer, writes start
// with BEGIN IMMEDIATE (no deadlocking read-to-write upgrade), and a busy timeout waits out
// another writer. synchronous=FULL syncs the WAL at every commit, so a record Add reported
// survives a power cut (NORMAL could lose the last commits); records arrive seconds apart,
// so the fsync costs nothing that matters.
//
// Schema: PRAGMA user_version is the number of migrations applied; kMigrations[v] takes the
// file from version v to v + 1 in one transaction.
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "base/excerpt.h"
#include "base/paths.h"
#include "base/status_macros.h"
#include "storage/tuning_db.h"

namespace meshtune::storage {
namespace {

constexpr int kBusyTimeoutMs = 10000;

// kMigrations[v]: schema version v -> v + 1.
constexpr const char* kMigrations[] = {
    // 1: workloads, their records and the best record of each.
    R"sql(
CREATE TABLE workloads (
  fingerprint TEXT PRIMARY KEY NOT NULL,  -- hex SHA-256 of canonical
  canonical TEXT NOT NULL,
  expr TEXT NOT NULL,
  extents TEXT NOT NULL,
  dtype TEXT NOT NULL,
  mesh TEXT NOT NULL,                     -- "x=2,y=2" or "ranks=4"
  profile TEXT NOT NULL,
  best_record_id INTEGER REFERENCES records(id)
);
CREATE TABLE records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  fingerprint TEXT NOT NULL REFERENCES workloads(fingerprint),
  trace TEXT NOT NULL,                    -- canonical names
  mesh TEXT NOT NULL,                     -- the winner's axes
  predicted_s REAL NOT NULL,
  measured_s REAL,                        -- NULL when not measured
  verified INTEGER NOT NULL CHECK (verified IN (0, 1)),
  patterns TEXT NOT NULL,                 -- '\n'-joined
  tuner_version TEXT NOT NULL,
  created_unix_ms INTEGER NOT NULL
);
CREATE INDEX records_by_fingerprint ON records(fingerprint);
)sql",
    // 2: how each record's schedule is known to compute the right answer (meshtune 0.5).
    R"sql(
ALTER TABLE records ADD COLUMN checked TEXT NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN checked_extents TEXT NOT NULL DEFAULT '';
)sql",
    // 3: the machine fingerprint of the profile a record was tuned with (meshtune 0.6).
    R"sql(
ALTER TABLE records ADD COLUMN machine TEXT NOT NULL DEFAULT '';
)sql",
    // 4: how the tune that wrote a record went, a serialized meshtune.v1.TuneSummary (the
    // tuning report's curve, measurements and counts); NULL for records written before.
    R"sql(
ALTER TABLE records ADD COLUMN summary BLOB;
)sql",
    // 5: every measured run of every tune and fidelity run, a serialized
    // meshtune.v1.MeasuredRun, by the profile whose numbers predicted it (engine/runs.h).
    R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_unix_ms INTEGER NOT NULL,
  profile TEXT NOT NULL,
  machine TEXT NOT NULL,
  run BLOB NOT NULL
);
CREATE INDEX runs_by_profile ON runs(profile, id);
)sql",
    // 6: the library call a record's answer is, a serialized meshtune.v1.LibraryRun (when
    // ScaLAPACK's GEMM was faster than every schedule of the tune); NULL for a schedule.
    R"sql(
ALTER TABLE records ADD COLUMN library BLOB;
)sql",
    // 7: how each record's measured_s was taken (meshtune 0.9): 'measured' (as measured, a
    // sample of timed repetitions), 'paced' (every measured record written before: its time
    // was scaled by the machine's pace, no measurement) or '' (not measured); and the
    // sample, a serialized meshtune.v1.TimeSample, NULL when none.
    R"sql(
ALTER TABLE records ADD COLUMN timing TEXT NOT NULL DEFAULT 'paced';
ALTER TABLE records ADD COLUMN sample BLOB;
UPDATE records SET timing = '' WHERE measured_s IS NULL;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kTuningDbSchemaVersion,
              "one migration per schema version");

// The oldest schema a read-only connection reads: it selects NULL (or what the migration
// would have filled in) for the columns a newer migration added (version 3 has no summary).
constexpr int kOldestReadableSchemaVersion = 3;

// The record query for a file of schema `version` (kOldestReadableSchemaVersion or newer).
std::string SelectRecord(int64_t version) {
  return absl::StrCat(
      "SELECT r.id, r.fingerprint, w.canonical, r.trace, r.mesh, r.predicted_s, r.measured_s, "
      "r.verified, r.patterns, r.tuner_version, r.created_unix_ms, r.checked, r.checked_extents, "
      "r.machine, ",
      version >= 4 ? "r.summary" : "NULL", ", ", version >= 6 ? "r.library" : "NULL", ", ",
      version >= 7 ? "r.timing, r.sample" : "'paced', NULL",
      " FROM records r JOIN workloads w ON w.fingerprint = r.fingerprint");
}

// The status code for an SQLite result code.
absl::StatusCode CodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
      return absl::StatusCode::kUnavailable;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_FULL:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    default:
      return absl::StatusCode::kInternal;
  }
}

// mkdir -p of the directory holding `path`.
absl::Status MakeParentDirs(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) return absl::OkStatus();
  const absl::Status made = base::MakeDirs(dir);
  if (made.ok()) return made;
  return absl::Status(made.code(), absl::StrCat("tuning database ", path, ": ", made.message()));
}

struct Finalize {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

// Resets a statement (and drops its bindings) when a use of it ends.
class Use {
 public:
  explicit Use(const Statement& s) : s_(s.get()) {}
  ~Use() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_;
};

void BindText(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const unsigned char* text = sqlite3_column_text(s, i);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

// The bytes of blob column `i`; empty when NULL.
std::string ColumnBlob(sqlite3_stmt* s, int i) {
  const void* blob = sqlite3_column_blob(s, i);
  if (blob == nullptr) return "";  // NULL, or no bytes
  return std::string(static_cast<const char*>(blob),
                     static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

// Binds `bytes` as a blob, or leaves NULL when empty.
void BindBlobOrNull(sqlite3_stmt* s, int i, const std::string& bytes) {
  if (bytes.empty()) return;
  sqlite3_bind_blob(s, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
}

// The record in the current row of a SelectRecord statement.
TuningRecord ReadRecord(sqlite3_stmt* s) {
  TuningRecord r;
  r.id = sqlite3_column_int64(s, 0);
  r.fingerprint = ColumnText(s, 1);
  r.canonical_workload = ColumnText(s, 2);
  r.trace = ColumnText(s, 3);
  r.mesh = ColumnText(s, 4);
  r.predicted_s = sqlite3_column_double(s, 5);
  if (sqlite3_column_type(s, 6) != SQLITE_NULL) r.measured_s = sqlite3_column_double(s, 6);
  r.verified = sqlite3_column_int(s, 7) != 0;
  const std::string patterns = ColumnText(s, 8);
  if (!patterns.empty()) r.patterns = absl::StrSplit(patterns, '\n');
  r.tuner_version = ColumnText(s, 9);
  r.created_unix_ms = sqlite3_column_int64(s, 10);
  r.checked = ColumnText(s, 11);
  r.checked_extents = ColumnText(s, 12);
  r.machine = ColumnText(s, 13);
  r.summary = ColumnBlob(s, 14);
  r.library = ColumnBlob(s, 15);
  // Column 16 is 'measured' for a record measured as a sample; any other text ('paced', in a
  // migrated file or selected for an older one) reads as paced: never taken for a
  // measurement.
  if (r.measured_s.has_value())
    r.timing = ColumnText(s, 16) == "measured" ? Timing::kMeasured : Timing::kPaced;
  r.sample = ColumnBlob(s, 17);
  return r;
}

class SqliteTuningDb : public TuningDb {
 public:
  static absl::StatusOr<std::unique_ptr<TuningDb>> Open(const std::string& path, bool read_only) {
    if (path.empty()) return absl::InvalidArgumentError("tuning database: the path is empty");
    if (read_only) {
      // SQLite would create the file (and we the directories): a mistyped path must not
      // leave an empty database behind.
      struct stat st;
      if (stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
          return absl::NotFoundError(
              absl::StrCat("no tuning database at ", base::Excerpt(path, base::kMaxPathExcerpt),
                           " (tune something first, or give --db PATH of an existing one)"));
        }
        return absl::ErrnoToStatus(
            errno, absl::StrCat("tuning database ", base::Excerpt(path, base::kMaxPathExcerpt)));
      }
      if (S_ISDIR(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat("tuning database ", base::Excerpt(path, base::kMaxPathExcerpt),
                         " is a directory, not a file"));
      }
    } else {
      MT_RETURN_IF_ERROR(MakeParentDirs(path));
    }
    std::unique_ptr<SqliteTuningDb> db(new SqliteTuningDb(path));
    // mu_ serialises every use of the connection: no SQLite mutex needed.
    const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    const int rc = sqlite3_open_v2(path.c_str(), &db->db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (db->db_ == nullptr) return absl::ResourceExhaustedError("sqlite3_open_v2: out of memory");
    if (rc != SQLITE_OK) return db->Error(rc, "open it");
    absl::MutexLock lock(&db->mu_);
    MT_RETURN_IF_ERROR(db->Setup(read_only));
    return std::unique_ptr<TuningDb>(std::move(db));
  }

  ~SqliteTuningDb() override {
    for (Statement* s :
         {&begin_, &commit_, &rollback_, &select_workload_, &insert_workload_, &insert_record_,
          &select_best_id_, &update_best_, &best_, &get_, &list_all_, &list_workload_,
          &data_version_, &same_structure_, &insert_run_, &list_runs_all_, &list_runs_profile_}) {
      s->reset();  // finalized before the connection closes
    }
    sqlite3_close_v2(db_);
  }

  absl::StatusOr<int64_t> Add(const Workload& w, TuningRecord r) override {
    MT_RETURN_IF_ERROR(CheckRecord(w, &r));
    absl::MutexLock lock(&mu_);
    MT_RETURN_IF_ERROR(Run(begin_, "start a transaction"));
    absl::StatusOr<int64_t> id = AddInTransaction(w, r);
    if (id.ok()) {
      if (absl::Status s = Run(commit_, "commit a record"); !s.ok()) id = s;
    }
    ++local_commits_;  // also after a failure: whatever happened, readers look again
    if (!id.ok() && !sqlite3_get_autocommit(db_)) Run(rollback_, "roll back").IgnoreError();
    return id;
  }

  // PRAGMA data_version moves with other connections' commits, `local_commits_` with ours.
  absl::StatusOr<int64_t> Generation() override {
    absl::MutexLock lock(&mu_);
    Use use(data_version_);
    const int rc = sqlite3_step(use.get());
    if (rc != SQLITE_ROW) return Error(rc, "read PRAGMA data_version");
    return (sqlite3_column_int64(use.get(), 0) << 32) + local_commits_;
  }

  absl::StatusOr<std::optional<TuningRecord>> Best(const std::string& fingerprint) override {
    absl::MutexLock lock(&mu_);
    Use use(best_);
    BindText(use.get(), 1, fingerprint);
    return One(use.get(), "read the best record");
  }

  absl::StatusOr<std::optional<TuningRecord>> Get(int64_t id) override {
    absl::MutexLock lock(&mu_);
    Use use(get_);
    sqlite3_bind_int64(use.get(), 1, id);
    return One(use.get(), "read a record");
  }

  absl::StatusOr<std::vector<TuningRecord>> List(const std::string& fingerprint, int limit,
                                                 int64_t after_id) override {
    MT_RETURN_IF_ERROR(CheckListArguments(limit, after_id));
    limit = std::min(limit, kMaxListLimit);
    absl::MutexLock lock(&mu_);
    Use use(fingerprint.empty() ? list_all_ : list_workload_);
    sqlite3_stmt* s = use.get();
    sqlite3_bind_int64(s, 1, after_id);
    sqlite3_bind_int(s, 2, limit);
    if (!fingerprint.empty()) BindText(s, 3, fingerprint);
    return All(s, "list records");
  }

  absl::StatusOr<int64_t> AddRun(StoredRun r) override {
    MT_RETURN_IF_ERROR(CheckRun(&r));
    absl::MutexLock lock(&mu_);
    if (!has_runs_) {
      return absl::PermissionDeniedError(
          absl::StrCat("tuning database ", path_, " is open for reading only"));
    }
    Use use(insert_run_);
    sqlite3_stmt* s = use.get();
    sqlite3_bind_int64(s, 1, r.created_unix_ms);
    BindText(s, 2, r.profile);
    BindText(s, 3, r.machine);
    sqlite3_bind_blob(s, 4, r.run.data(), static_cast<int>(r.run.size()), SQLITE_TRANSIENT);
    const int rc = sqlite3_step(s);
    ++local_commits_;
    if (rc != SQLITE_DONE) return Error(rc, "add a measured run");
    return sqlite3_last_insert_rowid(db_);
  }

  absl::StatusOr<std::vector<StoredRun>> ListRuns(const std::optional<std::string>& profile,
                                                  int limit, int64_t after_id) override {
    MT_RETURN_IF_ERROR(CheckListArguments(limit, after_id));
    limit = std::min(limit, kMaxListLimit);
    absl::MutexLock lock(&mu_);
    std::vector<StoredRun> out;
    if (!has_runs_) return out;
    Use use(profile.has_value() ? list_runs_profile_ : list_runs_all_);
    sqlite3_stmt* s = use.get();
    sqlite3_bind_int64(s, 1, after_id);
    sqlite3_bind_int(s, 2, limit);
    if (profile.has_value()) BindText(s, 3, *profile);
    while (true) {
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) return out;
      if (rc != SQLITE_ROW) return Error(rc, "list measured runs");
      StoredRun r;
      r.id = sqlite3_column_int64(s, 0);
      r.created_unix_ms = sqlite3_column_int64(s, 1);
      r.profile = ColumnText(s, 2);
      r.machine = ColumnText(s, 3);
      const void* blob = sqlite3_column_blob(s, 4);
      r.run.assign(static_cast<const char*>(blob), static_cast<size_t>(sqlite3_column_bytes(s, 4)));
      out.push_back(std::move(r));
    }
  }

  absl::StatusOr<std::vector<TuningRecord>> BestOfSameStructure(const Workload& w) override {
    absl::MutexLock lock(&mu_);
    Use use(same_structure_);
    sqlite3_stmt* s = use.get();
    int i = 1;
    const std::string mesh = w.MeshText();
    for (const std::string* field : {&w.expr, &w.dtype, &mesh, &w.profile, &w.fingerprint}) {
      BindText(s, i++, *field);
    }
    return All(s, "read the records of the problem at other extents");
  }

 private:
  explicit SqliteTuningDb(std::string path) : path_(std::move(path)) {}

  absl::Status Error(int rc, absl::string_view what) const {
    return absl::Status(CodeOf(rc),
                        absl::StrCat("tuning database ", path_, ": cannot ", what, ": ",
                                     db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
  }

  absl::Status Exec(const std::string& sql, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? absl::OkStatus() : Error(rc, what);
  }

  absl::StatusOr<Statement> Prepare(const std::string& sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) return Error(rc, absl::StrCat("prepare \"", sql, "\""));
    return Statement(s);
  }

  // Steps a statement that returns no rows (or whose rows do not matter) once.
  absl::Status Run(const Statement& statement, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Use use(statement);
    const int rc = sqlite3_step(use.get());
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? absl::OkStatus() : Error(rc, what);
  }

  // The single integer a query returns.
  absl::StatusOr<int64_t> QueryInt(const std::string& sql, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    MT_ASSIGN_OR_RETURN(Statement s, Prepare(sql));
    const int rc = sqlite3_step(s.get());
    if (rc != SQLITE_ROW) return Error(rc, what);
    return sqlite3_column_int64(s.get(), 0);
  }

  // The record a SelectRecord statement with bound parameters finds, if any.
  absl::StatusOr<std::optional<TuningRecord>> One(sqlite3_stmt* s, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) return Error(rc, what);
    return ReadRecord(s);
  }

  // Every record a SelectRecord statement with bound parameters finds.
  absl::StatusOr<std::vector<TuningRecord>> All(sqlite3_stmt* s, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<TuningRecord> out;
    while (true) {
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) return out;
      if (rc != SQLITE_ROW) return Error(rc, what);
      out.push_back(ReadRecord(s));
    }
  }

  absl::Status CheckVersion(int64_t version) const {
    if (version <= kTuningDbSchemaVersion) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("tuning database ", path_, " has schema version ", version, ", but ",
                     kTunerVersion, " knows versions up to ", kTuningDbSchemaVersion,
                     "; use a newer meshtune or another database file"));
  }

  absl::Status Setup(bool read_only) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    // Before anything writes to the file: reject a newer schema untouched.
    MT_ASSIGN_OR_RETURN(int64_t version,
                        QueryInt("PRAGMA user_version", "read the schema version"));
    MT_RETURN_IF_ERROR(CheckVersion(version));
    if (read_only) {
      // No journal switch, no migration: a reader leaves the file as it is.
      if (version == 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("tuning database ", base::Excerpt(path_, base::kMaxPathExcerpt),
                         " holds no meshtune schema (an empty or another SQLite file)"));
      }
      if (version < kOldestReadableSchemaVersion) {
        return absl::FailedPreconditionError(absl::StrCat(
            "tuning database ", base::Excerpt(path_, base::kMaxPathExcerpt), " has schema version ",
            version, "; a command that writes to it (tune, meshtuned) migrates it to ",
            kTuningDbSchemaVersion));
      }
      return PrepareStatements(version);
    }
    {
      MT_ASSIGN_OR_RETURN(Statement wal, Prepare("PRAGMA journal_mode=WAL"));
      const int rc = sqlite3_step(wal.get());
      if (rc != SQLITE_ROW) return Error(rc, "switch to the WAL journal");
      if (const std::string mode = ColumnText(wal.get(), 0); mode != "wal") {
        return absl::FailedPreconditionError(
            absl::StrCat("tuning database ", path_,
                         ": cannot switch to the WAL journal (SQLite kept ", mode, ")"));
      }
    }
    MT_RETURN_IF_ERROR(
        Exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON", "set up the connection"));
    if (version < kTuningDbSchemaVersion) MT_RETURN_IF_ERROR(Migrate());
    return PrepareStatements(kTuningDbSchemaVersion);
  }

  // The statements for a file of schema `version`.
  absl::Status PrepareStatements(int64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::string select_record = SelectRecord(version);
    const std::pair<Statement*, std::string> statements[] = {
        {&begin_, "BEGIN IMMEDIATE"},
        {&commit_, "COMMIT"},
        {&rollback_, "ROLLBACK"},
        {&select_workload_, "SELECT canonical FROM workloads WHERE fingerprint = ?1"},
        {&insert_workload_,
         "INSERT INTO workloads (fingerprint, canonical, expr, extents, dtype, mesh, profile) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
        // A read-only connection to a version-3 file never inserts: its statement names
        // only the columns the file has.
        {&insert_record_,
         absl::StrCat("INSERT INTO records (fingerprint, trace, mesh, predicted_s, measured_s, "
                      "verified, patterns, tuner_version, created_unix_ms, checked, "
                      "checked_extents, machine",
                      version >= 4 ? ", summary" : "", version >= 6 ? ", library" : "",
                      version >= 7 ? ", timing, sample" : "",
                      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12",
                      version >= 4 ? ", ?13" : "", version >= 6 ? ", ?14" : "",
                      version >= 7 ? ", ?15, ?16" : "", ")")},
        // BetterRecord as SQL: among verified records, a paced one (timing other than
        // 'measured') after the measured ones. (A file older than version 7 has no timing
        // column; only a read-only connection, which never adds, prepares it for one.)
        {&select_best_id_,
         absl::StrCat("SELECT id FROM records WHERE fingerprint = ?1 "
                      "ORDER BY verified DESC, checked = '', ",
                      version >= 7 ? "verified AND timing <> 'measured', " : "",
                      "CASE WHEN verified THEN measured_s ELSE predicted_s END, id LIMIT 1")},
        {&update_best_, "UPDATE workloads SET best_record_id = ?2 WHERE fingerprint = ?1"},
        {&best_,
         absl::StrCat(
             select_record,
             " WHERE r.id = (SELECT best_record_id FROM workloads WHERE fingerprint = ?1)")},
        {&get_, absl::StrCat(select_record, " WHERE r.id = ?1")},
        {&list_all_, absl::StrCat(select_record, " WHERE r.id > ?1 ORDER BY r.id LIMIT ?2")},
        {&list_workload_,
         absl::StrCat(select_record,
                      " WHERE r.fingerprint = ?3 AND r.id > ?1 ORDER BY r.id LIMIT ?2")},
        {&data_version_, "PRAGMA data_version"},
        {&same_structure_,
         absl::StrCat(select_record,
                      " WHERE r.id = w.best_record_id AND w.expr = ?1 AND w.dtype = ?2 AND "
                      "w.mesh = ?3 AND w.profile = ?4 AND w.fingerprint <> ?5 ORDER BY r.id")},
    };
    for (const auto& [statement, sql] : statements) {
      MT_ASSIGN_OR_RETURN(*statement, Prepare(sql));
    }
    has_runs_ = version >= 5;
    if (!has_runs_) return absl::OkStatus();  // a read-only connection to an older file
    const std::string select_run = "SELECT id, created_unix_ms, profile, machine, run FROM runs";
    const std::pair<Statement*, std::string> run_statements[] = {
        {&insert_run_,
         "INSERT INTO runs (created_unix_ms, profile, machine, run) VALUES (?1, ?2, ?3, ?4)"},
        {&list_runs_all_, absl::StrCat(select_run, " WHERE id > ?1 ORDER BY id LIMIT ?2")},
        {&list_runs_profile_,
         absl::StrCat(select_run, " WHERE profile = ?3 AND id > ?1 ORDER BY id LIMIT ?2")},
    };
    for (const auto& [statement, sql] : run_statements) {
      MT_ASSIGN_OR_RETURN(*statement, Prepare(sql));
    }
    return absl::OkStatus();
  }

  // Applies the migrations the file lacks, each in its own transaction. The version is
  // read again inside each: another process may have migrated meanwhile.
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (true) {
      MT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "start a schema migration"));
      // True when the schema is current, false after one migration.
      absl::StatusOr<bool> current =
          [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<bool> {
        MT_ASSIGN_OR_RETURN(int64_t version,
                            QueryInt("PRAGMA user_version", "read the schema version"));
        MT_RETURN_IF_ERROR(CheckVersion(version));
        if (version == kTuningDbSchemaVersion) return true;
        const std::string what = absl::StrCat("migrate to schema version ", version + 1);
        MT_RETURN_IF_ERROR(Exec(kMigrations[version], what));
        MT_RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA user_version = ", version + 1), what));
        return false;
      }();
      if (current.ok()) {
        if (absl::Status s = Exec("COMMIT", "commit a schema migration"); !s.ok()) current = s;
      }
      if (!current.ok()) {
        if (!sqlite3_get_autocommit(db_)) Exec("ROLLBACK", "roll back").IgnoreError();
        return current.status();
      }
      if (*current) return absl::OkStatus();
    }
  }

  absl::StatusOr<int64_t> AddInTransaction(const Workload& w, const TuningRecord& r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    {
      Use use(select_workload_);
      BindText(use.get(), 1, w.fingerprint);
      const int rc = sqlite3_step(use.get());
      if (rc == SQLITE_ROW) {
        if (ColumnText(use.get(), 0) != w.canonical) {
          return absl::DataLossError(absl::StrCat("tuning database ", path_, ": workload ",
                                                  w.fingerprint,
                                                  " is stored with another canonical text"));
        }
      } else if (rc != SQLITE_DONE) {
        return Error(rc, "read a workload");
      } else {
        Use insert(insert_workload_);
        int i = 1;
        const std::string mesh = w.MeshText();
        for (const std::string* field :
             {&w.fingerprint, &w.canonical, &w.expr, &w.extents, &w.dtype, &mesh, &w.profile}) {
          BindText(insert.get(), i++, *field);
        }
        if (const int rc = sqlite3_step(insert.get()); rc != SQLITE_DONE)
          return Error(rc, "add a workload");
      }
    }
    int64_t id = 0;
    {
      Use use(insert_record_);
      sqlite3_stmt* s = use.get();
      BindText(s, 1, w.fingerprint);
      BindText(s, 2, r.trace);
      BindText(s, 3, r.mesh);
      sqlite3_bind_double(s, 4, r.predicted_s);
      if (r.measured_s.has_value()) sqlite3_bind_double(s, 5, *r.measured_s);  // else NULL
      sqlite3_bind_int(s, 6, r.verified ? 1 : 0);
      BindText(s, 7, absl::StrJoin(r.patterns, "\n"));
      BindText(s, 8, r.tuner_version);
      sqlite3_bind_int64(s, 9, r.created_unix_ms);
      BindText(s, 10, r.checked);
      BindText(s, 11, r.checked_extents);
      BindText(s, 12, r.machine);
      BindBlobOrNull(s, 13, r.summary);
      BindBlobOrNull(s, 14, r.library);
      const absl::string_view timing = TimingName(r.timing);
      sqlite3_bind_text(s, 15, timing.data(), static_cast<int>(timing.size()), SQLITE_STATIC);
      BindBlobOrNull(s, 16, r.sample);
      if (const int rc = sqlite3_step(s); rc != SQLITE_DONE) return Error(rc, "add a record");
      id = sqlite3_last_insert_rowid(db_);
    }
    int64_t best = 0;
    {
      Use use(select_best_id_);
      BindText(use.get(), 1, w.fingerprint);
      const int rc = sqlite3_step(use.get());
      if (rc != SQLITE_ROW) return Error(rc, "find the best record");
      best = sqlite3_column_int64(use.get(), 0);
    }
    Use use(update_best_);
    BindText(use.get(), 1, w.fingerprint);
    sqlite3_bind_int64(use.get(), 2, best);
    if (const int rc = sqlite3_step(use.get()); rc != SQLITE_DONE)
      return Error(rc, "update the best record");
    return id;
  }

  const std::string path_;
  absl::Mutex mu_;
  sqlite3* db_ = nullptr;      // set once by Open; mu_ guards every use of the connection
  int64_t local_commits_ = 0;  // Add calls on this connection (guarded by mu_)
  // mu_ guards these too.
  Statement begin_, commit_, rollback_, select_workload_, insert_workload_, insert_record_,
      select_best_id_, update_best_, best_, get_, list_all_, list_workload_, data_version_,
      same_structure_, insert_run_, list_runs_all_, list_runs_profile_;
  bool has_runs_ = false;  // the file has the runs table (schema version 5)
};

}  // namespace

absl::StatusOr<std::unique_ptr<TuningDb>> OpenSqliteTuningDb(const std::string& path) {
  return SqliteTuningDb::Open(path, /*read_only=*/false);
}

absl::StatusOr<std::unique_ptr<TuningDb>> OpenSqliteTuningDbReadOnly(const std::string& path) {
  return SqliteTuningDb::Open(path, /*read_only=*/true);
}

}  // namespace meshtune::storage
