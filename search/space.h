// The schedule space of a problem on a mesh, as structured choices that print as traces.
//
// A point of the space is a Genome: a loop nest (which indices are distributed over which
// mesh axes, which others are divided into time loops and in what order, the kernel the
// innermost loops fold into), a rotation (none, or a serial loop turned by some distributed
// loops; and whether every communicate at a time loop is prefetched — double-buffered to
// overlap the loop's steps, all of them or none), and per tensor one TensorOption (its
// shard targets and the loop it is communicated at, if any). ToTrace writes the genome as
// the trace a user would write.
//
//   nest:      distribute([m,n], [mo,no], [mi,ni], [x,y]); divide(k, ko, ki, 8);
//              reorder(mo, no, ko, mi, ni, ki); ... tensorize([mi, ni, ki], matmul)
//   rotation:  ko by [mo, no], prefetched   (written on every communicate at ko; prefetch=1
//              on every communicate at a time loop; a step other than 1 as step=N)
//   options:   A: m@x, k@(x+y)%8 at ko;  B: k@(x+y)%8, n@y at ko;  C: m@x, n@y
//
// The space is built from the problem and mesh alone; legality is decided elsewhere
// (search/evaluator.h). Plain values; thread-compatible.
#ifndef MESHTUNE_SEARCH_SPACE_H_
#define MESHTUNE_SEARCH_SPACE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/computation.h"
#include "ir/mesh.h"
#include "ir/trace.h"

