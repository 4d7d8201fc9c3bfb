// What every runner shares (runner.h): a run's samples, one item alone, and the default
// side-by-side measurement (one item after another).
#include "search/runner.h"

#include <utility>

#include "base/median.h"

namespace meshtune::search {

void SetSamples(std::vector<double> samples, int batch, CandidateRun* run) {
  run->batch = batch;
  run->samples = std::move(samples);
  run->seconds.reset();
  if (run->verified && !run->samples.empty()) run->seconds = base::Median(run->samples);
}

CandidateRun RunAlone(Runner& runner, const MeasureItem& item) {
  CandidateRun out;
  if (item.schedule != nullptr) {
    out = runner.Run(*item.schedule);
  } else if (item.library != nullptr) {
    out = runner.RunLibrary(*item.library);
  } else if (item.program != nullptr) {
    out = runner.RunProgram(*item.program);
  } else {
    out.error = "not run: nothing to measure";
  }
  // A runner that reports only a time: that time is its one sample.
  if (out.verified && out.seconds && out.samples.empty()) out.samples = {*out.seconds};
  return out;
}

std::vector<CandidateRun> Runner::RunSideBySide(const std::vector<MeasureItem>& items,
                                                double budget_s) {
  std::vector<CandidateRun> out;
  for (const MeasureItem& item : items) out.push_back(RunAlone(*this, item));
  return out;
}

}  // namespace meshtune::search
