// The Backend of a meshtuned daemon: each call is the Tuner service's RPC through a gRPC
// client stub. grpc::Status becomes absl::Status with the same code and message (the
// daemon's messages are the engine's), except that a daemon that cannot be reached —
// UNAVAILABLE — is Unavailable "cannot reach meshtuned at ADDRESS: <gRPC's message>".
#ifndef MESHTUNE_CLI_REMOTE_BACKEND_H_
#define MESHTUNE_CLI_REMOTE_BACKEND_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "engine/backend.h"

namespace meshtune::cli {

// Unary calls wait at most this long for their answer.
inline constexpr absl::Duration kUnaryDeadline = absl::Seconds(30);
// A Tune call waits for its budget (request.budget_s, 600 s when unset) plus this margin
// (for measurements, which end at their own timeouts).
inline constexpr absl::Duration kTuneDeadlineMargin = absl::Seconds(600);

// A Backend that calls the daemon at `address` ("HOST:PORT"; insecure credentials, as the
// daemon listens on loopback). The channel connects at the first call. A tune result's
// warnings go to `warn` (when set), each text once, as the local backend's do. Thread-safe.
std::unique_ptr<engine::Backend> NewRemoteBackend(
    const std::string& address, std::function<void(const std::string&)> warn = nullptr);

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_REMOTE_BACKEND_H_
