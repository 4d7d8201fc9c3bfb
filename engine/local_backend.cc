#include "engine/local_backend.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/cluster.h"
#include "engine/codegen.h"
#include "engine/explain.h"
#include "engine/job.h"
#include "engine/records.h"
#include "engine/tune/tune_messages.h"
#include "engine/tune/tune_options.h"
#include "engine/tune/tune_run.h"
#include "runtime/launch/launcher.h"
#include "search/runner.h"
#include "storage/tuning_db.h"

namespace meshtune::engine {

namespace {

// Forwards the tuner's progress reports as messages.
class ProgressForwarder : public search::SearchCallback {
 public:
  explicit ProgressForwarder(const TuneProgressFn& progress) : progress_(progress) {}
  void OnProgress(const search::SearchProgress& p) override { progress_(ProgressMessage(p)); }

 private:
  const TuneProgressFn& progress_;
};

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(LocalBackendOptions options) : options_(std::move(options)) {}

  absl::StatusOr<v1::TuneResult> Tune(const v1::TuneRequest& request,
                                      const TuneProgressFn& progress) override {
    const LocalTuneSettings& s = options_.tune;
    MachineNumbers numbers;
    numbers.alpha = s.alpha;
    numbers.beta = s.beta;
    numbers.gamma = s.gamma;
    absl::StatusOr<PreparedTune> prepared = PrepareTune(request, numbers);
    if (!prepared.ok()) return prepared.status();
    search::TuneOptions& options = prepared->options;
    const std::string& warning = prepared->warning;
    if (!warning.empty()) Warn(warning);
    // SIGINT/SIGTERM (when the command installed runtime's handlers) stop the search and
    // kill a measurement's job.
    options.cancelled = [] { return runtime::StopSignal() != 0; };
    std::unique_ptr<search::Runner> runner;
    if (options.top_k == 0) {
      runner = search::NewModelOnlyRunner();
    } else {
      runner = search::NewMpiRunner(
          MpiRunnerOptionsOf(s, prepared->profile ? &*prepared->profile : nullptr));
    }
    storage::TuningDb* db = nullptr;
    if (!options_.db_path.empty()) {
      absl::StatusOr<storage::TuningDb*> opened = Db(/*write=*/true);
      if (!opened.ok()) return opened.status();
      db = *opened;
    }
    std::vector<search::SearchCallback*> callbacks;
    const TuneProgressFn forward = progress ? progress : [](const v1::TuneProgress&) {};
    ProgressForwarder forwarder(forward);
    callbacks.push_back(&forwarder);
    std::string store_error;
    absl::StatusOr<v1::TuneResult> result =
        RunAndStoreTune(options, prepared->workload, request, *runner, callbacks, db, &store_error,
                        &prepared->numbers);
    if (!store_error.empty())
      Warn("the result was not stored in the tuning database: " + store_error);
    // What the tune's end says (the runs kept, a refit of the cost model), as the daemon's
    // client prints it.
    if (result.ok()) {
      for (const std::string& w : result->warnings()) Warn(w);
    }
    if (result.ok() && !warning.empty()) result->add_warnings(warning);
    return result;
  }

  absl::StatusOr<v1::LookupResponse> Lookup(const v1::LookupRequest& request) override {
    absl::StatusOr<storage::TuningDb*> db = Db(/*write=*/false);
    if (!db.ok()) return db.status();
    return engine::Lookup(**db, request);
  }

  absl::StatusOr<v1::ListRecordsResponse> ListRecords(
      const v1::ListRecordsRequest& request) override {
    absl::StatusOr<storage::TuningDb*> db = Db(/*write=*/false);
    if (!db.ok()) return db.status();
    return engine::ListRecords(**db, request);
  }

  absl::StatusOr<v1::Record> GetRecord(const v1::GetRecordRequest& request) override {
    absl::StatusOr<storage::TuningDb*> db = Db(/*write=*/false);
    if (!db.ok()) return db.status();
    return engine::GetRecord(**db, request);
  }

  absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request) override {
    return engine::Explain(request);
  }

  absl::StatusOr<v1::CodegenResponse> Codegen(const v1::CodegenRequest& request) override {
    if (request.record_id() == 0 || !request.trace().text().empty())
      return engine::Codegen(request);
    absl::StatusOr<storage::TuningDb*> db = Db(/*write=*/false);
    if (!db.ok()) return db.status();
    absl::StatusOr<v1::CodegenRequest> resolved = ResolveCodegenRequest(**db, request);
    if (!resolved.ok()) return resolved.status();
    return engine::Codegen(*resolved);
  }

 private:
  // The database, opened at the first call that needs it: for reading only (a mistyped
  // --db must not create an empty database), or to write (created when missing).
  absl::StatusOr<storage::TuningDb*> Db(bool write) {
    if (db_ != nullptr && (db_writable_ || !write)) return db_.get();
    if (options_.db_path.empty()) {
      return absl::FailedPreconditionError("no tuning database (--no-db); give --db PATH");
    }
    absl::StatusOr<std::unique_ptr<storage::TuningDb>> db =
        write ? storage::OpenSqliteTuningDb(options_.db_path)
              : storage::OpenSqliteTuningDbReadOnly(options_.db_path);
    if (!db.ok()) return db.status();
    db_ = *std::move(db);
    db_writable_ = write;
    return db_.get();
  }

  // Each note once (a batch would repeat it for every request).
  void Warn(const std::string& message) {
    if (options_.warn && warned_.insert(message).second) options_.warn(message);
  }

  LocalBackendOptions options_;
  std::unique_ptr<storage::TuningDb> db_;
  bool db_writable_ = false;
  std::set<std::string> warned_;
};

}  // namespace

search::MpiRunnerOptions MpiRunnerOptionsOf(const LocalTuneSettings& s,
                                            const v1::HardwareProfile* profile) {
  search::MpiRunnerOptions mpi;
  mpi.reps = s.reps;
  mpi.warmup = s.warmup;
  mpi.max_rounds = std::max(s.reps, s.max_rounds);
  mpi.launch = ClusterLaunch(LaunchCluster(s.cluster, profile));
  mpi.launch.worker = s.worker;
  return mpi;
}

std::unique_ptr<Backend> NewLocalBackend(LocalBackendOptions options) {
  return std::make_unique<LocalBackend>(std::move(options));
}

}  // namespace meshtune::engine
