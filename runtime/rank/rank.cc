// runtime/rank/rank.h's functions of a TensorSpec. The runtime itself, RankRuntime<T>, and its
// factories MakeRankRuntime and MakeBoundRankRuntime are in rank_runtime.h and its files
// (rank_runtime.cc and the rest listed there).
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

bool AtCoordinateZero(const TensorSpec& t, const Coords& coords) {
  for (int a : t.replicated_axes) {
    if (coords[static_cast<size_t>(a)] != 0) return false;
  }
  return true;
}

}  // namespace meshtune::runtime
