#include "daemon/tuner_service.h"

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cluster.h"
#include "engine/codegen.h"
#include "engine/explain.h"
#include "engine/job.h"
#include "engine/records.h"
#include "engine/tune/tune_messages.h"
#include "engine/tune/tune_run.h"
#include "ir/statement_program.h"
#include "search/runner.h"
#include "spdlog/spdlog.h"

namespace meshtune::daemon {

namespace {

// How often a Tune handler looks at its client (cancelled? past the deadline?).
constexpr absl::Duration kClientPoll = absl::Milliseconds(100);

// The longest error message sent: gRPC carries it in metadata, which clients cap at 8 KB
// (a longer one arrives as RESOURCE_EXHAUSTED). Messages quote input through base::Excerpt
// and stay far below this; the cut is a last resort.
constexpr size_t kMaxStatusMessage = 2048;

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  std::string message(s.message());
  if (message.size() > kMaxStatusMessage) {
    message = absl::StrCat(message.substr(0, kMaxStatusMessage - 40), "... (", message.size(),
                           " bytes in all)");
  }
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), message);
}

// How long a read of the database's generation is trusted by cached Lookups: records other
// processes commit become visible within this time (the daemon's own at once).
constexpr absl::Duration kLookupRecheck = absl::Milliseconds(1);

// Runs one unary handler body: exceptions become INTERNAL, every call is logged (failures
// of the caller's making at debug level, the daemon's own at warning level).
template <typename Fn>
grpc::Status Serve(const char* rpc, grpc::ServerContextBase* context, Fn&& body) {
  const absl::Time start = absl::Now();
  absl::Status status;
  try {
    status = body();
  } catch (const std::exception& e) {
    status = absl::InternalError(absl::StrCat("internal error: ", e.what()));
  }
  bool expected = false;
  switch (status.code()) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
      expected = true;
      break;
    default:
      break;
  }
  // The peer and the message are formatted only when the line is logged (Lookup's hot path).
  const spdlog::level::level_enum level = expected ? spdlog::level::debug : spdlog::level::warn;
  if (spdlog::should_log(level)) {
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    spdlog::log(level, "{} from {}: {} ({:.3f} ms) {}", rpc, context->peer(),
                absl::StatusCodeToString(status.code()), ms, std::string(status.message()));
  }
  return ToGrpc(status);
}

// Serve for a handler whose body computes the response: `make` returns it or the error.
template <typename Response, typename Fn>
grpc::Status ServeInto(const char* rpc, grpc::ServerContextBase* context, Response* response,
                       Fn&& make) {
  return Serve(rpc, context, [&]() -> absl::Status {
    absl::StatusOr<Response> out = make();
    if (!out.ok()) return out.status();
    *response = *std::move(out);
    return absl::OkStatus();
  });
}

// Forwards the tuner's progress reports as messages.
class ProgressForwarder : public search::SearchCallback {
 public:
  explicit ProgressForwarder(const std::function<void(const v1::TuneProgress&)>& progress)
      : progress_(progress) {}
  void OnProgress(const search::SearchProgress& p) override {
    progress_(engine::ProgressMessage(p));
  }

 private:
  const std::function<void(const v1::TuneProgress&)>& progress_;
};

}  // namespace

TunerService::TunerService(storage::TuningDb* db, int max_concurrent_tunes, bool no_calibrate)
    : db_(db),
      lookups_(/*capacity=*/4096, kLookupRecheck),
      jobs_(max_concurrent_tunes),
      no_calibrate_(no_calibrate) {}

TunerService::~TunerService() { Stop(absl::InfiniteDuration()); }

bool TunerService::Stop(absl::Duration grace) {
  stopping_.store(true);
  return jobs_.CancelAll(grace);
}

