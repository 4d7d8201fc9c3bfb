// Internal to the validator (codegen/validate/validate.h): the Validator class, whose methods are
// defined by concept in validate.cc (structure, Run), validate_instances.cc (instances and
// their order), validate_transfers.cc, validate_reductions.cc, validate_kernels.cc and
// validate_paths.cc (what reaches each holder of the output).
#ifndef MESHTUNE_CODEGEN_VALIDATE_VALIDATOR_H_
#define MESHTUNE_CODEGEN_VALIDATE_VALIDATOR_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/pattern.h"
#include "codegen/program.h"
#include "codegen/validate/unsoundness.h"
#include "codegen/validate/validate_support.h"
#include "ir/computation.h"
#include "ir/problem.h"

namespace meshtune::codegen::validation {

// How validation models what reduction `red` runs (codegen/pattern.h, its step's runtime
// calls): partial sums riding a ring, each rank adding into its own shard, or a collective
// over the group along `axes` (every member ending with the sum with `all`).
struct ReduceModel {
  enum class Kind { kRing, kOwn, kGroup };
  Kind kind = Kind::kOwn;
  bool all = false;
  std::vector<int> axes;
};

// The model of `red`; Unimplemented for a reduction validation does not model.
absl::StatusOr<ReduceModel> ModelOf(const Reduce& red);

class PathReads;

class Validator {
 public:
  Validator(const ir::Computation& c, const Program& p)
      : c_(c), p_(p), prob_(c.problem()), ctx_(c.ctx()), na_(p.axis_names.size()) {}

  absl::Status Run();
  const std::optional<Unsoundness>& found() const { return found_; }

 private:
  // ---- reporting ----
  absl::Status Unsound(std::string tensor, std::string loop, Point rank, std::string message) {
    Unsoundness u;
    u.tensor = std::move(tensor);
    u.loop = std::move(loop);
    u.rank = std::move(rank);
    u.message = std::move(message);
    found_ = u;
    return absl::FailedPreconditionError(u.ToString());
  }
  std::string RankText(const Point& r) const {
    std::vector<std::string> parts;
    for (size_t a = 0; a < r.size() && a < na_; ++a)
      parts.push_back(absl::StrCat(p_.axis_names[a], "=", r[a]));
    return absl::StrCat("rank (", absl::StrJoin(parts, ", "), ")");
  }
  // "rank (x=0, y=1) at ko=1" for the instance at `at` in witness `w`.
  std::string InstanceAt(const Point& w, size_t at) const {
    const Node& n = nodes_[w[at + na_]];
    std::vector<std::string> parts;
    for (size_t k = 0; k < n.depth(); ++k)
      parts.push_back(absl::StrCat(n.loops[k]->var, "=", w[at + na_ + 1 + k]));
    return RankText(Slice(w, at, na_)) + (parts.empty() ? "" : " at " + absl::StrJoin(parts, ", "));
  }
  const Node& NodeOf(const Point& w, size_t at) const { return nodes_[w[at + na_]]; }
  Point RankOf(const Point& w, size_t at) const { return Slice(w, at, na_); }
  Point LoopsOf(const Point& w, size_t at) const { return Slice(w, at + na_ + 1, depth_); }
  std::string Elem(const std::string& tensor, const Point& e) const {
    return absl::StrCat(tensor, "[", Join(e), "]");
  }
  // Element `a` of the statement instance whose index values are `s` (domain order).
  std::string AccessText(const ir::TensorAccess& a, const Point& s) const {
    Point e;
    for (const std::string& idx : a.indices) e.push_back(s[prob_.IndexPosition(idx)]);
    return Elem(a.tensor, e);
  }
  std::string OutputText(const Point& s) const { return AccessText(prob_.output, s); }
  // "C[0, 1] += A[0, 2] * B[2, 1]".
  std::string InstanceText(const Point& s) const {
    std::vector<std::string> ins;
    for (const ir::TensorAccess& a : prob_.operands) ins.push_back(AccessText(a, s));
    return absl::StrCat(OutputText(s), " += ", absl::StrJoin(ins, Combine()));
  }
  std::string Combine() const {
    return prob_.combine == ir::Problem::Combine::kSum ? " + " : " * ";
  }

