// Schedule primitives: pure functions from a Computation to a new Computation.
//
// Each returns the transformed value, InvalidArgument when the call itself is malformed
// (unknown loop, tensor or axis; a name already in use; a rotate by a loop that is not
// distributed), or FailedPrecondition with a reason code (reason.h) when the call is
// well-formed but makes the schedule illegal (rotations that conflict). Any extent splits:
// blocks that do not divide it leave a short last block. The input is never modified.
#ifndef MESHTUNE_IR_PRIMITIVES_H_
#define MESHTUNE_IR_PRIMITIVES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/computation.h"

namespace meshtune::ir {

// Splits loop `var` into `outer` x `inner` with extent(inner) = factor, in var's place.
absl::StatusOr<Computation> Split(const Computation& c, const std::string& var,
                                  const std::string& outer, const std::string& inner,
                                  int64_t factor);

// Splits loop `var` into `outer` x `inner` with extent(outer) = parts.
absl::StatusOr<Computation> Divide(const Computation& c, const std::string& var,
                                   const std::string& outer, const std::string& inner,
                                   int64_t parts);

// Permutes the named loops among the positions they occupy; other loops stay in place.
// Distributed loops must stay outermost and tensorized loops innermost.
absl::StatusOr<Computation> Reorder(const Computation& c, const std::vector<std::string>& order);

// Divides each vars[i] into outers[i] x inners[i] with extent(outers[i]) = size of mesh
// axis axes[i], marks the outers distributed over those axes (each rank runs the iteration
// equal to its mesh coordinate) and moves them outermost.
absl::StatusOr<Computation> Distribute(const Computation& c, const std::vector<std::string>& vars,
                                       const std::vector<std::string>& outers,
                                       const std::vector<std::string>& inners,
                                       const std::vector<std::string>& axes);

// Block-shards `tensor`: for each target, the dim's blocks are laid over the target's
// values (a dim named twice is split again inside its first blocks). Mesh axes no target
// names replicate the tensor along them.
absl::StatusOr<Computation> Shard(const Computation& c, const std::string& tensor,
                                  const std::vector<ShardTarget>& targets);

// Communicates `tensor` at loop `loop`: inputs are fetched before each iteration, outputs
// reduced to their holders after it. With `rotate`, the loop runs (t + step * sum rotate)
// mod extent on each rank (rotate names distributed loops; `step` at least 1, only with
// rotate), for every tensor alike. With
// `prefetch` 1 the transfer is double-buffered and overlaps the loop's next (inputs) or
// previous (the output) step; InvalidArgument for a value other than 0 or 1. Whether there
// is anything to overlap is a question of the final loops, answered by ir/legality.h.
absl::StatusOr<Computation> Communicate(const Computation& c, const std::string& tensor,
                                        const std::string& loop,
                                        const std::vector<std::string>& rotate, int prefetch = 0,
                                        int64_t step = 1);

// Folds the innermost loops `loops` into one call of kernel `op`: matmul, matmul_ta,
// matmul_tb, matmul_tab, mul, add or contraction. The statement over the tensorized
// indices must have the kernel's form; the error names the form it has.
absl::StatusOr<Computation> Tensorize(const Computation& c, const std::vector<std::string>& loops,
                                      const std::string& op);

// The kernel names Tensorize accepts.
const std::vector<std::string>& KernelOps();

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_PRIMITIVES_H_
