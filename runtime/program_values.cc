#include "runtime/program_values.h"

#include <algorithm>
#include <utility>

#include "runtime/box.h"

namespace meshtune::runtime {

ProgramValues::ProgramValues(std::vector<ProblemSpec> statements, uint64_t seed,
                             Precision precision)
    : statements_(std::move(statements)),
      seed_(seed),
      precision_(precision),
      kept_(statements_.size()) {
  for (size_t s = 0; s < statements_.size(); ++s) {
    references_.push_back(std::make_unique<Reference>(statements_[s], seed_, precision_,
                                                      OperandsOf(static_cast<int>(s))));
  }
}

int ProgramValues::Writer(const std::string& tensor, int before) const {
  for (int s = std::min<int>(before, static_cast<int>(statements_.size())) - 1; s >= 0; --s) {
    if (statements_[s].output.tensor == tensor) return s;
  }
  return -1;
}

Expected ProgramValues::Value(const std::string& tensor, int64_t linear, int before) {
  const int s = Writer(tensor, before);
  if (s < 0) return FilledValue(seed_, tensor, linear, precision_);
  const auto it = kept_[s].find(linear);
  if (it != kept_[s].end()) return it->second;
  const Expected v = references_[s]->At(Unlinear(linear, statements_[s].Shape(tensor)));
  kept_[s].emplace(linear, v);
  return v;
}

OperandValues ProgramValues::OperandsOf(int s) {
  return [this, s](const std::string& tensor, int64_t linear) { return Value(tensor, linear, s); };
}

int64_t ProgramValues::ElementCost(int s) const {
  const ProblemSpec& p = statements_[s];
  int64_t terms = 1;
  for (const auto& [index, extent] : p.extents) {
    if (std::find(p.output.indices.begin(), p.output.indices.end(), index) ==
        p.output.indices.end())
      terms *= extent;
  }
  double per_term = 1;
  for (const ProblemSpec::Access& a : p.operands) {
    const int w = Writer(a.tensor, s);
    if (w >= 0) per_term += static_cast<double>(ElementCost(w));
  }
  // Saturates rather than overflows (a cost only decides how sparsely a check samples).
  return static_cast<int64_t>(std::min(static_cast<double>(terms) * per_term, 1e18));
}

}  // namespace meshtune::runtime
