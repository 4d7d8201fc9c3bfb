// Pseudo-code of a Program, in the style of the seed notebook's listings (docs/design.md,
// "Pseudo-code"):
//
//   for ko in range(0, 8):
//       TransA = alloc(64, 256)
//       Shift(axis=1, +1) A[0:64, 0:256] from rank[x, (y + ko) % 8] -> TransA[0:64, 0:256]
//       C[0:64, 0:128] += TransA @ TransB
//
// Distributed loops do not appear: x, y, ... are the rank's mesh coordinates. A prefetched
// transfer (codegen/program.h) shows its three parts, a prefetched reduction its two, and
// the wait after the loop:
//
//   Broadcast(axes=[1]) A[...] from rank[ko] -> TransA[...]   (if ko == 0)
//   wait TransA
//   start Broadcast(axes=[1]) A[...] from rank[ko + 1] -> TransA.next[...]   (if ko + 1 < 8)
//   ...
//   wait PartC
//   start ReduceScatter(axes=[0]) PartC[...] -> C[...] (global)
#ifndef MESHTUNE_CODEGEN_EMIT_PSEUDOCODE_H_
#define MESHTUNE_CODEGEN_EMIT_PSEUDOCODE_H_

#include <string>

#include "codegen/program.h"

namespace meshtune::codegen {

std::string PseudoCode(const Program& program);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_EMIT_PSEUDOCODE_H_
