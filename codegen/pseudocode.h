// Pseudo-code of a Program, in the style of the seed notebook's listings (docs/design.md,
// "Pseudo-code"):
//
//   for ko in range(0, 8):
//       TransA = alloc(64, 256)
//       Shift(axis=1, +1) A[0:64, 0:256] from rank[x, (y + ko) % 8] -> TransA[0:64, 0:256]
//       C[0:64, 0:128] += TransA @ TransB
//
// Distributed loops do not appear: x, y, ... are the rank's mesh coordinates.
#ifndef MESHTUNE_CODEGEN_PSEUDOCODE_H_
#define MESHTUNE_CODEGEN_PSEUDOCODE_H_

#include <string>

#include "codegen/program.h"

namespace meshtune::codegen {

std::string PseudoCode(const Program& program);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_PSEUDOCODE_H_
