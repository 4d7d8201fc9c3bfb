// Backend: where the CLI's commands are answered — in this process, against a tuning
// database file (local_backend.h), or by a meshtuned daemon over gRPC (remote_backend.h).
// Both speak the messages of proto/meshtune.proto and return the same answers and the same
// errors for the same requests (InvalidArgument naming the offending token for bad input,
// NotFound for a missing record), so a command prints the same output either way.
#ifndef MESHTUNE_ENGINE_BACKEND_H_
#define MESHTUNE_ENGINE_BACKEND_H_

#include <functional>

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// Receives a tune's progress reports, in order.
using TuneProgressFn = std::function<void(const v1::TuneProgress&)>;

class Backend {
 public:
  virtual ~Backend() = default;

  // Tunes `request` (progress to `progress`, which may be empty) and returns the result
  // with its winner stored in the tuning database when it verified or nothing was
  // measured (`stored` says whether it was). Bad input is InvalidArgument (NotFound for a
  // named hardware profile that does not exist); FailedPrecondition when no schedule is legal.
  virtual absl::StatusOr<v1::TuneResult> Tune(const v1::TuneRequest& request,
                                              const TuneProgressFn& progress) = 0;

  // The Tuner service's calls, with its contracts (proto/meshtune.proto, records.h, explain.h).
  virtual absl::StatusOr<v1::LookupResponse> Lookup(const v1::LookupRequest& request) = 0;
  virtual absl::StatusOr<v1::ListRecordsResponse> ListRecords(
      const v1::ListRecordsRequest& request) = 0;
  virtual absl::StatusOr<v1::Record> GetRecord(const v1::GetRecordRequest& request) = 0;
  virtual absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request) = 0;
  virtual absl::StatusOr<v1::CodegenResponse> Codegen(const v1::CodegenRequest& request) = 0;
};

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_BACKEND_H_