absl::StatusOr<v1::TuneResult> TunerService::RunTune(
    search::TuneOptions options, const storage::Workload& workload, const v1::TuneRequest& request,
    const engine::RunNumbers& numbers, const v1::HardwareProfile* profile,
    const std::function<bool()>& cancelled,
    const std::function<void(const v1::TuneProgress&)>& progress) {
  options.cancelled = cancelled;
  // Measured where the profile was calibrated: its cluster, else this node.
  search::MpiRunnerOptions mpi;
  mpi.launch = engine::ClusterLaunch(engine::LaunchCluster(v1::Cluster(), profile));
  std::unique_ptr<search::Runner> runner =
      options.top_k == 0 ? search::NewModelOnlyRunner() : search::NewMpiRunner(mpi);
  ProgressForwarder forwarder(progress);
  spdlog::info("tune {} on {} (profile {}): started", workload.fingerprint.substr(0, 12),
               workload.MeshText(), workload.profile);
  std::string store_error;
  absl::StatusOr<v1::TuneResult> result = engine::RunAndStoreTune(
      options, workload, request, *runner, {&forwarder}, db_, &store_error, &numbers);
  lookups_.Invalidate();  // before the caller hears of the record, Lookup sees it
  if (!result.ok()) {
    spdlog::info("tune {}: {}", workload.fingerprint.substr(0, 12), result.status().ToString());
    return result.status();
  }
  v1::TuneResult& out = *result;
  if (!store_error.empty()) {
    spdlog::error("tune {}: the result was not stored: {}", workload.fingerprint, store_error);
  } else if (!out.stored()) {
    spdlog::warn("tune {}: no measured candidate verified; the result is not stored",
                 workload.fingerprint);
  }
  spdlog::info("tune {}: done in {:.2f} s, record {} on {}, predicted {:.4g} s{}",
               workload.fingerprint.substr(0, 12), out.seconds(), out.record().id(),
               out.record().mesh(), out.record().predicted_s(),
               out.record().has_measured_s()
                   ? absl::StrCat(", measured ", out.record().measured_s(), " s")
                   : "");
  return out;
}

absl::StatusOr<std::shared_ptr<TuneJob>> TunerService::JoinTune(const v1::TuneRequest& asked,
                                                                const v1::TuneRequest& request,
                                                                bool* shared) {
  // Read without calibrating: the request's errors come back at once, and the job's key
  // (which does not depend on the machine numbers) is known. The tune's own reading,
  // which may calibrate a profile on first use (seconds under mpirun), is the job's first
  // step, where the caller's deadline and cancellation are watched.
  v1::TuneRequest quick = asked;
  quick.set_no_calibrate(true);
  absl::StatusOr<engine::PreparedTune> prepared = engine::PrepareTune(quick);
  if (!prepared.ok()) return prepared.status();
  const storage::Workload& workload = prepared->workload;
  const std::string key = engine::TuneJobKey(workload.fingerprint, prepared->options, request);
  const std::string description =
      absl::StrCat(request.problem().expr(), " (", request.problem().extents(), ", ",
                   request.problem().dtype().empty() ? "f32" : request.problem().dtype(), ") on ",
                   workload.MeshText(), ", profile ", workload.profile,
                   request.model_only() ? ", model only" : "");
  TuneJobFn run = [this, asked, request, prepared = *std::move(prepared)](
                      const std::function<bool()>& cancelled,
                      const std::function<void(const v1::TuneProgress&)>& progress) mutable {
    try {
      if (!asked.no_calibrate()) {
        absl::StatusOr<engine::PreparedTune> full = engine::PrepareTune(asked);
        if (!full.ok()) return absl::StatusOr<v1::TuneResult>(full.status());
        prepared = *std::move(full);
      }
      const std::string& warning = prepared.warning;
      if (!warning.empty()) spdlog::warn("{}", warning);
      if (cancelled()) {
        return absl::StatusOr<v1::TuneResult>(absl::CancelledError("the tune was cancelled"));
      }
      absl::StatusOr<v1::TuneResult> result =
          RunTune(prepared.options, prepared.workload, request, prepared.numbers,
                  prepared.profile ? &*prepared.profile : nullptr, cancelled, progress);
      if (result.ok() && !warning.empty()) result->add_warnings(warning);
      return result;
    } catch (const std::exception& e) {
      return absl::StatusOr<v1::TuneResult>(
          absl::InternalError(absl::StrCat("internal error: ", e.what())));
    }
  };
  return jobs_.Join(key, std::move(run), shared, description);
}

