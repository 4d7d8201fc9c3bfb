// Ring reductions: an output whose partial sums travel around a ring of ranks.
//
// A communicated output whose reduction group holds partial sums of different elements at
// the same step (a time loop rotated by the reduction's distributed loop, as in a
// GEMM-ReduceScatter made of ring steps) can still be summed when the partial sums of
// each block pass from rank to rank along one mesh axis, one neighbour a step, every rank
// adding its own share on the way. That holds when the elements rank r writes at step t of
// the communicate loop are exactly those its neighbour at +shift (around the axis) writes
// at step t+1. After the loop's last step each rank's buffer then holds the whole sum of
// its elements over the ring, which lands either on the rank itself or, one hop further,
// on its neighbour at +shift: every element must be held there, by that rank alone (an
// output with copies cannot end a ring), the same way for every rank.
//
// Correctness: each rank's contribution at step t rides the ring to the rank that ends
// with its elements and from there to their one holder, once; nothing else writes them.
// Thread-compatible: uses the Computation's isl context.
#ifndef MESHTUNE_IR_RING_H_
#define MESHTUNE_IR_RING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/computation.h"

namespace meshtune::ir {

// The ring a reduction runs on.
struct Ring {
  int axis = -1;     // mesh axis of the ring
  int shift = 0;     // +1 or -1: each step's partial sums go to the neighbour at +shift
  bool hop = false;  // after the last step the sums take one more step, to their holder
};

// What ExamineRing found about output transfer `t`.
struct RingShape {
  // The ring along which the partial sums move (axis, shift; `hop` as below), when they
  // move as one: along the one reduction axis the group is misaligned on, the communicate
  // loop serial with several steps. Empty otherwise.
  std::optional<Ring> ring;
  bool copies = false;     // the output has copies: several ranks hold an element
  bool ends_held = false;  // every rank's last sums are held by it, or all by the next (`hop`)
  // When ring is set and the ends are not held: a rank whose last sums (`end_elements`,
  // P[r, serial...] coordinates in `end_rank`) are held by neither it nor its neighbour,
  // or, when each rank's are held by one of those but not all alike, `end_rank` is held
  // at home and `other_rank` by the neighbour.
  std::vector<int64_t> end_rank, other_rank;
};

// The ring of output transfer `t` along mesh axis `axis` (a reduction axis), when its
// partial sums move as one; see RingShape. Remembered per loops and sharding.
RingShape ExamineRing(const Computation& c, const Communication& t, int axis);

// Whether the partial sums of output transfer `t` move as a ring along reduction axis
// `axis` (ExamineRing's ring is set), legal or not. By arithmetic where the closed forms
// decide (ClosedFormRing, ir/legality_closed_form.h) unless `closed_forms` is false, else
// with isl, remembered per loops and sharding.
bool MovesAsRing(const Computation& c, const Communication& t, int axis, bool closed_forms = true);

// The ring output transfer `t` is reduced on, when it is a legal ring reduction: its
// reduction group is misaligned along one axis, the sums move as a ring there, the output
// has no copies and every rank's last sums are held as Ring::hop says. Empty otherwise
// (including when its reduction is aligned: then it is an ordinary reduction). Decided as
// MovesAsRing is.
std::optional<Ring> RingOf(const Computation& c, const Communication& t, bool closed_forms = true);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_RING_H_
