// Computation: a Problem on a Mesh with its schedule, shardings and transfers, on isl.
//
// The statement domain is S[i...] with one dimension per index (sorted by name), each tensor
// has an access relation S[i...] -> T[e...], and the schedule maps the domain onto the
// time-space S[t...] whose dimensions are the loops (serial, distributed over a mesh axis,
// or tensorized into one kernel call). Each sharded tensor has a layout T[e] -> T[mesh
// coords..., local index...] (multi-valued when replicated) and each communicated tensor a
// Communication (a communicate clause) at one loop.
//
// Computations are immutable values: schedule primitives (primitives.h) return new ones
// through the With* functions. Copies are cheap (isl objects are reference counted, the
// problem and mesh are shared). All Computations derived from one Create() share an isl
// context and must be used on one thread at a time.
#ifndef MESHTUNE_IR_COMPUTATION_H_
#define MESHTUNE_IR_COMPUTATION_H_

#include <isl/cpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/axis_expr.h"
#include "ir/isl_util.h"
#include "ir/mesh.h"
#include "ir/problem.h"

namespace meshtune::ir {

enum class LoopKind { kSerial, kDistributed, kTensorized };
absl::string_view LoopKindName(LoopKind kind);  // "serial", "distributed", "tensorized"

struct Loop {
  std::string name;
  int64_t extent = 1;
  LoopKind kind = LoopKind::kSerial;
  int axis = -1;                    // mesh axis of a distributed loop
  std::string origin;               // the problem index this loop walks (part of)
  int64_t stride = 1;               // origin index = sum of stride * value over its loops
  std::vector<std::string> rotate;  // a rotated loop runs (t + step * sum rotate) mod extent
  int64_t rotate_step = 1;          // the step of the rotation (1: neighbour to neighbour)
};

// One `dim@target` of a shard call: tensor dim (named by the index of the tensor's first
// access) and the mesh-axis expression that picks the block.
struct ShardTarget {
  std::string dim;
  AxisExpr target;
  bool operator==(const ShardTarget& o) const { return dim == o.dim && target == o.target; }
};

struct Sharding {
  std::vector<ShardTarget> targets;
  isl::map layout;  // T[e] -> T[mesh coords..., local index...]
  isl::map owners;  // T[e] -> Mesh[r]: the ranks holding element e
  std::vector<int64_t> local_shape;
  // Per dim, outermost first: (block size, block index). The dim's global index is the
  // sum of block size * index(rank coords) plus the local index.
  std::vector<std::vector<std::pair<int64_t, AxisExpr>>> blocks;
  std::vector<bool> replicated_axes;  // axes no target names: T is copied along them
};

// communicate(T, loop, rotate=[...], prefetch=1): before each iteration of `loop`, T's
// elements used inside it are fetched (inputs), or after it reduced to their owners
// (outputs). With prefetch = 1 the buffer has two halves: an input's fetch for the next
// iteration is started before this iteration's kernel, an output's reduction of this
// iteration completes while the next one computes (codegen/program.h has the semantics).
struct Communication {
  std::string tensor;
  std::string loop;
  std::vector<std::string> rotate;
  int prefetch = 0;  // 0 or 1
  int64_t step = 1;  // the rotation's step (with rotate)
};

// InvalidArgument when a mesh axis of `mesh` shares a name with an index or a tensor of
// `problem` ("mesh axis k has the same name as an index of C[m,n] += ...; rename one").
absl::Status CheckMeshNames(const Problem& problem, const Mesh& mesh);

class Computation {
 public:
  // The unscheduled computation: identity schedule, all loops serial, every tensor
  // replicated. Fails with InvalidArgument when a mesh axis shares a name with an index
  // or tensor of the problem.
  static absl::StatusOr<Computation> Create(const Problem& problem, const Mesh& mesh);

  const Problem& problem() const { return base_->problem; }
  const Mesh& mesh() const { return base_->mesh; }
  isl::ctx ctx() const { return base_->isl->ctx(); }

