#include "engine/requests.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"

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

v1::ExplainRequest StatementRequestOf(const v1::ExplainRequest& request,
                                      const ir::StatementProgram& program, int s,
                                      const ir::Trace& trace) {
  v1::ExplainRequest one = request;
  v1::Problem& p = *one.mutable_problem();
  p.set_expr(program.statements[s].ToString());
  p.set_extents(program.statements[s].ExtentsString());
  one.mutable_trace()->set_text(trace.ToString());
  return one;
}

absl::StatusOr<ir::Problem> ProblemOf(const v1::Problem& problem) {
  if (ir::HasSeveralStatements(problem.expr())) {
    return absl::InvalidArgumentError(
        "this takes one statement (programs of several statements are taken by tune, run, "
        "explain, batch, lookup, records, codegen, report and the plan API)");
  }
  MT_ASSIGN_OR_RETURN(ir::Problem p,
                      ir::ParseProblem(problem.expr(), problem.extents(), problem.dtype()));
  MT_RETURN_IF_ERROR(ir::SetLayouts(LayoutFlagsOf(problem), &p));
  p.result_on_layer = problem.result_on_layer();
  return p;
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

absl::StatusOr<ir::Computation> BaseComputation(const v1::Problem& problem, const v1::Mesh& mesh) {
  MT_ASSIGN_OR_RETURN(ir::Problem p, ProblemOf(problem));
  MT_ASSIGN_OR_RETURN(ir::Mesh m, MeshAxesOf(mesh));
  MT_ASSIGN_OR_RETURN(m.mem_per_rank_bytes, MemPerRankOf(mesh));
  return ir::Computation::Create(p, m);
}

absl::StatusOr<ir::Trace> ParseTraceMessage(const v1::Trace& trace) {
  return ir::ParseTrace(trace.text());
}

}  // namespace meshtune::engine