  // ---- structure ----
  absl::Status Collect(const StmtPtr& s, std::vector<const For*>* loops,
                       std::vector<int64_t>* order);
  absl::Status CheckStructure();
  // The program's mesh and tensors fit the statement (which must not read its output).
  absl::Status CheckFitsStatement() const;
  // Each of `axes` names a mesh axis, none twice.
  bool ValidAxes(const std::vector<int>& axes) const;
  // A node's offsets, buffers and axes are what the runtime can index.
  absl::Status CheckTransferFields(const Transfer& t);
  absl::Status CheckReduceFields(const Reduce& r);
  absl::Status CheckKernelFields(const Compute& k);
  // A prefetched transfer or reduction is driven by its loop's For (codegen/program.h) and
  // its two-half buffer has no other writer; a prefetched reduction's buffer is zeroed in
  // that loop's body.
  absl::Status CheckPrefetch(const Node& n);
  // The shape of a (non-shard) buffer; nullptr when the program does not allocate it.
  const std::vector<int64_t>* BufferShape(const std::string& name) const {
    auto it = buffers_.find(name);
    return it == buffers_.end() ? nullptr : &it->second;
  }
  // The shape of what an operand reads or writes: its tensor's shard or a buffer.
  const std::vector<int64_t>* OperandShape(const Operand& o) const {
    if (o.buffer == o.tensor) return &p_.Tensor(o.tensor)->local_shape;
    return BufferShape(o.buffer);
  }
  template <typename T>
  std::vector<const Node*> NodesWith(const std::function<bool(const T&)>& pred) const {
    std::vector<const Node*> out;
    for (const Node& n : nodes_) {
      if (const T* x = std::get_if<T>(&n.stmt->node); x != nullptr && pred(*x)) out.push_back(&n);
    }
    return out;
  }

  // ---- instances and their order ----
  unsigned InstDims() const { return na_ + 1 + depth_; }
  // The instances of `n`, as a slot of InstDims() dims at `at` of frame `f`.
  isl::set InstSet(const Frame& f, unsigned at, const Node& n) const;
  Affs Coords(const Frame& f, unsigned at) const { return f.Vars(at, na_); }
  Affs LoopValues(const Frame& f, unsigned at, const Node& n) const {
    return f.Vars(at + na_ + 1, n.depth());
  }
  // [r, id_x, v] -> [r, id_y, v']: instances of x that run before instances of y on one rank.
  isl::map Before(const Node& x, const Node& y) const;
  // [r, id_x, v] -> [r, id_y, v']: the same iteration of the loops x and y share.
  isl::map SameIteration(const Node& x, const Node& y) const;
  // For each instance of `reader`, the last instance of `writers` before it.
  isl::map LastWriter(const Node& reader, const std::vector<const Node*>& writers) const;

