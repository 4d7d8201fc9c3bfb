// Program: the lowered form of a Computation, one SPMD program that every rank runs.
//
// A tree of For, Alloc, Transfer, Compute and Reduce nodes whose expressions (Expr) are
// quasi-affine in loop variables and the rank's mesh coordinates (named after the mesh
// axes). Distributed loops are gone: they are the mesh coordinates. One Program feeds the
// cost model, the executor and the C++ emitter. Immutable once built; thread-safe to read.
//
// Prefetch (overlap of communication with computation). A Transfer or Reduce with
// prefetch = 1 is driven by the innermost For around it when that For's variable is the
// statement's loop (PrefetchedIn); the tree is the same as without prefetch, its buffer has
// two halves (runtime/rank/rank.h: Async, Wait), and the statement means, for that For over v
// in lo .. lo+E-1:
//   Transfer: at v == lo, the transfer for v is done (started and waited); then at every v,
//     where the statement sits: wait for v's data (started at v-1; nothing to wait for at
//     lo), and if v+1 < lo+E start the transfer for v+1 into the other half, with every
//     expression (source, offsets, a Shift's time loop) evaluated with the variable at
//     v+1. What runs after it in the body at v (the kernel) reads v's data while v+1's is
//     in flight. A Shift's ring step for v+1 sends the current half (v's block) and
//     receives into the other.
//   Reduce: at every v, where the statement sits: wait for v-1's reduction (nothing at lo),
//     then start v's; the buffer's Zero and kernels then use the other half, so v+1
//     computes while v's sums travel. After the For, the last reduction is waited for.
// A prefetched statement that no For drives runs as without prefetch (translation
// validation refuses such a Program; lowering never makes one). Every element reaches the
// same place as without prefetch: only when the communication runs changes.
//
// Blocks that do not divide an extent (ragged). A split of an extent N into P parts makes
// blocks of ceil(N/P): all full but the last, which is short, or empty past the end (ir's
// mixed radix, ir/primitives.h). The Program is the same on every rank, with the sizes of
// the full blocks; what is past a tensor's `shape` is padding:
//   - A shard is stored at `local_shape` on every rank (its full block; a dim the layout
//     keeps whole at least as long as the loops over its index reach). Local element l is
//     the tensor's element ShardStartAt + l when that lies within `shape` on every dim,
//     else padding: never data, starting as zeros, counted by no check.
//   - A kernel call covers, per ragged index (Compute::start), only the values below the
//     index's extent; the operands' slices keep their full sizes (their storage).
//   - Copies of a whole box (a view of the shard, Broadcast, Shift, SendRecv, a replicated
//     input's copies) move the full box, padding and all: every such box lies in the
//     source's storage. Pieces taken from holders (AllGather, AllToAll, the parts a
//     reduction adds into its holders) are clipped to `shape`: a rank holds only elements.
#ifndef MESHTUNE_CODEGEN_PROGRAM_H_
#define MESHTUNE_CODEGEN_PROGRAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "codegen/expr.h"
#include "ir/given_layout.h"

namespace meshtune::codegen {

// The kinds of communication pattern; what each means is its codegen::Pattern
// (codegen/pattern.h).
enum class PatternKind : int {
  kLocal,
  kBroadcast,
  kShift,
  kSendRecv,
  kAllGather,
  kReduce,
  kReduceScatter,
  kAllReduce,
  // A fetch whose box lies on several ranks' shards that no group along some axes shares:
  // each rank receives every piece of its box from a rank that holds it (itself where it
  // can), an all-to-all exchange over the whole mesh; `axes` empty.
  kAllToAll,
  // A reduction whose partial sums pass around a ring along axes[0] (ir/ring.h): at every
  // step of its loop but the last, each rank sends its buffer to the neighbour at +shift
  // and takes the one from -shift in its place, into which the next step's kernels add;
  // after the last step's kernels the buffer holds the whole sum of its box, added into
  // the rank's own shard, or with `hop` sent one step further first and added there
  // (Reduce::global names the box on the rank that adds it). The buffer is zeroed before
  // the loop, not in it; the statement sits in the body of its loop's For, after the
  // kernels, and is never prefetched.
  kRingReduce
};

// How a transfer's data moves between ranks (codegen/patterns.h derives it).
struct CommPattern {
  using Kind = PatternKind;
  Kind kind = Kind::kLocal;
  std::vector<int> axes;  // mesh axes of the group (broadcast, gather, reduce) or the ring
  int shift = 0;     // Shift: data comes from the neighbour at +shift along axes[0]; RingReduce:
                     // sums go to the neighbour at +shift
  bool hop = false;  // RingReduce: the last step's sums are added on the next rank

