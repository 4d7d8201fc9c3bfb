#include "cli/remote_backend.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/excerpt.h"
#include "grpcpp/grpcpp.h"
#include "proto/meshtune.grpc.pb.h"

namespace meshtune::cli {

namespace {

class RemoteBackend final : public engine::Backend {
 public:
  RemoteBackend(const std::string& address, std::function<void(const std::string&)> warn)
      : address_(address),
        warn_(std::move(warn)),
        stub_(
            v1::Tuner::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

  absl::StatusOr<v1::TuneResult> Tune(const v1::TuneRequest& request,
                                      const engine::TuneProgressFn& progress) override {
    grpc::ClientContext context;
    const absl::Duration budget = absl::Seconds(request.has_budget_s() ? request.budget_s() : 600);
    context.set_deadline(absl::ToChronoTime(absl::Now() + budget + kTuneDeadlineMargin));
    std::unique_ptr<grpc::ClientReader<v1::TuneEvent>> reader = stub_->Tune(&context, request);
    std::optional<v1::TuneResult> result;
    v1::TuneEvent event;
    while (reader->Read(&event)) {
      if (event.has_progress() && progress) progress(event.progress());
      if (event.has_result()) result = event.result();
    }
    const grpc::Status status = reader->Finish();
    if (!status.ok()) return FromGrpc(status);
    if (!result.has_value()) {
      return absl::InternalError(absl::StrCat("meshtuned at ", base::Excerpt(address_),
                                              " ended the tune without a result"));
    }
    for (const std::string& w : result->warnings()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (warn_ && warned_.insert(w).second) warn_(w);
    }
    return *std::move(result);
  }

  absl::StatusOr<v1::LookupResponse> Lookup(const v1::LookupRequest& request) override {
    return Unary<v1::LookupResponse>(request, &v1::Tuner::Stub::Lookup);
  }
  absl::StatusOr<v1::ListRecordsResponse> ListRecords(
      const v1::ListRecordsRequest& request) override {
    return Unary<v1::ListRecordsResponse>(request, &v1::Tuner::Stub::ListRecords);
  }
  absl::StatusOr<v1::Record> GetRecord(const v1::GetRecordRequest& request) override {
    return Unary<v1::Record>(request, &v1::Tuner::Stub::GetRecord);
  }
  absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request) override {
    return Unary<v1::ExplainResponse>(request, &v1::Tuner::Stub::Explain);
  }
  absl::StatusOr<v1::CodegenResponse> Codegen(const v1::CodegenRequest& request) override {
    return Unary<v1::CodegenResponse>(request, &v1::Tuner::Stub::Codegen);
  }

 private:
  // One unary call with kUnaryDeadline.
  template <typename Response, typename Request, typename Method>
  absl::StatusOr<Response> Unary(const Request& request, Method method) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kUnaryDeadline));
    Response response;
    const grpc::Status status = ((*stub_).*method)(&context, request, &response);
    if (!status.ok()) return FromGrpc(status);
    return response;
  }

  absl::Status FromGrpc(const grpc::Status& s) const {
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      return absl::UnavailableError(absl::StrCat("cannot reach meshtuned at ",
                                                 base::Excerpt(address_), ": ", s.error_message()));
    }
    if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::DeadlineExceededError(
          absl::StrCat("meshtuned at ", base::Excerpt(address_),
                       " did not answer in time: ", s.error_message()));
    }
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }

  const std::string address_;
  const std::function<void(const std::string&)> warn_;
  std::mutex mu_;
  std::set<std::string> warned_;  // each warning once (a batch would repeat it)
  std::unique_ptr<v1::Tuner::Stub> stub_;
};

}  // namespace

std::unique_ptr<engine::Backend> NewRemoteBackend(const std::string& address,
                                                  std::function<void(const std::string&)> warn) {
  return std::make_unique<RemoteBackend>(address, std::move(warn));
}

}  // namespace meshtune::cli
