// CostParams: the machine numbers of the alpha-beta-gamma model (search/cost_model.h).
//
// alpha is the latency of one message in seconds, beta the inverse bandwidth in seconds
// per byte, gamma the time of one floating-point operation in seconds (so gamma = 0 makes
// compute free). Point-to-point messages and ring shifts use (alpha, beta); broadcasts,
// all-gathers and reductions use (alpha_coll, beta_coll), the tree collectives' own fit.
// Measured by `meshtune calibrate` and stored in a hardware profile
// (storage/hardware_profile.h). overlap is the fraction of the shorter of a kernel and a
// transfer in flight with it that runs hidden (1: the longer of the two alone, as on a
// machine with a spare core or a NIC that moves data by itself; 0: their sum, as when the
// ranks' cores also do the copies); calibration measures it. Plain value.
#ifndef MESHTUNE_SEARCH_COST_PARAMS_H_
#define MESHTUNE_SEARCH_COST_PARAMS_H_

namespace meshtune::search {

struct CostParams {
  double alpha = 0;       // s per point-to-point message or shift step
  double beta = 0;        // s per byte, point-to-point
  double alpha_coll = 0;  // s per tree level of a broadcast / reduce / all-gather
  double beta_coll = 0;   // s per byte, collectives
  double gamma = 0;       // s per flop of the local kernel
  double overlap = 0;     // in [0, 1]: what prefetch hides of min(kernel, transfer)
};

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_COST_PARAMS_H_
