// What every runner shares (runner.h): a run's samples, one item alone, and the default
// side-by-side measurement (one item after another).
#include "search/runner.h"

#include <utility>

#include "base/median.h"
#include "runtime/executor.h"

namespace meshtune::search {

void SetSamples(std::vector<double> samples, int batch, CandidateRun* run) {
  run->batch = batch;
  run->samples = std::move(samples);
  run->seconds.reset();
  if (run->verified && !run->samples.empty()) run->seconds = base::Median(run->samples);
}

std::vector<runtime::ProblemSpec> LibraryStatements(const LibraryInput& in) {
  if (in.program == nullptr) return {runtime::ProblemSpecOf(*in.problem)};
  std::vector<runtime::ProblemSpec> out;
  for (const ir::Problem& p : in.program->statements) out.push_back(runtime::ProblemSpecOf(p));
  return out;
}

int LibraryDtypeBytes(const LibraryInput& in) {
  const ir::Problem& first = in.program != nullptr ? in.program->statements[0] : *in.problem;
  return first.dtype == ir::DType::kF64 ? 8 : 4;
}

std::string LibraryName(const ir::Problem& problem) {
  return problem.dtype == ir::DType::kF64 ? "PDGEMM" : "PSGEMM";
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
