// Which measured candidate is the answer, decided with the noise in view. Measured side by
// side, two candidates compare by their paired per-round ratios (base::ComparePaired);
// measured apart, by their medians' intervals. The rule, in order:
//   1. Only runs that verified and were not refused as implausible count.
//   2. The schedule chosen is the fastest (lowest median) — when it is not faster than the
//      second beyond the noise the verdict says "tie within noise", and the median still
//      picks: a small true difference then points the same way in most tunes.
//   3. The library is the answer unless the chosen schedule is faster than the fastest
//      library configuration beyond the noise.
// Stateless; thread-safe.
#ifndef MESHTUNE_SEARCH_DECISION_H_
#define MESHTUNE_SEARCH_DECISION_H_

#include <optional>
#include <string>
#include <vector>

#include "base/sample_stats.h"
#include "search/runner.h"

namespace meshtune::search {

// One measured candidate as the rule sees it.
struct Contender {
  std::string label;  // for messages: "x=2,y=2 #1" or "PSGEMM 2x2 NB 64"
  bool library = false;
  const CandidateRun* run = nullptr;
  bool implausible = false;  // refused by the physics guard (search/plausibility.h)
};

// How candidate a compares with b: their ratio a / b, separated when its interval excludes 1.
struct Compared {
  int a = -1, b = -1;   // indices into the contenders
  bool paired = false;  // by per-round ratios (both measured side by side, same rounds)
  int rounds = 0;       // pairs (paired) or the smaller sample
  double ratio = 0, ratio_low = 0, ratio_high = 0;
  // The probability that [ratio_low, ratio_high] holds the true ratio: the paired ratios'
  // ci_level (at least base::kConfidence from base::kSamplesFor95 rounds), else the
  // product of the two intervals' levels (both hold their medians).
  double ratio_level = 0;
  bool separated = false;
};

// a against b: paired when their samples are of one length (rounds side by side), else
// by the medians' intervals (ratio_low = a.ci_low / b.ci_high, ratio_high = a.ci_high /
// b.ci_low; separated when the intervals do not overlap).
Compared Compare(const std::vector<Contender>& c, int a, int b);

struct Decision {
  int answer = -1;                 // the contender that is the answer; -1: none usable
  int schedule = -1;               // the chosen schedule (rule 2)
  int library = -1;                // the fastest library configuration
  std::optional<Compared> leader;  // the fastest usable against the second fastest
  // "separated" (the fastest beats the second beyond the noise), "tie within noise", or ""
  // with fewer than two usable contenders.
  std::string verdict;
  // The chosen schedule against `library` (when both exist).
  std::optional<Compared> vs_library;
};

// The rule above over `contenders`.
Decision Decide(const std::vector<Contender>& contenders);

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_DECISION_H_
