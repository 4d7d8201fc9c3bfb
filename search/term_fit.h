// Fitting TermScales to measured schedules: how much each class of the cost model's terms
// costs in a running schedule against what calibration measured in isolation (a transfer
// after kernels that swept the caches, beside ranks that arrive late, ...).
#ifndef MESHTUNE_SEARCH_TERM_FIT_H_
#define MESHTUNE_SEARCH_TERM_FIT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "search/cost_params.h"

namespace meshtune::search {

// One measured schedule: its critical rank's terms as the model costs them with every
// scale 1 (CostReport's compute, point-to-point, collective and reduction seconds and the
// overlap prefetch hides), and its measured seconds.
struct TermSample {
  double compute = 0, point_to_point = 0, collective = 0, reduction = 0, overlap = 0;
  double measured = 0;
};

// The scales that make compute*s_c + point_to_point*s_p + collective*s_k + reduction*s_r -
// overlap closest to the measured times in relative error (least squares over the samples,
// each residual divided by its measured time). A class that makes up less than 1% of the
// samples' modelled time keeps scale 1 (they say nothing of it). InvalidArgument when a
// sample's measured time is not positive and finite, when there are fewer samples than the
// scales fitted plus 2, or when the samples do not determine a positive scale for a class
// (its message names the class: "the runs give point-to-point transfers a scale of -0.2;
// measure schedules that differ in them").
absl::StatusOr<TermScales> FitTermScales(const std::vector<TermSample>& samples);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_TERM_FIT_H_
