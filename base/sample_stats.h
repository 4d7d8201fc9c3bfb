// Statistics of timed samples, as every measurement of meshtune reports them (Hoefler and
// Belli, "Scientific benchmarking of parallel computing systems", SC'15): nonparametric —
// the order statistics of the sample, a confidence interval of its median from the
// binomial distribution (no assumption about the shape of the noise), and comparisons of
// two candidates by their paired ratios (one per round in which both ran).
#ifndef MESHTUNE_BASE_SAMPLE_STATS_H_
#define MESHTUNE_BASE_SAMPLE_STATS_H_

#include <cstdint>
#include <vector>

namespace meshtune::base {

// The confidence the intervals aim at.
inline constexpr double kConfidence = 0.95;

// The fewest samples whose whole range is a 95% interval of the median (1 - 2 * 2^-n >=
// 0.95 from n = 6): fewer give an interval with a lower coverage (SampleStats::ci_level).
inline constexpr int kSamplesFor95 = 6;

// A sample of n numbers (times in seconds, or ratios) summarized. All NaN and n = 0 for
// an empty sample. Plain value.
struct SampleStats {
  int n = 0;
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  // [ci_low, ci_high] = [x_(j), x_(n+1-j)] (the sorted sample, 1-based), with j the largest
  // for which the binomial(n, 1/2) probability of fewer than j samples on one side is at
  // most (1 - kConfidence) / 2: it holds the true median with probability ci_level, at least
  // kConfidence when n >= kSamplesFor95 (for fewer, j = 1 and ci_level = 1 - 2^(1-n)).
  double ci_low = 0, ci_high = 0;
  double ci_level = 0;
};

// The coverage of the median interval Summarize gives a sample of n (SampleStats::ci_level):
// at least kConfidence from kSamplesFor95; 0 for n < 2.
double MedianCiLevel(int n);

// A coverage probability (SampleStats::ci_level) as messages print it, in whole percent:
// 95 from kConfidence up (an interval meant as 95% is called so), else rounded down.
int CiPercent(double level);

// `v` summarized: quartiles interpolated between order statistics as R's type 7 (and
// NumPy's default) does; the median the middle value or the mean of the middle two.
SampleStats Summarize(std::vector<double> v);

// How two candidates compare on the rounds both ran in: the per-round ratio a_i / b_i.
struct PairedComparison {
  SampleStats ratio;  // of a / b; below 1: a is faster
  // The ratio's interval excludes 1 (at the ratio's ci_level, which needs n >=
  // kSamplesFor95 to reach kConfidence; fewer rounds never separate).
  bool separated = false;
};

// The paired ratios a[i] / b[i] over the indices where both are positive (NaN or 0: that
// round lacks one of them). Separated only with at least kSamplesFor95 pairs.
PairedComparison ComparePaired(const std::vector<double>& a, const std::vector<double>& b);

// Whether the two unpaired intervals [a_low, a_high] and [b_low, b_high] do not overlap.
bool IntervalsSeparate(const SampleStats& a, const SampleStats& b);

}  // namespace meshtune::base

#endif  // MESHTUNE_BASE_SAMPLE_STATS_H_
