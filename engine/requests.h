// Turning the wire messages of proto/meshtune.proto into ir/ values.
//
// Shared by every command and RPC: each validates its input here and gets an
// InvalidArgument status naming the offending token, index or extent.
#ifndef MESHTUNE_ENGINE_REQUESTS_H_
#define MESHTUNE_ENGINE_REQUESTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/mesh.h"
#include "ir/trace.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// `--layout` flags "TENSOR=SPEC" into `problem`'s layouts. InvalidArgument for a flag
// without '=' or a tensor given twice; tensors and specs are checked by ProblemOf.
absl::Status SetLayoutFlags(const std::vector<std::string>& flags, v1::Problem* problem);

// `problem`'s layouts as `--layout` flags, by tensor name.
std::vector<std::string> LayoutFlagsOf(const v1::Problem& problem);

// Whether `mesh` gives axes (as text or as dims).
bool HasMeshAxes(const v1::Mesh& mesh);

// `mesh`'s axes as a user reads them: its text, else its dims written "x=2,y=2" (for
// messages; never parsed).
std::string MeshText(const v1::Mesh& mesh);

// The mesh's axes, from `axes` ("x=2,y=2": ParseMesh's errors) or from `dims` (ir::MeshOf's),
// without its memory budget; InvalidArgument when it gives both.
absl::StatusOr<ir::Mesh> MeshAxesOf(const v1::Mesh& mesh);

// The mesh of `dims` (ir::MeshOf's errors).
absl::StatusOr<ir::Mesh> MeshOfDims(const google::protobuf::RepeatedPtrField<v1::MeshAxis>& dims);

// Writes `mesh`'s axes as values into `dims` (replacing what it held).
void SetMeshDims(const ir::Mesh& mesh, google::protobuf::RepeatedPtrField<v1::MeshAxis>* dims);

// The mesh `record`'s trace is for, as a request's mesh: its mesh_dims, or its mesh text in a
// record from a wisdom file exported before mesh_dims existed.
v1::Mesh RecordMesh(const v1::Record& record);

// `mesh` as a message: its axes both as text and as dims (no memory budget).
v1::Mesh MeshMessage(const ir::Mesh& mesh);

// The mesh's memory budget per rank in bytes, none when not given: ParseByteSize's errors.
absl::StatusOr<std::optional<int64_t>> MemPerRankOf(const v1::Mesh& mesh);

// The parsed trace.
absl::StatusOr<ir::Trace> ParseTraceMessage(const v1::Trace& trace);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REQUESTS_H_