  Env MakeEnv(const Affs& coords, const Node* n, const Affs& loops) const {
    Env env;
    for (size_t a = 0; a < na_; ++a) env.vars.emplace_back(p_.axis_names[a], coords[a]);
    if (n != nullptr) {
      for (size_t k = 0; k < n->depth(); ++k) env.vars.emplace_back(n->loops[k]->var, loops[k]);
    }
    return env;
  }
  isl::set InMesh(const Frame& f, const Affs& r) const { return f.InBox(r, p_.axis_sizes); }
  // g in the group of r along `axes`: equal coordinates on the other axes, g in the mesh.
  isl::set Group(const Frame& f, const Affs& r, const Affs& g, const std::vector<int>& axes) const {
    isl::set s = InMesh(f, g);
    for (size_t a = 0; a < na_; ++a) {
      if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end())
        s = s.intersect(r[a].eq_set(g[a]));
    }
    return s;
  }
  // Global index of the first element of `tensor`'s shard on the rank at `coords`. Local
  // position l of the shard stands for element start + l: an element of the tensor when it
  // lies within `shape`, else padding (codegen/program.h), which the validator names by that
  // same index past the shape; no statement instance reads or writes it.
  absl::StatusOr<Affs> BlockStart(const std::string& tensor, const Frame& f,
                                  const Affs& coords) const;
  // The rank at `coords` (in the mesh) stores index `e` of `tensor` in its shard (its block
  // at local_shape; past `shape` that is padding, which no statement instance touches).
  absl::StatusOr<isl::set> Holds(const std::string& tensor, const Frame& f, const Affs& coords,
                                 const Affs& e) const;
  // Buffer positions an operand touches at tile point p (dims at p0 of `f`): offset + p
  // along each dim's index.
  absl::StatusOr<Affs> Positions(const Compute& k, const Operand& o, const Frame& f,
                                 const Affs& coords, const Node& n, const Affs& loops,
                                 unsigned p0) const {
    MT_ASSIGN_OR_RETURN(Affs pos, ToPwAffs(o.slice.offset, f, MakeEnv(coords, &n, loops)));
    for (size_t d = 0; d < pos.size(); ++d) {
      for (size_t j = 0; j < k.tile.size(); ++j) {
        if (k.tile[j].first == o.dims[d]) pos[d] = pos[d].add(f.Var(p0 + j));
      }
    }
    return pos;
  }
  // The tile points of `k` (dims at p0 of `f`; dims past its tile are 0), whether the call
  // runs them or not.
  isl::set TileSet(const Frame& f, unsigned p0, const Compute& k) const {
    isl::set s = f.All();
    for (size_t j = 0; j < np_; ++j) {
      s = s.intersect(j < k.tile.size() ? f.Within(f.Var(p0 + j), 0, k.tile[j].second)
                                        : f.Var(p0 + j).eq_set(f.Cst(0)));
    }
    return s;
  }
  // What kernel node `n` (its call `k`) executes: its instances (a slot of InstDims() dims at
  // `at` of `f`) and the tile points (dims at p0) each covers. Per ragged index j of the call
  // (Compute::extent[j] != 0) only p_j < extent[j] - start_j(rank, loops), the values
  // start_j .. start_j + Clipped(...) - 1 (codegen/program.h); an instance with no value
  // left on some index covers no point (the runtime skips the call).
  absl::StatusOr<isl::set> Executed(const Frame& f, unsigned at, unsigned p0, const Node& n,
                                    const Compute& k) const {
    isl::set s = InstSet(f, at, n).intersect(TileSet(f, p0, k));
    if (k.start.empty()) return s;
    const Env env = MakeEnv(Coords(f, at), &n, LoopValues(f, at, n));
    for (size_t j = 0; j < k.tile.size(); ++j) {
      if (k.extent[j] == 0) continue;  // not ragged: never clipped
      MT_ASSIGN_OR_RETURN(const isl::pw_aff start, ToPwAff(k.start[j], f, env));
      s = s.intersect(f.Var(p0 + j).lt_set(f.Cst(k.extent[j]).sub(start)));
    }
    return s.coalesce();
  }