  // What the kind means is its Pattern's (codegen/pattern.h, PatternOf(kind)); these ask it.
  std::string Name() const;  // "Broadcast"
  // "Broadcast(axes=[0])", "Shift(axis=1, +1)", "Local", "RingReduce(axis=0, -1, hop)"
  std::string ToString() const;
  // An AllGather or AllToAll: the box is filled from the ranks that hold it (Transfer::global
  // says where it lies), with no single source.
  bool FromHolders() const;
  bool operator==(const CommPattern& o) const {
    return kind == o.kind && axes == o.axes && shift == o.shift && hop == o.hop;
  }
};

// A box inside a buffer: per dim an offset expression and a size.
struct Slice {
  std::vector<Expr> offset;
  std::vector<int64_t> size;
  int64_t Elements() const;
};

// One dim of a tensor's block layout: global index = sum of block * index(coords) + local.
struct DimLayout {
  std::vector<std::pair<int64_t, Expr>> blocks;  // (block size, block index over mesh coords)
};

// A tensor as the program sees it: global shape, per-rank shard, layout.
struct TensorInfo {
  std::string name;
  std::vector<std::string> dims;  // index names of its dims (first access)
  std::vector<int64_t> shape;
  std::vector<int64_t> local_shape;
  std::vector<DimLayout> layout;  // empty blocks: dim kept whole on every holder
  bool is_output = false;
  // Where the application holds the tensor (ir/layout.h); not block: the program starts
  // from it (an input, or a `+=` output) and ends in it (the output), redistributing into
  // and out of the shards above (runtime/given_layouts.h).
  ir::GivenLayout given;
};

struct Stmt;
using StmtPtr = std::shared_ptr<const Stmt>;

struct Block {
  std::vector<StmtPtr> body;
};
struct For {
  std::string var;
  Expr lo;
  int64_t extent = 0;  // iterations: var runs lo, lo+1, ..., lo+extent-1
  StmtPtr body;
};
// A transfer buffer comes to life here (buffers are sized once; zeroed for reductions).
struct Alloc {
  std::string buffer;
  std::vector<int64_t> shape;
  bool zero = false;
};
// Input communication: rank fills `buffer` with tensor[global box] from `source` (for an
// AllGather, from every rank along the pattern's axes; `source` and `src` are then unused).
struct Transfer {
  std::string tensor, buffer, loop;
  std::string
      time_loop;  // Shift: the loop along which the ring turns (fetch at its first iteration)
  CommPattern pattern;
  std::vector<Expr> source;  // the source rank's coordinates, one per mesh axis
  Slice src;                 // the box in the source's local shard
  Slice global;              // the same box in global indices
  int prefetch = 0;          // 1: double-buffered, the next step's fetch overlaps this one
};
// One kernel call (or one scalar update when nothing is tensorized).
struct Operand {
  std::string tensor;             // the tensor accessed
  std::string buffer;             // its local shard (the tensor's name) or a transfer buffer
  std::vector<std::string> dims;  // the index each buffer dim walks
  Slice slice;
};
struct Compute {
  std::string kernel;  // matmul, matmul_ta, matmul_tb, matmul_tab, mul, add, contraction
  bool sum = false;    // operands added (element-wise sum) rather than multiplied
  Operand out;
  std::vector<Operand> in;
  std::vector<std::pair<std::string, int64_t>> tile;  // extent per index in this call
  // Ragged indices (the loops over them reach past the extent; file comment): per index of
  // `tile` (same order) the global index of the call's first value of it (`start`, over
  // mesh coordinates and loop variables) and its extent. The call covers
  // Clipped(tile, extent, start) values of each: none when that is not positive (the call
  // is skipped). Both empty when no index is ragged or when lowered without offsets; an
  // index that is not ragged has extent 0 (never clipped).
  std::vector<Expr> start;
  std::vector<int64_t> extent;
};

// The values of a tile index of `size` a call covers when it starts at global `start` of
// an index of `extent` (0: not clipped): min(size, extent - start), at least 0.
inline int64_t Clipped(int64_t size, int64_t extent, int64_t start) {
  if (extent == 0) return size;
  const int64_t left = extent - start;
  return left < 0 ? 0 : (left < size ? left : size);
}
// Output communication: partial results in `buffer` (global box) summed into their holders.
struct Reduce {
  std::string tensor, buffer, loop;
  CommPattern pattern;
  Slice global;
  int prefetch = 0;  // 1: double-buffered, this step's reduction overlaps the next step
};

struct Stmt {
  std::variant<Block, For, Alloc, Transfer, Compute, Reduce> node;
};

struct Program {
  std::vector<std::string> axis_names;  // mesh coordinates, by axis
  std::vector<int64_t> axis_sizes;
  int dtype_bytes = 4;
  bool accumulate = false;  // '+=': the output starts from its own values
  // ir::Problem::result_on_layer: an output copied along mesh axes ends on the copies at
  // coordinate 0 of them alone (LayerAxes); else every copy holds the result.
  bool result_on_layer = false;
  std::vector<TensorInfo> tensors;
  std::vector<Alloc> buffers;  // every transfer buffer, for up-front allocation
  StmtPtr body;

