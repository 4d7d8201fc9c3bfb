// Fitting TermScales to measured schedules: how much each class of the cost model's terms
// costs in a running schedule against what calibration measured in isolation (a transfer
// after kernels that swept the caches, beside ranks that arrive late, ...).
#ifndef MESHTUNE_COST_TERM_FIT_H_
#define MESHTUNE_COST_TERM_FIT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_params.h"

namespace meshtune::cost {

// One measured schedule: its critical rank's terms as the model costs them with every
// scale 1 and no message wait (CostReport's compute, point-to-point, collective and
// reduction seconds, the overlap prefetch hides, and the messages it receives: the sum of
// its TransferCost::messages), and its measured seconds.
struct TermSample {
  double compute = 0, point_to_point = 0, collective = 0, reduction = 0, overlap = 0;
  double measured = 0;
  double messages = 0;
  // How much the sample counts against the others (positive; 1 each: alike): a run whose
  // median is known closely counts more (SpreadWeight).
  double weight = 1;
};

// The weight of a measured time whose median's 95% interval is [low, high] around
// `median`: 1 / h^2 with h the interval's half-width relative to the median, at least 1%
// (a tighter interval is not believed further); h = 5% when the interval is unknown (a
// median of fewer than two samples, or from before samples were kept).
double SpreadWeight(double median, double low, double high);

// How far, a priori, a class's scale lies from the classes' common scale. FitTermScales
// pulls each class toward the common scale as a Gaussian prior of this spread would, against
// the samples' noise (the spread of their relative errors under the free fit): classes that
// noisy runs barely tell apart share a scale instead of taking opposite, large ones that fit
// the noise of a few runs, and exact samples keep their exact scales. Fitted scales on the
// development machine lie between 0.7 and 2.7.
inline constexpr double kScaleSpread = 1.0;

// The scales s_c and the message wait q that make
//   compute*s_c + point_to_point*s_p + collective*s_k + reduction*s_r + messages*q - overlap
// closest to the measured times in relative error (least squares over the samples, each
// residual divided by its measured time and weighted by the sample's weight over their
// mean), with each class's scale shrunk toward their common
// scale as kScaleSpread says. A class that makes up less than 1% of the samples' modelled
// time (they say nothing of it) keeps 1 when the samples are exact, else takes the common
// scale; q is fitted when some sample receives messages, and is
// 0 when the samples would make it negative or cannot tell it from the classes (each
// schedule's messages in proportion to its transfers' time). InvalidArgument when a sample's
// measured time is not positive and finite, when there are fewer samples than the classes fitted
// (and the message wait) plus 2, when the samples' terms are all zero, when the samples do not tell
// the classes apart, or when a scale comes out not positive (its message names the class:
// "the runs give point-to-point transfers a scale of -0.2; measure schedules that differ
// in them").
absl::StatusOr<TermScales> FitTermScales(const std::vector<TermSample>& samples);

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_TERM_FIT_H_
