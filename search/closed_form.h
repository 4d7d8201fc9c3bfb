// Closed-form lowering for costing: the Program the cost model reads, built from the block
// structure of a schedule without isl.
//
// The search costs thousands of schedules; codegen::Lower derives each one's transfer
// boxes, sources and patterns with isl (the proof, and the source of every program that
// runs). For the affine block schedules the search space generates the same facts follow
// from arithmetic:
//   - every index is split into loops whose strides form a mixed radix (distribute and
//     divide), each distributed loop covering its whole mesh axis once;
//   - the data of one transfer instance along a tensor dim is then the index's fixed digits
//     (distributed loops: the rank's coordinate; serial loops outside the transfer: the
//     loop variable, turned by a rotation) plus its free ones: a box of
//     1 + sum over free loops of (extent - 1) * stride elements at
//     origin = sum over fixed loops of digit * stride;
//   - its source is the owner of that origin: per tensor dim and shard target, the block
//     index floor(origin / block) mod parts equals the target's value at the source's
//     coordinates, solved axis by axis (the reader's own coordinate on replicated axes);
//   - its pattern follows codegen/patterns.h's definitions, decided by evaluating the
//     source and origin over every value of the variables they mention.
// Whether a transfer has one source or gathers (ir::SingleSource, ir::GatherAxes) is still
// asked of ir/legality, which the search has already answered while judging the option.
//
// The result equals codegen::Lower(c, {.offsets = false}) up to the form of expressions:
// the same tree of loops and statements, boxes, patterns, and sources that agree on every
// rank and iteration, hence the same cost (search/closed_form_test.cc checks this over whole
// spaces). Schedules outside these forms get Unimplemented and go to isl.
#ifndef MESHTUNE_SEARCH_CLOSED_FORM_H_
#define MESHTUNE_SEARCH_CLOSED_FORM_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/computation.h"

namespace meshtune::search {

// Closed-form costing lowering with a memo of per-tensor transfer plans (they depend on the
// loops and on the tensor's own sharding and communicate: ir::Computation::LoopsKey and
// TensorKey). One per base Computation, on one thread (it asks the base's isl memo).
class ClosedFormLowering {
 public:
  ClosedFormLowering();
  ~ClosedFormLowering();
  ClosedFormLowering(const ClosedFormLowering&) = delete;
  ClosedFormLowering& operator=(const ClosedFormLowering&) = delete;

  // The costing Program of `c` (legal; see the file comment), or Unimplemented naming the
  // part of the schedule outside the closed forms.
  absl::StatusOr<codegen::Program> Lower(const ir::Computation& c);

  struct Plan;  // one tensor's transfer or reduction, memoized

 private:
  std::map<std::string, absl::StatusOr<std::shared_ptr<const Plan>>> plans_;
  std::map<std::string, absl::StatusOr<codegen::CommPattern>> patterns_;  // fetch patterns
};

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_CLOSED_FORM_H_
