#include "cost/cost_model.h"

#include "absl/strings/str_cat.h"
#include "cost/cost_walker.h"

namespace meshtune::cost {

using codegen::Program;
using internal::CostWalker;

int64_t EstimateCostWork(const Program& p, bool rank_classes) {
  const CostParams params;
  CostWalker walker(p, params, rank_classes);
  return p.body ? walker.Work(p.body, 1) : 0;
}

absl::StatusOr<CostReport> EstimateCostWithin(const Program& p, const CostParams& params,
                                              int64_t max_work) {
  CostWalker walker(p, params, /*classes=*/true);
  if (p.body) {
    const int64_t work = walker.Work(p.body, 1);
    if (work > max_work) {
      return absl::ResourceExhaustedError(
          absl::StrCat("costing it would take ", work, " rank-steps (more than ", max_work,
                       "): sources that change with every rank and step of long loops"));
    }
    walker.Walk(p.body, 1);
  }
  return walker.Report();
}

absl::StatusOr<double> EstimateCostLowerBound(const Program& p, const CostParams& params,
                                              int64_t max_ranks, int64_t max_work) {
  CostWalker walker(p, params, /*classes=*/true, max_ranks);
  if (p.body) {
    const int64_t work = walker.Work(p.body, 1);
    if (work > max_work) {
      return absl::ResourceExhaustedError(
          absl::StrCat("bounding it would take ", work, " rank-steps (more than ", max_work, ")"));
    }
    walker.Walk(p.body, 1);
  }
  return walker.LowerBound();
}

CostReport EstimateCost(const Program& p, const CostParams& params, bool rank_classes) {
  CostWalker walker(p, params, rank_classes);
  if (p.body) walker.Walk(p.body, 1);
  return walker.Report();
}

}  // namespace meshtune::cost
