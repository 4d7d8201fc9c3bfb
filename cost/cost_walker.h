// Internal to the cost model (cost/cost_model.cc): CostWalker, which walks a Program and
// tallies what each costed rank spends. Its methods are defined by concept in
// cost_walker.cc (the walk), cost_walker_overlap.cc (loops driving prefetched statements),
// cost_walker_transfers.cc (transfers and reductions) and cost_walker_layouts.cc (the copies
// of replicated inputs and the redistributions of given layouts).
#ifndef MESHTUNE_COST_COST_WALKER_H_
#define MESHTUNE_COST_COST_WALKER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/pattern.h"
#include "codegen/program.h"
#include "cost/cost_axes.h"
#include "cost/cost_params.h"
#include "cost/cost_report.h"
#include "cost/cost_values.h"
#include "cost/given_loads.h"

namespace meshtune::cost::internal {

using codegen::Block;
using codegen::CommPattern;
using codegen::Compute;
using codegen::Expr;
using codegen::For;
using codegen::Program;
using codegen::Reduce;
using codegen::StmtPtr;
using codegen::Transfer;
using Kind = CommPattern::Kind;

// How a For is costed: once times its extent, first iteration plus one representative of
// the rest, or every iteration.
enum class LoopMode { kOnce, kFirstThenRest, kEach };

// The classes of communication TermScales scales.
enum class TermClass { kPointToPoint, kCollective, kReduction };

// Per-rank totals of one Transfer or Reduce statement.
struct Tally {
  std::string tensor, loop;
  CommPattern pattern;
  int prefetch = 0;
  bool reduction = false;  // a Reduce statement (else a Transfer)
  double scale = 1;        // the TermScales multiplier of its class
  // Seconds of the local copies one instance makes (CostWalker::CopySeconds), fixed per
  // statement: worked out once, not at every visit of the walk.
  double copy = 0;
  std::vector<double> seconds;
  std::vector<int64_t> messages, words;
  // A point-to-point fetch or ring step, a collective (a broadcast or all-gather), or a
  // reduction: which TermScales multiplier applies and which total the seconds join.
  TermClass term = TermClass::kPointToPoint;
};

class CostWalker {
 public:
  // With `max_ranks` > 0, costs at most that many classes and charges a point-to-point
  // fetch only the receive (a lower bound on every costed rank: LowerBound).
  CostWalker(const Program& p, const CostParams& params, bool classes, int64_t max_ranks = 0);

  void Walk(const StmtPtr& s, int64_t times);

  // Rank-steps the walk of `s` (visited `visits` times) evaluates: each Transfer or Reduce
  // visit costs one per costed rank. Saturates at INT64_MAX.
  int64_t Work(const StmtPtr& s, int64_t visits) const;

  // The largest total among the costed ranks.
  double LowerBound() const;

  CostReport Report() const;

 private:
  // Numbers the Transfer and Reduce statements in program order.
  void Index(const StmtPtr& s);

  void AddTally(const StmtPtr& s, const std::string& tensor, const std::string& loop,
                const CommPattern& pattern, int prefetch, double copy, TermClass term);

  void WalkFor(const For& f, int64_t times);

  // The statements of a loop's body whose cost does not change with its variable, and the
  // others.
  struct Parts {
    std::vector<StmtPtr> invariant, varying;
  };
  Parts Split(const For& f) const;

  // What one iteration of a loop with prefetched statements costs, per rank.
  struct Iteration {
    double compute = 0;           // kernels inside (the same on every rank)
    std::vector<double> nested;   // per rank: what loops inside already hide
    std::vector<double> in, out;  // per rank: the prefetched transfers / reductions
  };

  // Walks one iteration of `f`'s body (the loop variable set), counted `count` times, and
  // returns what a single one costs.
  Iteration WalkIteration(const std::vector<StmtPtr>& body,
                          const std::vector<const codegen::Stmt*>& driven, double count,
                          int64_t times);

  // A loop that drives prefetched statements (codegen::PrefetchedIn). Everything is charged
  // as in a plain loop; what overlap hides is counted in hidden_: at step i the kernels
  // (less what inner loops already hide with them) run while step i+1's transfers and step
  // i-1's reductions are in flight, so per rank the loop saves
  //   overlap * sum over i of min(compute_i, in_{i+1} + out_{i-1})   (in_E = out_-1 = 0),
  // i.e. with overlap 1 it costs in_0 + sum_i max(compute_i, in_{i+1} + out_{i-1}) +
  // out_{E-1} plus its other communication, serial. The kernels of a step with something in
  // flight run in row chunks; without prefetched reductions the last step has nothing in
  // flight, so it is walked on its own, with whole kernels.
  void WalkOverlapped(const For& f, const std::vector<const codegen::Stmt*>& driven, size_t slot,
                      int64_t times);

  // Adds `times` instances of `seconds` (scaled by the class) and `messages` received (each
  // with TermScales::message's wait) to rank r's tally.
  void Charge(Tally& t, int64_t r, double seconds, int64_t words, int64_t messages, int64_t times);

  // What the transfer's step runs (codegen/pattern.h), costed by its runtime calls.
  void CostTransfer(const Transfer& t, Tally& tally, int64_t times);

