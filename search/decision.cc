#include "search/decision.h"

#include <algorithm>

namespace meshtune::search {

namespace {

bool Usable(const Contender& c) {
  return c.run != nullptr && c.run->verified && c.run->seconds.has_value() && !c.implausible &&
         !c.run->samples.empty();
}

}  // namespace

Compared Compare(const std::vector<Contender>& c, int a, int b) {
  Compared out;
  out.a = a;
  out.b = b;
  const std::vector<double>& sa = c[a].run->samples;
  const std::vector<double>& sb = c[b].run->samples;
  if (sa.size() == sb.size()) {
    const base::PairedComparison p = base::ComparePaired(sa, sb);
    out.paired = true;
    out.rounds = p.ratio.n;
    out.ratio = p.ratio.median;
    out.ratio_low = p.ratio.ci_low;
    out.ratio_high = p.ratio.ci_high;
    out.ratio_level = p.ratio.ci_level;
    out.separated = p.separated;
    return out;
  }
  const base::SampleStats x = base::Summarize(sa), y = base::Summarize(sb);
  out.rounds = std::min(x.n, y.n);
  out.ratio = x.median / y.median;
  out.ratio_low = x.ci_low / y.ci_high;
  out.ratio_high = x.ci_high / y.ci_low;
  out.ratio_level = x.ci_level * y.ci_level;
  out.separated = std::min(x.n, y.n) >= base::kSamplesFor95 && base::IntervalsSeparate(x, y);
  return out;
}

Decision Decide(const std::vector<Contender>& c) {
  Decision d;
  std::vector<int> usable;
  for (int i = 0; i < static_cast<int>(c.size()); ++i) {
    if (Usable(c[i])) usable.push_back(i);
  }
  const auto median = [&c](int i) { return *c[i].run->seconds; };
  std::stable_sort(usable.begin(), usable.end(),
                   [&](int a, int b) { return median(a) < median(b); });
  if (usable.empty()) return d;
  if (usable.size() >= 2) {
    d.leader = Compare(c, usable[0], usable[1]);
    d.verdict = d.leader->separated ? "separated" : "tie within noise";
  }
  for (int i : usable) {
    if (c[i].library && d.library < 0) d.library = i;
    if (!c[i].library && d.schedule < 0) d.schedule = i;
  }
  // Rule 3: faster than the fastest library beyond the noise (or no library measured).
  bool schedule_answers = d.schedule >= 0;
  if (schedule_answers && d.library >= 0) {
    const Compared v = Compare(c, d.schedule, d.library);
    schedule_answers = v.separated && v.ratio_high < 1;
  }
  d.answer = schedule_answers ? d.schedule : d.library;
  if (d.library >= 0 && d.schedule >= 0) d.vs_library = Compare(c, d.schedule, d.library);
  return d;
}

}  // namespace meshtune::search