namespace meshtune::search {

struct SpaceOptions {
  // Storage policy. false (default): every tensor is stored spread over all ranks with no
  // copies (as ScaLAPACK and most applications hold their data), so each layout names
  // every mesh axis — except a tensor too small for that (every such layout would leave a
  // rank an empty block, x[j] with j=16 on 5 ranks), which is copied along the axes it
  // cannot fill. true: tensors may also be replicated along axes (2.5D-style schedules
  // that trade memory for communication; bound them with the mesh's memory budget).
  bool allow_replication = false;
  // At most this many indices are divided into time loops.
  int max_divided = 2;
  // Skewed layouts ((x+y)%s) for rotating schedules such as Cannon's.
  bool skew = true;
  // Distributed indices split further: one index may run over two mesh axes (Tesseract's
  // rows over [q, d]), a distributed index's local loop may be divided into time loops
  // (2.5D: k over the layers, then in steps inside each), rotations may turn by any two
  // distributed loops (2.5D Cannon, inside each layer), and a dim spread over several axes
  // may be skewed on one of them. Off by default: the space grows several times over.
  bool split_distributed = false;
  // Rotations in steps other than 1: a time loop of E steps turned by one distributed loop
  // over an axis of size s (E a multiple of s, E > s) also with step E / s, so that each
  // rank starts at its own block of a block layout (Cannon with k divided finer than the
  // mesh). Off by default.
  bool rotation_steps = false;
  // Transfers whose box lies on several ranks' shards that no all-gather covers, made as
  // an all-to-all exchange over the mesh (CommPattern::Kind::kAllToAll): a time loop whose
  // steps straddle the blocks of a layout, a box that needs another rank's neighbour.
  // Legal in a trace either way; off, the search rejects them as multi_source_transfer.
  bool all_to_all = false;
};

// A loop nest: the trace's loop calls and the kernel.
struct LoopNest {
  std::vector<ir::Instruction> calls;  // distribute, divide..., reorder
  ir::TensorizeCall tensorize;
  std::vector<std::string> distributed;  // distributed loops, by mesh axis order of the call
  std::vector<std::string> serial;       // time loops, outermost first
  std::vector<int64_t> serial_extents;   // their extents, in the same order
  std::string Describe() const;          // "m@x n@y | ko/8" for logs
};

// A rotation: the serial loop `loop` runs (t + step * sum of `by`) mod extent. Empty loop:
// none.
// With `prefetch`, every tensor communicated at a time loop is prefetched (all or none: the
// space doubles at most, and the search toggles prefetch as it changes the rotation).
struct Rotation {
  std::string loop;
  std::vector<std::string> by;
  bool prefetch = false;
  int64_t step = 1;
};

// One tensor's layout and communication.
struct TensorOption {
  std::vector<ir::ShardTarget> targets;  // empty: replicated on every rank
  std::string comm_loop;                 // "" when not communicated
  // comm_loop is a time loop (serial, of several iterations), where a prefetched rotation
  // prefetches it; not the kernel's outermost loop.
  bool at_time_loop = false;
  // A skewed layout ((x+y)%s) exists for rotation: the space holds it only together with a
  // rotation of the loop the tensor is communicated at (see Admissible).
  bool skewed = false;
  std::string Describe() const;  // "m@x, k@y at ko"
};

// The choices for one loop nest: its rotations and each tensor's options.
struct NestChoices {
  LoopNest nest;
  std::vector<Rotation> rotations;                 // rotations[0] is "none"
  std::vector<std::vector<TensorOption>> options;  // per tensor, in Problem::Tensors() order
};

// A point of the space (indices into a Space's tables).
struct Genome {
  int nest = 0;
  int rotation = 0;
  std::vector<int> options;  // per tensor
  bool operator==(const Genome& o) const {
    return nest == o.nest && rotation == o.rotation && options == o.options;
  }
};

// Whether option `o` belongs to the space under rotation `r`: unskewed options always,
// skewed ones only when communicated at the rotated loop.
inline bool Admissible(const TensorOption& o, const Rotation& r) {
  return !o.skewed || (!r.loop.empty() && o.comm_loop == r.loop);
}

// Whether rotation `r` is "none" and not prefetched: every point of it is distinct.
inline bool Plain(const Rotation& r) { return r.loop.empty() && !r.prefetch; }

// Whether option `o` is one that `r` changes: communicated at the rotated loop or, for a
// prefetch without rotation, at a time loop. A point of a rotation that is not Plain is in
// the space only when some tensor's option is (the others equal points of a plainer one).
inline bool Distinct(const TensorOption& o, const Rotation& r) {
  if (!r.loop.empty()) return o.comm_loop == r.loop;
  return r.prefetch && o.at_time_loop;
}

// The meshes of `ranks` ranks: every factorisation into 1 to 3 axes of size >= 2 with
// non-increasing sizes (4 -> x=4; x=2,y=2), axes named x, y, z — or, when one of those is
// in `taken` (the problem's tensor and index names), p, q, r, else u, v, w, else a0, a1,
// a2. `mem_per_rank` is copied on each.
std::vector<ir::Mesh> MeshFactorisations(int64_t ranks, std::optional<int64_t> mem_per_rank,
                                         const std::set<std::string>& taken = {});

class Space {
 public:
  // The space of `base`'s problem on its mesh. Fails when the problem has more indices
  // than the enumeration handles (8) or names the space needs are taken.
  static absl::StatusOr<Space> Build(const ir::Computation& base, const SpaceOptions& options);

  const std::vector<NestChoices>& nests() const { return nests_; }
  const std::vector<std::string>& tensors() const { return tensors_; }

  // The genome as a trace (calls in the order distribute, divide, reorder, shard,
  // communicate, tensorize).
  ir::Trace ToTrace(const Genome& g) const;

  // The genome of `trace` when the space holds it: the same loop calls and kernel, the same
  // shard targets and communicate loop per tensor, the same rotation and prefetch (set on
  // every communicate at a time loop, or on none), with shard and
  // communicate calls in any order. nullopt otherwise (used to seed a search with a known
  // schedule and to check that the space contains the classic algorithms).
  std::optional<Genome> Find(const ir::Trace& trace) const;

  // SpaceOptions::all_to_all: whether transfers from several ranks' shards are points.
  bool all_to_all() const { return all_to_all_; }

 private:
  std::vector<std::string> tensors_;
  std::vector<NestChoices> nests_;
  bool all_to_all_ = false;
};

}  // namespace meshtune::search

#endif  // MESHTUNE_SEARCH_SPACE_H_
