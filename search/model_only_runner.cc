// The model-only runner: measures nothing, so the tuner's answer is the model's best.
#include <memory>

#include "search/runner.h"

namespace meshtune::search {

namespace {

class ModelOnlyRunner : public Runner {
 public:
  bool measures() const override { return false; }
  CandidateRun Run(const MeasureInput&) override { return {}; }
};

}  // namespace

std::unique_ptr<Runner> NewModelOnlyRunner() { return std::make_unique<ModelOnlyRunner>(); }

}  // namespace meshtune::search
