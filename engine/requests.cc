#include "engine/requests.h"

#include "base/status_macros.h"
#include "ir/mesh.h"
#include "ir/problem.h"

namespace meshtune::engine {

absl::StatusOr<ir::Computation> BaseComputation(const v1::Problem& problem, const v1::Mesh& mesh) {
  MT_ASSIGN_OR_RETURN(ir::Problem p,
                      ir::ParseProblem(problem.expr(), problem.extents(), problem.dtype()));
  MT_ASSIGN_OR_RETURN(ir::Mesh m, ir::ParseMesh(mesh.axes()));
  if (!mesh.mem_per_rank().empty()) {
    MT_ASSIGN_OR_RETURN(m.mem_per_rank_bytes, ir::ParseByteSize(mesh.mem_per_rank()));
  }
  return ir::Computation::Create(p, m);
}

absl::StatusOr<ir::Trace> ParseTraceMessage(const v1::Trace& trace) {
  return ir::ParseTrace(trace.text());
}

}  // namespace meshtune::engine