  // ---- concrete evaluation for messages, as the executor evaluates ----
  int64_t Eval(const Expr& e, const Point& coords, const Node* n, const Point& loops) const {
    return e.Eval([&](const std::string& name) -> int64_t {
      for (size_t a = 0; a < na_; ++a) {
        if (p_.axis_names[a] == name) return coords[a];
      }
      if (n != nullptr) {
        for (size_t k = 0; k < n->depth(); ++k) {
          if (n->loops[k]->var == name) return loops[k];
        }
      }
      return 0;
    });
  }
  Point Eval(const std::vector<Expr>& es, const Point& coords, const Node* n,
             const Point& loops) const {
    Point out;
    for (const Expr& e : es) out.push_back(Eval(e, coords, n, loops));
    return out;
  }
  Point BlockStartAt(const std::string& tensor, const Point& coords) const {
    Point out;
    for (const DimLayout& l : p_.Tensor(tensor)->layout) {
      int64_t v = 0;
      for (const auto& [block, index] : l.blocks) v += block * Eval(index, coords, nullptr, {});
      out.push_back(v);
    }
    return out;
  }

  // ---- the checks ----
  absl::Status CheckHolders();
  absl::Status CheckTransfer(const Node& n);
  // ---- one transfer's checks, each recording what it leaves in its buffer ----
  struct TransferScope;
  // The rank witness `w` names as its source.
  Point SourceAt(const TransferScope& x, const Point& w) const;
  // Every element of the box copied from the shard of the rank from_at() names, at local
  // offsets `loc` (`offset` evaluated at offset_rank(), plus b), lies in that shard: the
  // runtime copies the whole box.
  absl::Status CheckCopy(const TransferScope& x, const isl::set& exec, const Affs& loc,
                         const std::function<Point(const Point&)>& from_at,
                         const std::vector<Expr>& offset,
                         const std::function<Point(const Point&)>& offset_rank);
  // What a point-to-point fetch leaves: source(W)'s box at W's offset, for W and the loop
  // values given (the receiver; for a Shift, the rank whose fetch at time 0 the ring
  // carries here), on the instances `exec`.
  absl::StatusOr<isl::set> PointToPoint(const TransferScope& x, const Affs& who, const Affs& when,
                                        const isl::set& exec) const;
  // The receiver's own fetch on `exec` has its source in the mesh and its box in the shard.
  absl::Status CheckPointToPoint(const TransferScope& x, const isl::set& exec);
  // CheckPointToPoint, then what the receiver's own fetch leaves on `exec`.
  absl::StatusOr<isl::set> FetchContent(const TransferScope& x, const isl::set& exec);
  // Per runtime call (codegen/pattern.h): its checks, then what it leaves in the buffer
  // ([r, id, v, b, s, e]).
  absl::StatusOr<isl::set> LocalContent(const TransferScope& x);
  absl::StatusOr<isl::set> BroadcastContent(const TransferScope& x);
  absl::StatusOr<isl::set> AllGatherContent(const TransferScope& x);
  absl::StatusOr<isl::set> AllToAllContent(const TransferScope& x);
  // A ring along `time_loop`: the first step's point-to-point fetch, then `turn`'s steps.
  absl::StatusOr<isl::set> ShiftContent(const TransferScope& x, const std::string& time_loop,
                                        const RuntimeCall& turn);
  absl::Status CheckReduce(const Node& n);
  // A RingReduce (program.h) sits in the body of its loop's For, after every kernel call
  // into its buffer, which only it reads, which no transfer fills, and which is zeroed
  // once, before that For.
  absl::Status CheckRing(const Node& n);
  absl::Status CheckGemm(const Compute& k);
  absl::Status CheckKernel(const Node& n);
  // ---- one kernel call's checks, each recording its reads ----
  struct KernelScope;
  // [r, id, v, p] -> [b]: the position of operand `o` the call touches at tile point p,
  // after checking that it lies inside o's shard or buffer.
  absl::StatusOr<isl::map> OperandPosition(const KernelScope& x, const Operand& o, bool output);
  // The output's partial-result buffer `o` is zeroed before the call and reduced after.
  absl::Status CheckPartialOutput(const KernelScope& x, const Operand& o);
  // Records the reads of input `o` from the rank's own shard.
  absl::Status ReadShard(const KernelScope& x, const Operand& o);
  // Records the reads of input `o` from a transfer buffer (what its last writer left at
  // `position`), after checking that some writer filled it first and everywhere it is read.
  absl::Status ReadBuffer(const KernelScope& x, const Operand& o, const isl::map& position);
  // Refuses a read of `o` at a position its last writer (`last`) left without the element.
  absl::Status ExplainUnfilled(const KernelScope& x, const Operand& o, const isl::map& last,
                               const isl::map& position, const isl::map& read);
  absl::Status CheckInstances();
  // ---- CheckInstances' steps ----
  struct PathScope;
  // [path, q, o]: every path a contribution takes to a holder q of output element o;
  // appends to `out_loops` the loops of the reductions on the way.
  absl::StatusOr<isl::set> Paths(const PathScope& x, std::vector<std::string>* out_loops) const;
  // The paths of kernel node `n` (instances `kbase`, output positions `pos`) through the
  // reduction `rn` of its partial buffer, which `zeros` zero.
  absl::StatusOr<isl::set> ReducedPaths(const PathScope& x, const Node& n, const Node& rn,
                                        const std::vector<const Node*>& zeros,
                                        const isl::set& kbase, const Affs& pos) const;
  // path -> [q, S]: the statement instance S of each path, each index taken from the first
  // access that carries it.
  absl::StatusOr<isl::map> InstanceOfPaths(const PathScope& x, const isl::map& reach,
                                           PathReads& reads) const;
  // Every element a path adds to and multiplies is its instance's.
  absl::Status CheckPathElements(const PathScope& x, const isl::map& reach,
                                 const isl::map& instance, PathReads& reads);
  // "rank (x=0, y=0) at ko=1 (kernel call 1 of 2) through AllReduce(...) of PartC" for path `w`.
  std::string PathText(const PathScope& x, const Point& w) const;
  // ReducedPaths of a RingReduce `rn`.
  absl::StatusOr<isl::set> RingPaths(const PathScope& x, const Node& rn, const isl::set& kbase,
                                     const Affs& pos) const;
  // Every holder receives every instance of its elements, and exactly once.
  absl::Status CheckEachInstanceOnce(const PathScope& x, const isl::map& instance,
                                     const std::vector<std::string>& out_loops);
  absl::Status ExplainBadTuple(const isl::map& tuple_o, const isl::set& acc_range,
                               const Point& path);
  // Where input j's element (`element`, of the kernel instance on `path`) came from: the
  // transfer that filled its buffer, the rank that sent it, and whether it is the element
  // the transfer's own box names there.
  struct InputSource {
    std::string loop, from = "its own shard";
    bool contradicts_box = false;
  };
  InputSource SourceOf(const Point& path, size_t j, const Point& element) const;

