#include "engine/requests.h"

#include <map>

#include "absl/strings/str_cat.h"
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

absl::StatusOr<ir::Problem> ProblemOf(const v1::Problem& problem) {
  MT_ASSIGN_OR_RETURN(ir::Problem p,
                      ir::ParseProblem(problem.expr(), problem.extents(), problem.dtype()));
  MT_RETURN_IF_ERROR(ir::SetLayouts(LayoutFlagsOf(problem), &p));
  p.result_on_layer = problem.result_on_layer();
  return p;
}

absl::StatusOr<ir::Mesh> MeshAxesOf(const v1::Mesh& mesh) { return ir::ParseMesh(mesh.axes()); }

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
