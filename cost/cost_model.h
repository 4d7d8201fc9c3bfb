// The alpha-beta-gamma cost model of a lowered Program, evaluated on every rank.
//
// EstimateCost walks the Program tree once, evaluating each statement instance for all
// ranks at once (loop variables bound, mesh coordinates per rank), and adds up per rank:
//
//   w = bytes of one instance of a transfer (elements of its box * dtype_bytes),
//   g = number of ranks in its group (product of the sizes of pattern.axes).
//
//   Local            0
//   Broadcast        alpha_coll*log2(g) + beta_coll*w on every rank of the group
//   AllGather        (g-1) * (alpha_coll + beta_coll*w/g)                    (a ring)
//   Shift            at the first iteration of its time loop (the loop variable is 0, or
//                    unbound) a point-to-point fetch, costed as SendRecv; later iterations
//                    one ring step alpha + beta*w (0 when the neighbour is the rank itself)
//   SendRecv         max(receives, sends) * (alpha + beta*w), where a rank receives once
//                    when its source is another rank and sends once to every other rank
//                    whose source it is
//   Reduce           alpha_coll*log2(g) + beta_coll*w
//   AllReduce        2 * (alpha_coll*log2(g) + beta_coll*w)            (reduce, broadcast)
//   ReduceScatter    g*alpha_coll*log2(g) + beta_coll*w   (g reduces of w/g, as the runtime
//                    does when the pieces are out of group order; in order it makes one
//                    MPI_Reduce_scatter, which this over-charges by (g-1) tree latencies)
//   SendRecv/Local reductions: 0 (a local add)
//   Compute          flops * gamma per call, flops = (number of operands) * (tile points)
//                    for a product (a multiply-add, 2 per point, for two operands) and one
//                    add per tile point for an element-wise sum
//
// Collectives over a group of one rank cost nothing. Words received by a rank (elements of
// the dtype): a broadcast's box except on its root; (g-1)/g of an all-gather's box; a
// point-to-point fetch's box when the source is another rank; a ring step's box; a
// reduction's box once per instance (g > 1). Messages count the instances in which a rank
// receives data (an all-gather counts its g-1 ring steps). Term scales fitted to measured
// runs (CostParams::scales) multiply each class's charges, and each message received costs
// TermScales::message more (the wait for a late sender).
//
// Prefetch (overlap). A loop over v (E iterations) that drives prefetched transfers or
// reductions (codegen::PrefetchedIn) runs step i's kernels while step i+1's prefetched
// transfers and step i-1's prefetched reductions are in flight. Per rank, with K_i the
// compute of step i (less what loops inside it already overlap), In_i and Out_i its
// prefetched transfers and reductions and S_i its other communication (which stays
// serial):
//
//   In_0 + sum_i (S_i + max(K_i, In_{i+1} + Out_{i-1})) + Out_{E-1}   (In_E = Out_-1 = 0)
//
// — for inputs alone, per iteration the max of compute and the prefetched communication
// plus the first transfer and the last kernel; for the output alone, the first kernel and
// the last reduction. That is with CostParams::overlap = 1; in general each step's
// max(K, C) is K + C - overlap * min(K, C), so overlap = 0 (the cores that run the kernels
// also copy the data) makes a prefetched loop cost what the plain one does. The report still
// charges every transfer and kernel in full (the breakdown); what overlap hides is
// CostReport::overlap_seconds, taken off the total.
//
// Loops are not always iterated: a For whose body's cost does not depend on its variable
// (no Broadcast root, point-to-point source or Shift time loop refers to it) is costed once
// and multiplied by its extent; one whose only dependence is the first iteration of Shifts
// timed by it (and starting at 0) is costed at its first and second iterations, the second
// counted extent-1 times; other loops are iterated. Ranks alike are costed once (see
// EstimateCost). Thread-safe (no shared state).
#ifndef MESHTUNE_COST_COST_MODEL_H_
#define MESHTUNE_COST_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "cost/cost_axes.h"
#include "cost/cost_params.h"
#include "cost/cost_report.h"

namespace meshtune::cost {

// The alpha-beta-gamma estimate of `p` under `params` (see the file comment). With
// `rank_classes` (the default) ranks that the program moves data among alike are costed
// once: along a mesh axis that no broadcast root, point-to-point or shift source, or loop
// start mentions (other than as the reader's own coordinate along it), every rank costs
// what its neighbours do, so only coordinate 0 is walked; and in a loop that is iterated,
// the statements whose cost does not change with its variable are costed once for all its
// iterations. The report is the same as with every rank and every statement walked
// (false, the reference; search/closed_form_test.cc checks this over whole spaces).
CostReport EstimateCost(const codegen::Program& p, const CostParams& params,
                        bool rank_classes = true);

// How many rank-steps EstimateCost(p, params, rank_classes) evaluates: for each Transfer or
// Reduce statement, the times the walk visits it (loops iterated as the file comment says)
// times the ranks it is costed on. The walk's time is proportional to it (tens of
// nanoseconds a rank-step). Saturates at INT64_MAX.
int64_t EstimateCostWork(const codegen::Program& p, bool rank_classes = true);

// The most rank-steps the search spends costing one schedule (about a second): beyond it a
// schedule is not costed (search/evaluator.h).
inline constexpr int64_t kMaxCostWork = int64_t{1} << 25;

// EstimateCost(p, params) when its walk takes at most `max_work` rank-steps
// (EstimateCostWork); ResourceExhausted saying how many it would take otherwise.
absl::StatusOr<CostReport> EstimateCostWithin(const codegen::Program& p, const CostParams& params,
                                              int64_t max_work);

// A lower bound on EstimateCost(p, params).seconds that costs at most `max_ranks` rank
// classes (evenly spaced over them; all when there are no more) and charges each
// point-to-point fetch (SendRecv, a Shift's first step) only its receive — max(receives,
// sends) is at least that, the critical rank costs at least what any costed rank does, and
// overlap hides at most what it hides with the full charges. Its walk takes the rank-steps
// of EstimateCostWork with `max_ranks` classes, independent of the mesh's size beyond them;
// ResourceExhausted when that is more than `max_work`. The search prunes with it: a
// schedule whose bound exceeds what could still be chosen need not be costed in full.
absl::StatusOr<double> EstimateCostLowerBound(const codegen::Program& p, const CostParams& params,
                                              int64_t max_ranks, int64_t max_work);

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_COST_MODEL_H_
