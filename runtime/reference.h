// The f64 reference a rank checks its output shard against: every input element is a hash
// of (seed, tensor, index) (runtime/fill.h), so a rank computes the exact answer for any
// output element on its own, without communication.
#ifndef MESHTUNE_RUNTIME_REFERENCE_H_
#define MESHTUNE_RUNTIME_REFERENCE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/rank.h"

namespace meshtune::runtime {

// What a rank checks: the statement, every tensor, the rank's place on the mesh.
struct ReferenceCheck {
  const StatementSpec* statement = nullptr;
  const std::vector<TensorSpec>* tensors = nullptr;
  const std::vector<std::string>* axis_names = nullptr;
  Coords coords;
  bool accumulate = false;  // '+=': the output started from its own filled values
  uint64_t seed = 1;
  double tolerance = 2e-4;  // relative to the sum of the terms' magnitudes
};

// Compares the rank's output shard (`value(i)`: its i-th element, row-major) with the
// reference — every element, or a deterministic sample when the check would cost more
// than 4e6 multiply-adds. "" when it matches; else the first mismatch, e.g.
// "rank (x=0, y=1): C[0, 3] = 1.5 but the reference is 2".
// The same check of `n` elements of the output held anywhere: `index(i, g)` sets the i-th
// element's global index (one per dim) and says whether slot i holds one at all.
std::string CheckOutputElements(const ReferenceCheck& check, int64_t n,
                                const std::function<bool(int64_t, std::vector<int64_t>*)>& index,
                                const std::function<double(int64_t)>& value);

std::string CheckOutputShard(const ReferenceCheck& check,
                             const std::function<double(int64_t)>& value);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_REFERENCE_H_
