// Turning the wire messages of proto/meshtune.proto into ir/ values.
//
// Shared by every command and RPC: each validates its input here and gets an
// InvalidArgument status naming the offending token, index or extent.
#ifndef MESHTUNE_ENGINE_REQUESTS_H_
#define MESHTUNE_ENGINE_REQUESTS_H_

#include "absl/status/statusor.h"
#include "ir/computation.h"
#include "ir/trace.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The problem's base Computation on the mesh (memory budget included).
absl::StatusOr<ir::Computation> BaseComputation(const v1::Problem& problem, const v1::Mesh& mesh);

// The parsed trace.
absl::StatusOr<ir::Trace> ParseTraceMessage(const v1::Trace& trace);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REQUESTS_H_