grpc::Status TunerService::Tune(grpc::ServerContext* context, const v1::TuneRequest* request,
                                grpc::ServerWriter<v1::TuneEvent>* writer) {
  std::shared_ptr<TuneJob> job;
  bool shared = false;
  grpc::Status setup = Serve("Tune request", context, [&]() -> absl::Status {
    v1::TuneRequest asked = *request;
    if (no_calibrate_) asked.set_no_calibrate(true);
    absl::StatusOr<std::shared_ptr<TuneJob>> joined = JoinTune(asked, *request, &shared);
    if (!joined.ok()) return joined.status();
    job = *std::move(joined);
    return absl::OkStatus();
  });
  if (!setup.ok()) return setup;
  spdlog::debug("Tune from {}: {} job", context->peer(), shared ? "joined a running" : "started a");

  // Stream the job's progress, then its end. Leaving early lets the job go when no caller is left.
  bool finished = false;
  struct Leaver {
    TuneJob* job;
    bool* finished;
    ~Leaver() {
      if (!*finished) job->Leave();
    }
  } leaver{job.get(), &finished};
  int64_t seen = 0;
  while (true) {
    const bool late = absl::Now() >= absl::FromChrono(context->deadline());
    if (late || context->IsCancelled()) {
      spdlog::debug("Tune from {}: {}", context->peer(),
                    late ? "deadline exceeded" : "cancelled by the client");
      return late ? grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                 "the deadline passed before the tune ended")
                  : grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the tune");
    }
    TuneJob::Update update = job->Wait(&seen, kClientPoll);
    if (update.progress.has_value()) {
      v1::TuneEvent event;
      *event.mutable_progress() = *std::move(update.progress);
      if (!writer->Write(event))
        return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
    if (!update.result.has_value()) continue;
    finished = true;
    job->Leave();
    const absl::StatusOr<v1::TuneResult>& result = *update.result;
    spdlog::debug("Tune from {}: the job ended: {}", context->peer(),
                  result.ok() ? std::string("OK") : result.status().ToString());
    if (!result.ok()) {
      if (stopping_.load() && result.status().code() == absl::StatusCode::kCancelled) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "the daemon is shutting down; the tune was cancelled");
      }
      return ToGrpc(result.status());
    }
    v1::TuneEvent event;
    *event.mutable_result() = *result;
    writer->Write(event);
    return grpc::Status::OK;
  }
}

grpc::ServerUnaryReactor* TunerService::Lookup(grpc::CallbackServerContext* context,
                                               const grpc::ByteBuffer* request,
                                               grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(Serve("Lookup", context, [&]() -> absl::Status {
    v1::LookupRequest parsed;
    grpc::ByteBuffer bytes(*request);  // Deserialize consumes its buffer
    if (!grpc::SerializationTraits<v1::LookupRequest>::Deserialize(&bytes, &parsed).ok()) {
      return absl::InvalidArgumentError(
          "the request is not a meshtune.v1.LookupRequest (its bytes do not parse)");
    }
    absl::StatusOr<v1::LookupResponse> out = lookups_.Lookup(*db_, parsed);
    if (!out.ok()) return out.status();
    bool own_buffer = false;
    const grpc::Status serialized =
        grpc::SerializationTraits<v1::LookupResponse>::Serialize(*out, response, &own_buffer);
    if (!serialized.ok()) {
      return absl::InternalError(
          absl::StrCat("cannot serialize the response: ", serialized.error_message()));
    }
    return absl::OkStatus();
  }));
  return reactor;
}

grpc::Status TunerService::Explain(grpc::ServerContext* context, const v1::ExplainRequest* request,
                                   v1::ExplainResponse* response) {
  return ServeInto("Explain", context, response, [&] { return engine::Explain(*request); });
}

grpc::Status TunerService::Codegen(grpc::ServerContext* context, const v1::CodegenRequest* request,
                                   v1::CodegenResponse* response) {
  return ServeInto("Codegen", context, response, [&]() -> absl::StatusOr<v1::CodegenResponse> {
    absl::StatusOr<v1::CodegenRequest> resolved = engine::ResolveCodegenRequest(*db_, *request);
    if (!resolved.ok()) return resolved.status();
    return engine::Codegen(*resolved);
  });
}

grpc::Status TunerService::ListRecords(grpc::ServerContext* context,
                                       const v1::ListRecordsRequest* request,
                                       v1::ListRecordsResponse* response) {
  return ServeInto("ListRecords", context, response,
                   [&] { return engine::ListRecords(*db_, *request); });
}

grpc::Status TunerService::GetRecord(grpc::ServerContext* context,
                                     const v1::GetRecordRequest* request, v1::Record* response) {
  return ServeInto("GetRecord", context, response,
                   [&] { return engine::GetRecord(*db_, *request); });
}

}  // namespace meshtune::daemon