  const isl::set& domain() const { return base_->domain; }  // S[i...]
  // S[i...] -> T[e...], the union of T's accesses. CHECK-fails for unknown tensors.
  const isl::map& Access(const std::string& tensor) const;
  const isl::set& TensorSet(const std::string& tensor) const;  // T[e...] within bounds
  // The access of operand i: 0 is the output, i >= 1 the right-hand side's (i-1)th access.
  const isl::map& OperandAccess(size_t i) const { return base_->operand_accesses[i]; }
  // S[i...] -> S[t...], built from the loops on first use.
  const isl::map& schedule() const;
  const std::vector<Loop>& loops() const { return loops_; }
  int LoopIndex(absl::string_view name) const;  // -1 when absent
  // nullptr when `tensor` is replicated on every rank.
  const Sharding* sharding(const std::string& tensor) const;
  // T[e] -> Mesh[r]; every rank for a tensor without sharding.
  isl::map Owners(const std::string& tensor) const;
  const std::vector<Communication>& transfers() const { return transfers_; }
  const Communication* TransferOf(const std::string& tensor) const;  // nullptr when none
  const std::string& kernel() const { return kernel_; }              // tensorize op, "" when none
  // How far the loops over `index` reach: the product of their extents (they are a mixed
  // radix), at least the index's extent; more when its blocks do not divide it (ragged:
  // the instances past the extent are not in the domain).
  int64_t Reach(const std::string& index) const;
  // Whether the loops over `index` reach past its extent.
  bool Ragged(const std::string& index) const;
  // How `tensor` is stored on a rank: per dim its block (sharding's local_shape), or for a
  // dim kept whole its extent or, when further, the reach of the loops over its index, so
  // that every box of the loops lies in the storage (codegen/program.h).
  std::vector<int64_t> StorageShape(const std::string& tensor) const;
  // Whether the loop j is the outermost loop of its index among the loops of more than one
  // iteration: its value is then the index's block number, with no wrap-around.
  bool OutermostOfIndex(size_t j) const;
  // S[i...] -> Mesh[r...]: the ranks that execute each statement instance (every rank
  // along a mesh axis that no loop is distributed over).
  isl::map Execution() const;
  // S[i...] -> P[r..., t_0..t_{depth-1}]: the rank executing each instance and the values
  // of the outermost `depth` loops (distributed loops equal their rank coordinate).
  // `padded`: over the loops' whole reach, the points past an extent included (a rank
  // whose blocks all lie past the end still has its first point there).
  isl::map RankAndTime(int depth, bool padded = false) const;
  // The schedule with loop names, in isl notation.
  std::string ScheduleString() const;
  std::string LayoutString(const std::string& tensor) const;  // "replicated" or isl text

  // Memo keys for analyses that a search repeats over many schedules of one base: two
  // computations of one base with equal LoopsKey() have the same loops (names, extents,
  // kinds, axes, rotations) and kernel; equal TensorKey(t) adds the same sharding and
  // transfer of t (its loop and rotation, not its prefetch, which changes no analysis of
  // the data: where it matters, callers add it, as ir::LegalityKey does). Per-tensor
  // results (legality, lowered transfers) depend on no more.
  const std::string& LoopsKey() const;
  std::string TensorKey(const std::string& tensor) const;

  // Results of analyses remembered across every computation derived from one base (a
  // search asks the same questions of thousands of schedules). `key` must name everything
  // the result depends on, usually LoopsKey() plus the question; `make` computes it on a
  // miss. Like the isl context the memo is for one thread at a time.
  isl::map MemoMap(const std::string& key, const std::function<isl::map()>& make) const;
  bool MemoBool(const std::string& key, const std::function<bool()>& make) const;
  int64_t MemoInt(const std::string& key, const std::function<int64_t()>& make) const;

  // Functional updates; each returns a new value.
  Computation WithLoops(std::vector<Loop> loops) const;
  Computation WithSharding(const std::string& tensor, Sharding sharding) const;
  Computation WithTransfer(Communication transfer) const;
  Computation WithKernel(std::string op) const;

  // Positional isl variable names used when building maps from text: i<k> for domain
  // dims, t<k> for loops, r<k> for mesh axes, e<k> / l<k> for tensor / local dims.
  static std::vector<std::string> Vars(absl::string_view prefix, size_t n);

 private:
  struct Base {
    std::shared_ptr<IslContext> isl;  // first: destroyed last
    Problem problem;
    Mesh mesh;
    isl::set domain;
    std::map<std::string, isl::map> accesses;
    std::vector<isl::map> operand_accesses;
    std::map<std::string, isl::set> tensor_sets;
    // MemoMap / MemoBool / MemoInt; isl objects of `isl`'s context.
    mutable std::unordered_map<std::string, isl::map> memo_maps;
    mutable std::unordered_map<std::string, bool> memo_bools;
    mutable std::unordered_map<std::string, int64_t> memo_ints;
  };
  Computation() = default;
  // The value of loop j at a domain point: the index's block number floor(i/stride),
  // wrapped mod extent unless it is the index's outermost loop (OutermostOfIndex), shifted
  // by its rotation; 0 for a loop of one iteration.
  isl::aff LoopValue(size_t j) const;
  // S[i...] -> tuple[r..., t_0..t_{depth-1}]: executing rank (every coordinate along axes
  // no loop is distributed over) and the outermost `depth` loop values; on the domain, or
  // when `padded` on the box of every index's Reach.
  isl::map PlacedMap(const std::string& tuple, int depth, bool padded = false) const;

  std::shared_ptr<const Base> base_;
  std::vector<Loop> loops_;
  mutable std::optional<isl::map> schedule_;      // cache, derived from loops_
  mutable std::optional<std::string> loops_key_;  // cache, derived from loops_ and kernel_
  std::map<std::string, Sharding> shardings_;
  std::vector<Communication> transfers_;
  std::string kernel_;
};

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_COMPUTATION_H_
