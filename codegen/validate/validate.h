// Translation validation: an independent check, on isl, that a lowered Program computes
// its statement.
//
// The Program is the only description of what runs: its loops, shards (TensorInfo
// layouts), transfers, kernel calls and reductions are read with the semantics of
// runtime/executor.cc and runtime/rank/rank_transfers.cc (every rank runs the tree; a Broadcast
// takes the root's box at the root's offset; a SendRecv the source's box at the receiver's offset;
// a Shift turns a ring along its time loop; an AllGather pieces a box together from the holders
// along its axes; reductions add a group's partial results into the parts of the box each member
// holds). From the ir::Computation only the statement is used: its domain, its access relations
// (OperandAccess) and its tensors' shapes — never the schedule, shardings or transfers the Program
// was lowered from, nor ir/legality.
//
// Everything is decided symbolically over mesh coordinates and loop values (isl sets and
// maps, witnesses by lexmin), never by enumerating ranks or iterations; the cost does not
// grow with extents or mesh sizes (milliseconds for 512^3 on 8 x 8). A kernel instance is
// (rank, loop values, tile point) for the tile points the call executes: with blocks that
// do not divide an extent (ragged, codegen/program.h), per clipped index j only
// p_j < Compute::extent[j] - start_j (none when that is not positive: the call is skipped);
// the points past it are no instances, and read and write nothing.
//   (1) every element a kernel instance reads is in bounds of its buffer and holds, at that
//       moment, a well-defined element of the operand's tensor, copied from a rank that
//       holds it (every box a transfer copies whole lies inside the source's storage,
//       local_shape, padding and all; collectives agree on root and box within each group);
//   (2) each kernel instance multiplies (or adds) exactly the operands of one statement
//       instance S (in the statement's domain: no element past a tensor's shape) and adds
//       the result to out(S);
//   (3) for every output element o (within its shape) and every rank q holding o, the
//       statement instances whose results reach q's copy of o (directly, or through a
//       partial buffer and a reduction) are exactly { S : out(S) = o }, each once; every
//       output element has a holder.
// Ragged storage: local position l of a shard stands for the tensor's index
// ShardStartAt + l; past `shape` that is padding (never data), which the validator names by
// that index past the shape, so that a kernel instance touching it is no instance of the
// statement. A whole-box copy (Local, Broadcast, Shift, SendRecv) moves padding as it is;
// pieces from holders (AllGather, AllToAll) are clipped to `shape`, leaving the buffer's
// positions past it as they were (not filled); a reduction's parts reach their holders
// clipped to `shape` too. A contribution followed into a holder's padding (which the
// runtime would drop) is refused all the same: its kernel point computes no instance of the
// statement, a clipping the lowering got wrong.
// Nothing assumes local_shape <= shape (a dim kept whole is stored as far as its loops reach).
//
// Assumptions and what is not modeled: every rank runs the same tree and loops start at
// constant bounds (else Unimplemented), so collectives and messages pair up by program
// order; a Shift must turn along the innermost loop around it, from 0, with nothing else
// writing its buffer (else Unimplemented); a RingReduce sits in the body of its loop's For
// after the kernels into its buffer, which is zeroed once before that For and which no
// other statement reads or fills (else lowering_unsound), and a contribution made at step
// v then lands after the last step L on the rank shift * (L - v) (+ shift with hop) around
// the ring, at that rank's offset; a prefetched transfer or reduction
// (codegen/program.h) means what it means without prefetch — only when its communication
// runs changes, the data it leaves is the same — provided its loop's For drives it, its
// buffer has no other transfer or reduction and, for a reduction, that buffer is zeroed in
// the loop's body (else lowering_unsound); buffers persist across the runtime's timed
// repetitions, so a buffer must be filled (zeroed) before it is read (accumulated into);
// every box a point-to-point, local or broadcast copy takes must lie in the source's shard
// even where the kernel does not read it (the runtime copies whole boxes); the statement's
// accesses are plain index lists and it does not read its output. Not modeled: arithmetic
// (float rounding, int64 overflow of expressions), MPI deadlock beyond the agreement of
// roots and boxes within collective groups, memory budgets and performance.
//
// Thread-compatible: uses the Computation's isl context (one thread at a time).
#ifndef MESHTUNE_CODEGEN_VALIDATE_VALIDATE_H_
#define MESHTUNE_CODEGEN_VALIDATE_VALIDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codegen/lower.h"
#include "codegen/program.h"
#include "codegen/validate/unsoundness.h"
#include "ir/computation.h"

namespace meshtune::codegen {

// Checks that `p`, run on every rank of its mesh, computes the statement of `c` (see the
// file comment). Returns OK when it does; FailedPrecondition with Unsoundness::ToString()
// as the message when it does not (and sets *why when `why` is given); InvalidArgument
// when `p` was lowered without offsets (LowerOptions::offsets = false) or does not fit the
// statement (tensors, shapes); Unimplemented for constructs the check does not model
// (non-constant loop bounds, non-affine expressions, a Shift whose time loop is not the
// innermost loop around it or does not start at 0).
absl::Status ValidateProgram(const ir::Computation& c, const Program& p,
                             Unsoundness* why = nullptr);

// The gate every Program that will run passes: OK when ValidateProgram proves `p`
// computes `c`'s statement; FailedPrecondition "lowering_unsound: ..." when it is unsound,
// and FailedPrecondition "unvalidated: <the construct the validator does not model>" when
// it cannot tell — a refusal, never a pass; InvalidArgument as ValidateProgram.
absl::Status AdmitProgram(const ir::Computation& c, const Program& p);

// `c`'s legal schedule lowered (with offsets) and admitted (AdmitProgram): the one way a
// Program that will run is made. Lowering's own errors (Unimplemented for schedules it
// declines) as they are.
absl::StatusOr<Program> LowerValidated(const ir::Computation& c, const LowerOptions& options = {});

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_VALIDATE_VALIDATE_H_
