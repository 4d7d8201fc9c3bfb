// Deterministic tensor contents: every element's value is a hash of (seed, tensor name,
// global linear index), so each rank fills its own shard and computes its own reference
// without any global array. Pure functions; thread-safe.
#ifndef MESHTUNE_RUNTIME_FILL_H_
#define MESHTUNE_RUNTIME_FILL_H_

#include <cstdint>
#include <string>

namespace meshtune::runtime {

// A value in [-1, 1) for element `index` of tensor `tensor`.
double ElementValue(uint64_t seed, const std::string& tensor, int64_t index);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_FILL_H_