  const TensorInfo* Tensor(const std::string& name) const;
  int64_t Ranks() const;
};

// The mesh axes (of size above 1) that no dim of `t`'s layout is split over: `t` is
// replicated along them, the same shard on every rank of such a group. For an input, the
// copies are made at each run by a broadcast from the group's rank at coordinate 0 of
// those axes (runtime/rank/rank.h), and costed so (cost/cost_model.h); in ascending order.
std::vector<int> ReplicatedAxes(const Program& p, const TensorInfo& t);

// The axes along which output `t` ends on one layer: only the ranks at coordinate 0 of
// them hold its result, and the other copies' partial sums are reduced onto those (2.5D's
// last step) rather than all-reduced. Empty unless the program was lowered with
// result_on_layer (then every copy holds the result); with it, the output's ReplicatedAxes
// save those its given layout keeps copies along (ir::GivenLayout::KeepsCopiesAlong:
// `replicated`, a grid not naming the axis), where every copy is the result; empty for an
// input.
std::vector<int> LayerAxes(const Program& p, const TensorInfo& t);

// Whether the rank at `coords` holds the result of output `t` (or, for an input, its
// shard): it sits at coordinate 0 of every LayerAxes.
bool OnLayer(const Program& p, const TensorInfo& t, const std::vector<int64_t>& coords);

// What a run takes as `t`'s TensorSpec::replicated_axes (runtime/rank/rank.h): an input's
// ReplicatedAxes, broadcast at each run, or none when `redistributed` from its given layout
// (which makes the copies); the output's LayerAxes.
std::vector<int> CopyAxes(const Program& p, const TensorInfo& t, bool redistributed);

// The global index of the first element of tensor `t`'s shard on the rank at `coords`.
std::vector<int64_t> ShardStartAt(const Program& p, const TensorInfo& t,
                                  const std::vector<int64_t>& coords);

// Whether `a`'s tensor `ta` and `b`'s `tb` (the same tensor in two Programs on one mesh)
// are the same boxes on every rank: same shape, local shape and first element.
bool SameShards(const Program& a, const TensorInfo& ta, const Program& b, const TensorInfo& tb);

// Whether intermediate `tensor`, written by `producer` and read by `consumer` (two
// statements of a program on one mesh), is read in place: on every rank the consumer's
// shard is the producer's output shard and the producer's shard holds its result there.
bool ReadInPlace(const Program& producer, const Program& consumer, const std::string& tensor);

// Whether `reader` reads `tensor` where it lives in `home` (two statements of a program on
// one mesh): ReadInPlace when `home` writes it, SameShards when it is an input `home` reads;
// false when either Program lacks the tensor.
bool ReadsWhereItLives(const Program& home, const Program& reader, const std::string& tensor);

// Whether tensor `t`'s given layout is its sharding: a grid layout (ir/layout.h) whose
// block on every rank is the rank's shard, so that the program runs on the application's
// storage as it is and nothing is redistributed.
bool InPlace(const Program& p, const TensorInfo& t);

// Whether tensor `t` is redistributed between its given layout and its shards at each run:
// given (not block) and not in place.
bool Redistributed(const Program& p, const TensorInfo& t);

// The program's kernel call (every Program has exactly one Compute node).
const Compute* KernelCall(const Program& p);

// The prefetched Transfer and Reduce statements `f` drives (see the file comment): those
// with prefetch set and loop == f.var in its body outside any nested For, in program order.
std::vector<const Stmt*> PrefetchedIn(const For& f);

// Whether `s` is a Transfer or Reduce with prefetch set.
bool IsPrefetched(const Stmt& s);

// What one transfer or reduction costs a rank in data, over the whole program.
struct TransferSummary {
  std::string tensor, loop;
  CommPattern pattern;
  int64_t elements = 0;        // per instance
  int64_t instances = 0;       // how often it runs (product of the enclosing loop extents)
  int64_t bytes_per_rank = 0;  // received over the program; 0 for Local (a RingReduce: its
                               // sends, one a step but the last, and then with hop)
  int prefetch = 0;            // the statement's prefetch
  int64_t buffer_bytes = 0;    // its buffer's memory per rank: both halves when prefetched
};

// The transfers and reductions of `p`, in program order, after the copies of its
// replicated inputs (loop "copies": a broadcast along ReplicatedAxes into the shard, no
// buffer) and the redistributions from given layouts into the shards (loop "layout"),
// and before the output's back into its given layout (loop "layout-out"); those two are
// SendRecv over every axis (an all-to-all exchange), no buffer.
std::vector<TransferSummary> Summarize(const Program& p);

// How answers and tuning records list a transfer: "TENSOR@LOOP PATTERN", e.g.
// "A@ko Broadcast(axes=[1])"; a given layout's redistribution "A@layout AllToAll". The one
// place the label is built.
std::string PatternLabel(const std::string& tensor, const std::string& loop,
                         const CommPattern& pattern);

// `label` (a PatternLabel) with its tensor and loop passed through `rename`; any other text
// is returned as it is.
std::string RenamePatternLabel(const std::string& label,
                               const std::function<std::string(const std::string&)>& rename);

StmtPtr MakeStmt(std::variant<Block, For, Alloc, Transfer, Compute, Reduce> node);

// Transfer or Reduce statement `s` with its prefetch set to `prefetch` (`s` itself when 0):
// lowering shares one statement between the plain and prefetched forms of a communicate.
StmtPtr WithPrefetch(const StmtPtr& s, int prefetch);

// Indented tree dump of the program, for debugging and lowering logs.
std::string Dump(const Program& p);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_PROGRAM_H_
