// The MPI runner: one runtime::Launch per candidate.
#include <memory>

#include "ir/problem.h"
#include "search/runner.h"

namespace meshtune::search {

namespace {

class MpiRunner : public Runner {
 public:
  explicit MpiRunner(const MpiRunnerOptions& options) : options_(options) {}
  bool measures() const override { return true; }

  RunResult Run(const MeasureInput& input) override {
    runtime::RunSpec spec;
    spec.expr = input.problem->ToString();
    spec.extents = input.problem->ExtentsString();
    spec.dtype = std::string(ir::DTypeName(input.problem->dtype));
    spec.mesh = input.mesh->ToString();
    spec.trace = input.trace;
    spec.ranks = input.mesh->Ranks();
    spec.reps = options_.reps;
    spec.warmup = options_.warmup;
    spec.seed = options_.seed;
    runtime::LaunchOptions launch = options_.launch;
    launch.timeout_s = input.timeout_s;
    launch.cancelled = input.cancelled;
    const runtime::LaunchResult r = runtime::Launch(spec, launch);
    RunResult out;
    out.verified = r.verified && !r.error.has_value();
    out.error = r.error;
    out.repetitions = r.seconds;
    if (out.verified) out.seconds = r.median_s;
    return out;
  }

 private:
  MpiRunnerOptions options_;
};

}  // namespace

std::unique_ptr<Runner> NewMpiRunner(const MpiRunnerOptions& options) { return std::make_unique<MpiRunner>(options); }

}  // namespace meshtune::search
