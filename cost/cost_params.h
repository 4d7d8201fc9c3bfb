// CostParams: the machine numbers of the alpha-beta-gamma model (cost/cost_model.h).
//
// alpha is the latency of one message in seconds, beta the inverse bandwidth in seconds
// per byte, gamma the time of one floating-point operation in seconds (so gamma = 0 makes
// compute free). Point-to-point messages and ring shifts use (alpha, beta). Collectives
// use `collectives`, lines fitted to calls of each collective itself, where the profile
// has them; otherwise (alpha_coll, beta_coll), the broadcast's fit, carried to the other
// collectives by their algorithms' forms. A product of two operands (a GEMM) takes the time
// `gemm` gives for its tile shape where the profile has GEMM rates; other kernels, and
// every kernel without them, gamma per flop. copy and add are the seconds per byte of the
// memory passes the runtime makes around transfers: packing a box that is not contiguous
// in its shard (or unpacking one), and adding reduced partial sums into a shard.
// Measured by `meshtune calibrate` and stored in a hardware profile
// (storage/hardware_profile.h). overlap is the fraction of the shorter of a kernel and a
// transfer in flight with it that runs hidden (1: the longer of the two alone, as on a
// machine with a spare core or a NIC that moves data by itself; 0: their sum, as when the
// ranks' cores also do the copies); calibration measures it. `scales` multiply each class
// of term as fitted to measured schedules (TermScales). Plain value.
#ifndef MESHTUNE_COST_COST_PARAMS_H_
#define MESHTUNE_COST_COST_PARAMS_H_

#include <algorithm>
#include <cstdint>

#include "cost/collective_costs.h"
#include "cost/gemm_table.h"

namespace meshtune::cost {

// What each class of term costs in a running schedule against what calibration measured
// in isolation, fitted to measured runs (cost/term_fit.h): the kernels, point-to-point
// transfers and ring steps, collectives that move inputs (broadcast, all-gather) and
// reductions (with their adds). Each multiplies its class's seconds, copies included; 1
// leaves the calibrated numbers as they are. `message` adds seconds to every message a rank
// receives (a ring step, a fetch, a reduction's partial sums), on top of the calibrated
// latency: in a running schedule the sender is often late (a kernel still running, its core
// shared with another rank), and an isolated ping-pong never shows that wait; 0: none.
struct TermScales {
  double compute = 1;
  double point_to_point = 1;
  double collective = 1;
  double reduction = 1;
  double message = 0;  // s per message received
};

struct CostParams {
  double alpha = 0;             // s per point-to-point message or shift step
  double beta = 0;              // s per byte, point-to-point
  double alpha_coll = 0;        // s per tree level of a broadcast / reduce / all-gather
  double beta_coll = 0;         // s per byte, collectives
  double gamma = 0;             // s per flop of the local kernel
  double overlap = 0;           // in [0, 1]: what prefetch hides of min(kernel, transfer)
  CollectiveCosts collectives;  // per collective and group size; empty: alpha_coll, beta_coll
  GemmTable gemm;               // GEMM speed by tile shape; empty: gamma
  double copy = 0;              // s per byte packed or unpacked locally
  double add = 0;               // s per byte of partial sums added into a shard
  double gather = 0;            // s per byte copied with a stride (0: at `copy`)
  TermScales scales;            // fitted to measured runs; 1 each: as calibrated
  // A node-and-core hierarchy: a run's ranks fill nodes of `node_ranks` ranks in
  // row-major order (a mesh with an axis named `node`, e.g. node=4,core=8, says it itself:
  // the ranks of the axes after it); a message between ranks of two nodes costs alpha_node
  // + beta_node * bytes instead, and a collective over a group that spans nodes at least
  // its algorithm's form in those numbers (cost/collective_costs.h). 0 (and no `node`
  // axis): one level, every pair of ranks alike.
  int64_t node_ranks = 0;
  double alpha_node = 0, beta_node = 0;
  // How gamma was measured: ranks_per_node ranks on a node of `cores` cores (0: unknown).
  int cores = 0;
  int ranks_per_node = 0;
};

// `p` for a run on `ranks` ranks: the work of the ranks' own cores scaled by how much the
// run's ranks share a node's cores, load(n) = max(1, n / cores) with n the ranks on a node
// (min(ranks, ranks_per_node): ranks fill a node before the next). gamma, copy and add were
// measured with every rank of the calibration busy, so they scale by the run's load
// against the calibration's: a profile taken with 4 ranks on 2 cores halves gamma for a
// 2-rank mesh. The GEMM rates were measured with a core to each rank, so they divide by the
// run's load: 4 ranks on 2 cores get half the rate each. `p` itself when cores or
// ranks_per_node is unknown.
inline CostParams ForRanks(const CostParams& p, int64_t ranks) {
  if (p.cores <= 0 || p.ranks_per_node <= 0 || ranks <= 0) return p;
  auto load = [&p](double n) { return std::max(1.0, n / p.cores); };
  const double run = load(static_cast<double>(std::min<int64_t>(ranks, p.ranks_per_node)));
  const double factor = run / load(p.ranks_per_node);
  CostParams out = p;
  out.gamma = p.gamma * factor;
  out.copy = p.copy * factor;
  out.add = p.add * factor;
  if (run != 1) out.gemm = p.gemm.Scaled(1 / run);
  return out;
}

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_COST_PARAMS_H_
