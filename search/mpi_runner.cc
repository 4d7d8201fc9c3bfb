// The MPI runner: one runtime::Launch per candidate that fits in memory.
#include <memory>

#include "absl/strings/str_cat.h"
#include "ir/problem.h"
#include "runtime/executor.h"
#include "runtime/memory_fit.h"
#include "search/runner.h"

namespace meshtune::search {

namespace {

// A launch's result as the tuner reads it.
CandidateRun RunOf(const runtime::LaunchResult& r) {
  CandidateRun out;
  out.verified = r.verified && !r.error.has_value();
  out.error = r.error;
  out.repetitions = r.seconds;
  if (out.verified) out.seconds = r.median_s;
  if (r.pace_s > 0) out.pace_s = r.pace_s;
  return out;
}

class MpiRunner : public Runner {
 public:
  explicit MpiRunner(const MpiRunnerOptions& options) : options_(options) {}
  bool measures() const override { return true; }

  CandidateRun Run(const MeasureInput& input) override {
    CandidateRun out;
    if (input.program == nullptr) {
      out.error = "not run: the candidate has no validated Program";
      return out;
    }
    runtime::RunSpec spec;
    spec.problem = runtime::ProblemSpecOf(*input.problem);
    spec.program = *input.program;
    spec.ranks = input.mesh->Ranks();
    return Launched(std::move(spec), input.footprint, input.timeout_s, input.cancelled);
  }

  CandidateRun RunProgram(const ProgramMeasureInput& input) override {
    CandidateRun out;
    const ir::StatementProgram& program = *input.program;
    if (input.programs.size() != program.statements.size() || input.programs.empty()) {
      out.error = "not run: the program needs a validated Program per statement";
      return out;
    }
    runtime::RunSpec spec;
    spec.problem = runtime::ProblemSpecOf(program.statements[0]);
    spec.program = input.programs[0];
    for (size_t s = 1; s < input.programs.size(); ++s) {
      spec.later.push_back({runtime::ProblemSpecOf(program.statements[s]), input.programs[s]});
    }
    spec.ranks = input.mesh->Ranks();
    return Launched(std::move(spec), input.footprint, input.timeout_s, input.cancelled);
  }

  bool measures_library() const override { return true; }

  CandidateRun RunLibrary(const LibraryInput& input) override {
    runtime::RunSpec spec;
    spec.problem = runtime::ProblemSpecOf(*input.problem);
    spec.library = input.config;
    spec.library_dtype_bytes = input.problem->dtype == ir::DType::kF64 ? 8 : 4;
    spec.ranks = int64_t{input.config.prow} * input.config.pcol;
    // The library's footprint is its own (runtime/library_gemm.h): not checked here.
    return Launched(std::move(spec), ir::Footprint{}, input.timeout_s, input.cancelled);
  }

 private:
  // `spec` run with this runner's repetitions and launcher — unless its ranks cannot hold
  // `footprint` each (every worker would abort on std::bad_alloc): then not started.
  CandidateRun Launched(runtime::RunSpec spec, const ir::Footprint& footprint, double timeout_s,
                        const std::function<bool()>& cancelled) const {
    spec.reps = options_.reps;
    spec.warmup = options_.warmup;
    spec.seed = options_.seed;
    runtime::LaunchOptions launch = options_.launch;
    launch.timeout_s = timeout_s;
    launch.cancelled = cancelled;
    if (absl::Status fits = runtime::CheckRunFitsMemory(footprint, spec.ranks, launch);
        !fits.ok()) {
      CandidateRun out;
      out.error = absl::StrCat("not run: ", fits.message());
      return out;
    }
    return RunOf(runtime::Launch(spec, launch));
  }

  MpiRunnerOptions options_;
};

}  // namespace

std::unique_ptr<Runner> NewMpiRunner(const MpiRunnerOptions& options) {
  return std::make_unique<MpiRunner>(options);
}

}  // namespace meshtune::search
