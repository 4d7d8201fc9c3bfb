// Communication patterns of transfers, derived with isl: the facts of a transfer
// (codegen/pattern.h, TransferFacts) for the patterns to recognise their own.
//
// A fetch is classified by how its source rank varies with the destination rank and, along
// the communication loop, with time: Local (no message), Broadcast(axes) (one root per
// group of ranks, all needing the same box), Shift(axis, d) (a ring: what a rank needs next
// is what its neighbour at +d holds now), or SendRecv (general point-to-point). A reduction
// of an output is AllReduce, Reduce or ReduceScatter over the mesh axes its reduction
// indices are distributed over, or RingReduce when its partial sums pass around a ring
// (ir/ring.h). Uses the Computation's isl context.
#ifndef MESHTUNE_CODEGEN_PATTERNS_H_
#define MESHTUNE_CODEGEN_PATTERNS_H_

#include <isl/cpp.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/computation.h"

namespace meshtune::codegen {

// `sources`: P[r..., t_0..t_{L-1}] -> Mesh[s...] (single-valued); `offsets`: P -> T[e], the
// global origin of the fetched box; `prefix` = L. When `offsets_key` is not empty it names
// `offsets` for ir::Computation::MemoBool (offsets depend on the loops, not the sharding:
// many candidates share them), and answers about them are remembered under it.
absl::StatusOr<CommPattern> DetectFetchPattern(const ir::Computation& c, int prefix,
                                               const isl::map& sources, const isl::map& offsets,
                                               const std::string& offsets_key = "");

// The pattern of reducing output transfer `t`, whose written box has `box_size` elements
// per dim.
absl::StatusOr<CommPattern> DetectReducePattern(const ir::Computation& c,
                                                const ir::Communication& t,
                                                const std::vector<int64_t>& box_size);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_PATTERNS_H_
