#include "engine/requests.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"

namespace meshtune::engine {

absl::Status SetLayoutFlags(const std::vector<std::string>& flags, v1::Problem* problem) {
  problem->clear_layouts();
  for (const std::string& flag : flags) {
    std::string tensor, spec;
    MT_RETURN_IF_ERROR(ir::SplitLayoutFlag(flag, &tensor, &spec));
    if (!problem->mutable_layouts()->insert({tensor, spec}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--layout gives tensor ", base::Excerpt(tensor), " twice"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> LayoutFlagsOf(const v1::Problem& problem) {
  const std::map<std::string, std::string> sorted(problem.layouts().begin(),
                                                  problem.layouts().end());
  std::vector<std::string> out;
  for (const auto& [tensor, spec] : sorted) out.push_back(tensor + "=" + spec);
  return out;
}

bool HasMeshAxes(const v1::Mesh& mesh) { return !mesh.axes().empty() || mesh.dims_size() > 0; }

std::string MeshText(const v1::Mesh& mesh) {
  if (!mesh.axes().empty()) return mesh.axes();
  std::vector<std::string> parts;
  for (const v1::MeshAxis& d : mesh.dims()) parts.push_back(absl::StrCat(d.name(), "=", d.size()));
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<ir::Mesh> MeshAxesOf(const v1::Mesh& mesh) {
  if (mesh.dims_size() == 0) return ir::ParseMesh(mesh.axes());
  if (!mesh.axes().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "give the mesh's axes (\"", base::Excerpt(mesh.axes()), "\") or its dims, not both"));
  }
  return MeshOfDims(mesh.dims());
}

absl::StatusOr<ir::Mesh> MeshOfDims(const google::protobuf::RepeatedPtrField<v1::MeshAxis>& dims) {
  std::vector<ir::MeshAxis> axes;
  for (const v1::MeshAxis& d : dims) axes.push_back({d.name(), d.size()});
  return ir::MeshOf(axes);
}

void SetMeshDims(const ir::Mesh& mesh, google::protobuf::RepeatedPtrField<v1::MeshAxis>* dims) {
  dims->Clear();
  for (const ir::MeshAxis& a : mesh.axes) {
    v1::MeshAxis* d = dims->Add();
    d->set_name(a.name);
    d->set_size(static_cast<int32_t>(a.size));  // at most ir::kMaxRanks
  }
}

v1::Mesh RecordMesh(const v1::Record& record) {
  v1::Mesh out;
  if (record.mesh_dims_size() > 0) {
    *out.mutable_dims() = record.mesh_dims();
  } else {
    out.set_axes(record.mesh());
  }
  return out;
}

v1::Mesh MeshMessage(const ir::Mesh& mesh) {
  v1::Mesh out;
  out.set_axes(mesh.ToString());
  SetMeshDims(mesh, out.mutable_dims());
  return out;
}

absl::StatusOr<std::optional<int64_t>> MemPerRankOf(const v1::Mesh& mesh) {
  if (mesh.mem_per_rank().empty()) return std::nullopt;
  MT_ASSIGN_OR_RETURN(const int64_t bytes, ir::ParseByteSize(mesh.mem_per_rank()));
  return bytes;
}

absl::StatusOr<ir::Trace> ParseTraceMessage(const v1::Trace& trace) {
  return ir::ParseTrace(trace.text());
}

}  // namespace meshtune::engine
