// What the cost model reports of one Program (cost/cost_model.h): its critical path and
// each Transfer and Reduce statement's share.
#ifndef MESHTUNE_COST_COST_REPORT_H_
#define MESHTUNE_COST_COST_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/program.h"

namespace meshtune::cost {

// What one Transfer or Reduce statement costs the critical rank over the whole program.
struct TransferCost {
  std::string tensor, loop;
  codegen::CommPattern pattern;
  double seconds = 0;    // on the critical rank
  int64_t messages = 0;  // received by the critical rank over the program
  int64_t bytes = 0;     // received by the critical rank over the program
  int prefetch = 0;      // the statement's prefetch (1: overlapped, codegen/program.h)
};

// The model's estimate of one Program.
struct CostReport {
  double seconds = 0;                // critical path: max over ranks of the rank's total
  int critical_rank = 0;             // row-major rank id (last axis fastest); lowest on ties
  std::vector<double> rank_seconds;  // per rank, compute plus communication
  double compute_seconds = 0;        // the critical rank's compute time
  double comm_seconds = 0;           // the critical rank's communication time
  // What prefetching hides on the critical rank: seconds = compute + comm - overlap.
  double overlap_seconds = 0;
  // comm_seconds by class of transfer (TermScales), on the critical rank: point-to-point
  // fetches and ring steps, broadcasts and all-gathers, reductions with their adds.
  double point_to_point_seconds = 0;
  double collective_seconds = 0;
  double reduction_seconds = 0;
  std::vector<TransferCost> transfers;  // one per Transfer/Reduce statement, in program order
  int64_t comm_words_per_rank = 0;      // max over ranks of elements received
};

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_COST_REPORT_H_