  const ir::Computation& c_;
  const Program& p_;
  const ir::Problem& prob_;
  isl::ctx ctx_;
  const size_t na_;
  size_t depth_ = 0;  // D: the deepest loop nesting
  size_t np_ = 0;     // tile dims: the longest tile of a kernel call
  std::vector<Node> nodes_;
  std::map<std::string, std::vector<int64_t>> buffers_;
  int64_t next_order_ = 0;

  // Per transfer node: [r, id, v, b] -> [s, e]: after the transfer, buffer position b holds
  // element e of its tensor, copied from rank s.
  std::map<int64_t, isl::map> contents_;
  // Per kernel node and input operand: [r, id, v, p] -> [s, e], the element read (from s);
  // the buffer positions per operand (output first): [r, id, v, p] -> [b]; the last writer
  // of each input's buffer: [r, id, v] -> [r, id_w, v_w] (none for shards).
  std::map<int64_t, std::vector<isl::map>> reads_;
  std::map<int64_t, std::vector<isl::map>> positions_;
  std::map<int64_t, std::vector<std::optional<isl::map>>> last_writers_;

  std::optional<Unsoundness> found_;
};

}  // namespace meshtune::codegen::validation

#endif  // MESHTUNE_CODEGEN_VALIDATE_VALIDATOR_H_
