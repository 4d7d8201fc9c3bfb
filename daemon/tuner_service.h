// The meshtune.v1.Tuner gRPC service: translates between the wire and the in-process engine
// (explain.h, records.h, tune_messages.h, tune_jobs.h) and between absl::Status and
// grpc::Status (codes map one to one; messages pass through, so bad input is
// INVALID_ARGUMENT naming the offending token).
//
// Tune runs each distinct request as one shared job on its own thread (TuneJobs); the
// handler streams the job's progress and then its result, and leaves when its client
// cancels or its deadline passes, answering CANCELLED or DEADLINE_EXCEEDED (the job is
// cancelled when no caller is left). Everything slow, a calibration on first use too,
// runs in the job: the handler itself only reads the request. Every
// handler turns an exception into INTERNAL: a request never takes the daemon down.
// Thread-safe: gRPC calls the handlers concurrently.
#ifndef MESHTUNE_DAEMON_TUNER_SERVICE_H_
#define MESHTUNE_DAEMON_TUNER_SERVICE_H_

#include <atomic>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/lookup_cache.h"
#include "daemon/tune_jobs.h"
#include "engine/runs.h"
#include "proto/meshtune.grpc.pb.h"
#include "search/tuner.h"
#include "storage/tuning_db.h"
#include "storage/workload.h"

namespace meshtune::daemon {

// Lookup uses gRPC's callback API: it answers on the thread that read the request (no
// hand-off to a worker thread), which is what keeps a cached Lookup near 100 us. It takes
// the request's bytes (the raw form) and parses them itself: the typed callback API would
// answer a request that does not parse with UNIMPLEMENTED; this one says INVALID_ARGUMENT,
// as the other RPCs' (synchronous) handlers answer INTERNAL rather than a wrong code.
class TunerService final : public v1::Tuner::WithRawCallbackMethod_Lookup<v1::Tuner::Service> {
 public:
  // Serves from and stores into `db`, which must outlive the service. At most
  // `max_concurrent_tunes` (>= 1) tunes run at once; later ones queue. A tune whose rank
  // count has no hardware profile calibrates one first (engine/tune/machine_profile.h) unless
  // its request or `no_calibrate` says not to.
  TunerService(storage::TuningDb* db, int max_concurrent_tunes, bool no_calibrate = false);
  // Cancels the running tunes and waits for their threads.
  ~TunerService() override;

  // Shutdown, first step: cancels every tune (their callers get UNAVAILABLE), refuses new
  // ones, and waits up to `grace` for the tune threads to end. False when some still run
  // (a measurement under MPI ends at its own timeout at the latest).
  bool Stop(absl::Duration grace);

  // The tunes running or queued, oldest first (for meshtuned's HTTP status pages).
  std::vector<TuneJob::Snapshot> ActiveTunes() const { return jobs_.Snapshots(); }

  grpc::Status Tune(grpc::ServerContext* context, const v1::TuneRequest* request,
                    grpc::ServerWriter<v1::TuneEvent>* writer) override;
  // The bytes of a meshtune.v1.LookupRequest in, of a LookupResponse out.
  grpc::ServerUnaryReactor* Lookup(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::Status Explain(grpc::ServerContext* context, const v1::ExplainRequest* request,
                       v1::ExplainResponse* response) override;
  grpc::Status Codegen(grpc::ServerContext* context, const v1::CodegenRequest* request,
                       v1::CodegenResponse* response) override;
  grpc::Status ListRecords(grpc::ServerContext* context, const v1::ListRecordsRequest* request,
                           v1::ListRecordsResponse* response) override;
  grpc::Status GetRecord(grpc::ServerContext* context, const v1::GetRecordRequest* request,
                         v1::Record* response) override;

 private:
  // The body of one tune job: search::Tune, measured on `profile`'s cluster (nullptr or
  // none: this node), then the winner stored in the database.
  absl::StatusOr<v1::TuneResult> RunTune(
      search::TuneOptions options, const storage::Workload& workload,
      const v1::TuneRequest& request, const engine::RunNumbers& numbers,
      const v1::HardwareProfile* profile, const std::function<bool()>& cancelled,
      const std::function<void(const v1::TuneProgress&)>& progress);
  // A tune (of a statement or a program of several) as a job, shared with a running one
  // for the same work (engine::TuneJobKey): `asked` is the request as the daemon runs it
  // (no_calibrate forced by the daemon's flag), `request` as the client sent it. The
  // request is read here without calibrating (its errors, InvalidArgument naming the bad
  // part, come back at once); a calibration on first use runs in the job, so the caller's
  // deadline and cancellation end the call while it runs.
  absl::StatusOr<std::shared_ptr<TuneJob>> JoinTune(const v1::TuneRequest& asked,
                                                    const v1::TuneRequest& request, bool* shared);

  storage::TuningDb* const db_;
  LookupCache lookups_;
  TuneJobs jobs_;
  std::atomic<bool> stopping_{false};
  const bool no_calibrate_;
};

}  // namespace meshtune::daemon

#endif  // MESHTUNE_DAEMON_TUNER_SERVICE_H_
