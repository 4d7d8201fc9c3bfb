// ReadRunsAtCommonPace (runner.h): measured times read at the machine's common pace.
#include <vector>

#include "base/median.h"
#include "search/runner.h"

namespace meshtune::search {

double ReadRunsAtCommonPace(const std::vector<CandidateRun*>& runs) {
  std::vector<double> paces;
  for (const CandidateRun* r : runs) {
    if (!r->verified || !r->seconds.has_value()) continue;
    if (!r->pace_s.has_value() || !(*r->pace_s > 0)) return 0;
    paces.push_back(*r->pace_s);
  }
  if (paces.empty()) return 0;
  const double pace = base::Median(paces);
  for (CandidateRun* r : runs) {
    if (r->verified && r->seconds.has_value()) *r->seconds *= pace / *r->pace_s;
  }
  return pace;
}

}  // namespace meshtune::search
