// Legality of block schedules by arithmetic: the verdicts CheckTensor (legality.h) reaches
// with isl, reached without it for the schedules a search generates.
//
// The forms covered:
//   - every index of the tensor is split into loops of several iterations whose strides form
//     a mixed radix of its extent (divide and distribute), each distributed loop covering
//     its whole mesh axis, each axis at most once, and rotations turn serial loops by
//     distributed ones;
//   - the tensor is accessed once, each dim by its own index;
//   - each dim's blocks are numbered by plain mesh axes (m@x, or m@x, m@y for nested
//     blocks), each axis numbering at most one block, or by one skew (a+b)%s alone on its
//     dim whose partner b numbers a block of another dim (Cannon's alignment).
// Then the elements of one dim that a rank uses in one instance of a transfer are o + F: o
// sums the index's fixed digits (distributed loops: the rank's coordinate; serial loops up
// to the transfer: the loop value, turned by a rotation), F the sums of its free digits. As
// a rank's time steps run, every value of the fixed serial digits occurs, and the dims vary
// independently. Each rule of CheckTensor becomes a question about floor((o + f) / block)
// mod parts over the values of o and f, answered by enumerating them (about the index's
// extent of steps per question). Ownership is decided for any layout, by enumerating ranks.
//
// Outside the forms (or past an enumeration limit, or under a memory budget, whose transfer
// buffers isl measures) the functions return nullopt and isl decides. The rejections carry
// codes only, like CheckTensor without messages.
// Thread-compatible; no isl.
#ifndef MESHTUNE_IR_LEGALITY_CLOSED_FORM_H_
#define MESHTUNE_IR_LEGALITY_CLOSED_FORM_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/computation.h"
#include "ir/reason.h"

namespace meshtune::ir {

// CheckTensor's `ownership` rejections of `tensor` in `c` (unowned_element, or none), or
// nullopt when the mesh or the tensor has too many blocks to enumerate.
std::optional<std::vector<Rejection>> ClosedFormOwnership(const Computation& c,
                                                          const std::string& tensor);

// CheckTensor's `access` rejections of `tensor` in `c` before prefetch is applied (at most
// one of multi_source_transfer, non_local_access, unreduced_output, misaligned_reduction),
// or nullopt outside the forms above or when the mesh has a memory budget.
std::optional<std::vector<Rejection>> ClosedFormAccess(const Computation& c,
                                                       const std::string& tensor);

// For communicated input `t`, legal as CheckTensor judges it: the mesh axes it all-gathers
// along (GatherAxes), or none when it reads each instance from one rank (SingleSource).
// nullopt outside the forms, or when `t` reads from several ranks without a gather.
std::optional<std::vector<int>> ClosedFormGatherAxes(const Computation& c, const Communication& t);

// What ExamineRing (ir/ring.h) answers about output transfer `t` along reduction axis
// `axis`, reached by arithmetic.
struct RingAnswers {
  bool moves = false;  // the partial sums move as a ring (MovesAsRing)
  bool legal = false;  // ... and it reduces them: no copies, every rank's ends held alike
  int shift = 0;       // +1 or -1 when they move
  bool hop = false;    // the last sums take one more step, to the neighbour that holds them
};

// ExamineRing's answers for output transfer `t` along `axis`, by enumerating every rank
// and every step of the loops up to the transfer (the elements of one dim at a rank and
// step are o + F as above, none where any index's o lies past its extent); nullopt outside
// the forms, with a distributed loop that leaves a part past an extent, or past the
// enumeration limit. Whether the sums move is decided loop by loop where no rank or step is
// empty and each index's loops form a mixed radix (a digit per loop), by enumeration
// elsewhere; answers are remembered per loops and the tensor's sharding and transfer
// (Computation::MemoInt).
std::optional<RingAnswers> ClosedFormRing(const Computation& c, const Communication& t, int axis);

// RingOf's question for output transfer `t` (ReductionAxes, the one misaligned among them,
// then ClosedFormRing); answers with moves false when the group is aligned or misaligned
// along several axes. nullopt where ClosedFormRing is.
std::optional<std::pair<int, RingAnswers>> ClosedFormRingOf(const Computation& c,
                                                            const Communication& t);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_LEGALITY_CLOSED_FORM_H_
