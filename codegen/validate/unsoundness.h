// Why translation validation (codegen/validate/validate.h) finds a Program unsound.
#ifndef MESHTUNE_CODEGEN_VALIDATE_UNSOUNDNESS_H_
#define MESHTUNE_CODEGEN_VALIDATE_UNSOUNDNESS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace meshtune::codegen {

// Why a Program is unsound: the tensor and the loop at which the fault shows (a transfer's
// or reduction's loop; "" for the kernel and the shards), a witness rank (mesh coordinates,
// in axis order; empty for faults of the Program's structure) and a message that names the
// rank, the iteration and the elements. When a kernel call combines elements of no single
// statement instance, the operand that disagrees with the others is named; if several could
// be the wrong one (say A's and B's k differ) and no transfer contradicts its own box, the
// output tensor is named and the message lists every candidate.
struct Unsoundness {
  std::string code = "lowering_unsound";
  std::string tensor, loop;
  std::vector<int64_t> rank;
  std::string message;  // "rank (x=0, y=0) at ko=1 reads B[32, 0] from rank (x=0, y=1), ..."

  // "lowering_unsound: B at ko: rank (x=0, y=0) at ko=1 ..." ("B: ..." when loop is "").
  std::string ToString() const;
};

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_VALIDATE_UNSOUNDNESS_H_