  // An all-to-all fetch: each rank receives, one message from each, the pieces of its box
  // that the layout's other blocks hold (blocks lie at multiples of the shard's extent
  // along each dim), and sends about as much (its pieces to the others are alike), plus
  // the copies into the buffer (CopySeconds).
  void AllToAll(const Transfer& t, Tally& tally, int64_t times);

  // The copies of each input the layout replicates (codegen::ReplicatedAxes), made once a
  // run by a broadcast of the shard along those axes from their coordinate 0: charged to
  // every rank, as a transfer "TENSOR@copies".
  void CostCopies();

  // The redistributions of tensors in given layouts (cost/given_loads.h), each one
  // all-to-all exchange a run: a rank pays the calibrated all-to-all over the mesh for the
  // larger of the bytes it sends and receives (without a calibrated one, a message per
  // peer it exchanges with and those bytes at beta), and a copy pass over what it packs,
  // unpacks and copies locally (at the strided rate where a piece has a stride, as in a
  // ScaLAPACK local matrix). Charged as transfers
  // "TENSOR@layout" (into the shards) and "TENSOR@layout-out" (back), point-to-point.
  void CostGiven();

  void ChargeLoads(const std::string& tensor, const std::string& loop,
                   const std::vector<runtime::RankLoad>& loads);

  // A general fetch on the ranks in `active`: each pays max(receives, sends) messages.
  void PointToPoint(const Transfer& t, Tally& tally, const std::vector<bool>& active,
                    int64_t times);

  // A reduction's collective, then its sums added into the holders' shards, charged to
  // every rank of the group: the whole box for a reduce (the root's add, on the critical
  // path) and an all-reduce (each adds what it holds, at most the box), a 1/g piece for a
  // reduce-scatter, the box alone for a local add (no communication).
  void CostReduce(const Reduce& red, Tally& tally, int64_t times);

  // How many copies of each element of `tensor` hold its result within a group along
  // `axes`: the product of the sizes of those of `axes` it is replicated along but does not
  // end on one layer along.
  int64_t CopiesIn(const std::string& tensor, const std::vector<int>& axes) const;

  // The ring reductions For `f` drives (CommPattern::Kind::kRingReduce, in its body), for
  // `times` passes of it: each pass sends the buffer to the next rank at every step but the
  // last (and at the last too with `hop`), then adds it into the shard: E - 1 (or E)
  // messages of the box and one add.
  void CostRings(const For& f, int64_t times);

  // A collective over the ranks along `axes`, and at least its algorithm's form in the
  // inter-node numbers when the group spans nodes.
  double CollectiveSeconds(Collective c, const std::vector<int>& axes, double w,
                           bool nonblocking) const;

  // Every mesh axis, ascending.
  std::vector<int> AllAxes() const;

  // Whether ranks along `axes` may sit on different nodes (OuterAxes).
  bool Across(const std::vector<int>& axes) const;

  // One message of `bytes`, between nodes when `across`.
  double Message(bool across, double bytes) const;

  // The axes along which `t`'s source is not the reader's own coordinate.
  std::vector<int> SourceAxes(const Transfer& t) const;

  // One call of collective `c` (its nonblocking form for a prefetched statement) over `g`
  // ranks on `w` bytes: its own calibrated line, or the broadcast's numbers in the
  // algorithm's form (CostParams).
  double CollectiveSeconds(Collective c, int64_t g, double w, bool nonblocking) const;

  // The local copies one instance of `t` makes on a rank, when copy costs anything. An
  // all-gather over g ranks of w bytes: each rank's part (the box split along the dims the
  // gathered axes lay out) packed when it is not contiguous in its shard (w/g), and the
  // parts received unpacked from a staging array when they are not contiguous in the
  // buffer (w(g-1)/g). A broadcast, point-to-point fetch or ring: the box, packed by its
  // sender when it is not contiguous in the sender's shard. 0 otherwise.
  double CopySeconds(const Transfer& t) const;

  const Program& p_;
  const CostParams& params_;
  const bool shortcuts_;  // rank classes and invariant statements hoisted out of loops
  RankValues values_;
  std::unordered_map<const For*, LoopMode> modes_;
  std::vector<const For*> fors_;  // the loops around the walk, outermost first
  std::unordered_map<const codegen::Stmt*, size_t> index_;
  // Per kernel statement: one call's seconds as is and in a prefetched loop's row chunks.
  std::unordered_map<const codegen::Stmt*, std::array<double, 2>> kernels_;
  std::vector<Tally> tallies_;
  std::vector<double> comm_;    // per rank
  std::vector<double> hidden_;  // per rank: communication and compute overlapping each other
  Values words_;                // per rank
  std::vector<bool> outer_;     // per mesh axis: whether ranks along it may be on two nodes
  Values source_, sends_;       // scratch of CostTransfer and PointToPoint
  double compute_ = 0;          // the same on every rank: one SPMD kernel sequence
  // Loops around the walk that drive prefetched statements and have one in flight at the
  // walked iteration: kernels then run in row chunks (runtime/rank/rank_kernel.cc).
  int inflight_ = 0;
};

}  // namespace meshtune::cost::internal

#endif  // MESHTUNE_COST_COST_WALKER_H_
