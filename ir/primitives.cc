#include "ir/primitives.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/excerpt.h"
#include "ir/reason.h"
#include "ir/scanner.h"

namespace meshtune::ir {

namespace {

std::string LoopList(const Computation& c) {
  std::vector<std::string> names;
  for (const Loop& l : c.loops()) names.push_back(l.name);
  return base::ExcerptList(names);
}

absl::StatusOr<int> FindLoop(const Computation& c, const std::string& name) {
  const int p = c.LoopIndex(name);
  if (p < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown loop ", base::Excerpt(name), " (loops: ", LoopList(c), ")"));
  }
  return p;
}

absl::Status CheckTensor(const Computation& c, const std::string& tensor) {
  if (c.problem().FirstAccess(tensor) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown tensor ", base::Excerpt(tensor),
                     " (tensors: ", base::ExcerptList(c.problem().Tensors()), ")"));
  }
  return absl::OkStatus();
}

// A name for a new loop: an identifier not used by another loop, mesh axis or tensor.
absl::Status CheckNewLoopName(const Computation& c, const std::string& name,
                              const std::string& replaced) {
  if (!IsIdentifier(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", base::Excerpt(name), "' is not a valid loop name"));
  }
  if (name != replaced && c.LoopIndex(name) >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop name ", base::Excerpt(name), " is already in use"));
  }
  if (c.mesh().AxisIndex(name) >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop name ", base::Excerpt(name), " is a mesh axis"));
  }
  if (c.problem().FirstAccess(name) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop name ", base::Excerpt(name), " is a tensor"));
  }
  return absl::OkStatus();
}

// The computation with loops permuted: new loop j is old loop perm[j].
Computation Permute(const Computation& c, const std::vector<int>& perm) {
  std::vector<Loop> loops;
  for (int j : perm) loops.push_back(c.loops()[j]);
  return c.WithLoops(std::move(loops));
}

absl::Status CheckSplittable(const Computation& c, int p) {
  const Loop& l = c.loops()[p];
  if (l.kind == LoopKind::kDistributed) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop ", base::Excerpt(l.name), " is distributed over mesh axis ",
                     base::Excerpt(c.mesh().axes[l.axis].name), " and cannot be split"));
  }
  if (l.kind == LoopKind::kTensorized) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop ", base::Excerpt(l.name), " is tensorized and cannot be split"));
  }
  if (!l.rotate.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loop ", base::Excerpt(l.name), " is rotated; split it before the rotating communicate"));
  }
  return absl::OkStatus();
}

// Loop p split into `outer` (`parts` iterations) x `inner` (`block` iterations), with
// a * b, or nullopt when it overflows int64_t.
std::optional<int64_t> Times(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// Refuses a split of loop p into `parts` blocks of `block` whose padded extent (parts *
// block, past the loop's extent when the blocks do not divide it) exceeds the largest
// extent a tensor may have (kMaxTensorElements), or whose loops then span more than an
// iteration space may (kMaxIterationPoints): beyond them, counts of points overflow.
absl::Status CheckPaddedSpace(const Computation& c, int p, int64_t parts, int64_t block) {
  const Loop& l = c.loops()[p];
  const std::optional<int64_t> padded = Times(parts, block);
  if (!padded || *padded > kMaxTensorElements) {
    return absl::InvalidArgumentError(absl::StrCat(parts, " blocks of ", block, " would cover ",
                                                   padded ? absl::StrCat(*padded) : "over 2^63",
                                                   " iterations of ", l.name, " (extent ", l.extent,
                                                   "); at most 2^48 = ", kMaxTensorElements));
  }
  std::optional<int64_t> points = 1;
  for (size_t j = 0; j < c.loops().size() && points; ++j)
    points = Times(*points, static_cast<int>(j) == p ? *padded : c.loops()[j].extent);
  if (!points || *points > kMaxIterationPoints) {
    return absl::InvalidArgumentError(
        absl::StrCat(parts, " blocks of ", block, " of ", l.name, " would make the loops span ",
                     points ? absl::StrCat(*points) : "over 2^63",
                     " iterations; at most 2^62 = ", kMaxIterationPoints));
  }
  return absl::OkStatus();
}

// parts * block >= its extent: blocks of `block`, the last one short or past the end when
// they do not divide it evenly. The loops of the index stay a mixed radix (each loop's
// stride is the product of the extents inside it): when the blocks overshoot, the strides
// of the loops outside p grow with them, and the instances past the index's extent are
// simply not in the domain.
absl::StatusOr<Computation> SplitAt(const Computation& c, int p, const std::string& outer,
                                    const std::string& inner, int64_t parts, int64_t block) {
  const Loop& l = c.loops()[p];
  if (outer == inner) {
    return absl::InvalidArgumentError(
        absl::StrCat("outer and inner loops are both named ", base::Excerpt(outer)));
  }
  if (absl::Status s = CheckNewLoopName(c, outer, l.name); !s.ok()) return s;
  if (absl::Status s = CheckNewLoopName(c, inner, l.name); !s.ok()) return s;
  if (absl::Status s = CheckPaddedSpace(c, p, parts, block); !s.ok()) return s;
  const int64_t span = l.stride * l.extent;  // the stride of the index's next loop outside
  const int64_t grown = l.stride * parts * block;
  std::vector<Loop> loops;
  for (size_t j = 0; j < c.loops().size(); ++j) {
    if (static_cast<int>(j) != p) {
      Loop q = c.loops()[j];
      if (q.origin == l.origin && q.stride > l.stride && grown != span) {
        MT_CHECK(q.stride % span == 0);  // the loops of an index are a mixed radix
        q.stride = q.stride / span * grown;
      }
      loops.push_back(q);
      continue;
    }
    Loop o = l, i = l;
    o.name = outer;
    o.extent = parts;
    o.stride = l.stride * block;
    i.name = inner;
    i.extent = block;
    loops.push_back(o);
    loops.push_back(i);
  }
  return c.WithLoops(std::move(loops));
}

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace

absl::StatusOr<Computation> Split(const Computation& c, const std::string& var,
                                  const std::string& outer, const std::string& inner,
                                  int64_t factor) {
  absl::StatusOr<int> p = FindLoop(c, var);
  if (!p.ok()) return p.status();
  if (absl::Status s = CheckSplittable(c, *p); !s.ok()) return s;
  if (factor < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("split factor must be at least 1, got ", factor));
  }
  const int64_t extent = c.loops()[*p].extent;
  return SplitAt(c, *p, outer, inner, CeilDiv(extent, factor), factor);
}

absl::StatusOr<Computation> Divide(const Computation& c, const std::string& var,
                                   const std::string& outer, const std::string& inner,
                                   int64_t parts) {
  absl::StatusOr<int> p = FindLoop(c, var);
  if (!p.ok()) return p.status();
  if (absl::Status s = CheckSplittable(c, *p); !s.ok()) return s;
  if (parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("divide needs at least 1 part, got ", parts));
  }
  const int64_t extent = c.loops()[*p].extent;
  return SplitAt(c, *p, outer, inner, parts, CeilDiv(extent, parts));
}

absl::StatusOr<Computation> Reorder(const Computation& c, const std::vector<std::string>& order) {
  std::vector<int> positions;
  std::set<std::string> seen;
  for (const std::string& name : order) {
    absl::StatusOr<int> p = FindLoop(c, name);
    if (!p.ok()) return p.status();
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("loop ", base::Excerpt(name), " is named twice in reorder"));
    }
    positions.push_back(*p);
  }
  std::vector<int> slots = positions;
  std::sort(slots.begin(), slots.end());
  std::vector<int> perm(c.loops().size());
  for (size_t j = 0; j < perm.size(); ++j) perm[j] = static_cast<int>(j);
  for (size_t k = 0; k < slots.size(); ++k) perm[slots[k]] = positions[k];
  // Distributed loops outermost, tensorized loops innermost.
  for (size_t j = 1; j < perm.size(); ++j) {
    const Loop& prev = c.loops()[perm[j - 1]];
    const Loop& cur = c.loops()[perm[j]];
    if (cur.kind == LoopKind::kDistributed && prev.kind != LoopKind::kDistributed) {
      return absl::InvalidArgumentError(
          absl::StrCat("reorder puts loop ", base::Excerpt(prev.name), " outside distributed loop ",
                       base::Excerpt(cur.name), "; distributed loops must stay outermost"));
    }
    if (prev.kind == LoopKind::kTensorized && cur.kind != LoopKind::kTensorized) {
      return absl::InvalidArgumentError(
          absl::StrCat("reorder puts loop ", base::Excerpt(cur.name), " inside tensorized loop ",
                       base::Excerpt(prev.name), "; tensorized loops must stay innermost"));
    }
  }
  return Permute(c, perm);
}

absl::StatusOr<Computation> Distribute(const Computation& c, const std::vector<std::string>& vars,
                                       const std::vector<std::string>& outers,
                                       const std::vector<std::string>& inners,
                                       const std::vector<std::string>& axes) {
  if (vars.empty() || vars.size() != outers.size() || vars.size() != inners.size() ||
      vars.size() != axes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "distribute needs four lists of the same non-zero length (loops, outer names, inner "
        "names, mesh axes); got ",
        vars.size(), ", ", outers.size(), ", ", inners.size(), " and ", axes.size()));
  }
  std::set<int> used_axes;
  for (const Loop& l : c.loops()) {
    if (l.kind == LoopKind::kDistributed) used_axes.insert(l.axis);
  }
  Computation cur = c;
  std::vector<std::string> names;
  for (size_t i = 0; i < vars.size(); ++i) {
    const int axis = c.mesh().AxisIndex(axes[i]);
    if (axis < 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown mesh axis ", base::Excerpt(axes[i]),
                                                     " (mesh axes: ", c.mesh().AxisNames(), ")"));
    }
    if (!used_axes.insert(axis).second) {
      return absl::InvalidArgumentError(absl::StrCat("mesh axis ", base::Excerpt(axes[i]),
                                                     " already has a loop distributed over it"));
    }
    absl::StatusOr<Computation> next =
        Divide(cur, vars[i], outers[i], inners[i], c.mesh().axes[axis].size);
    if (!next.ok()) return next.status();
    std::vector<Loop> loops = next->loops();
    Loop& o = loops[next->LoopIndex(outers[i])];
    o.kind = LoopKind::kDistributed;
    o.axis = axis;
    cur = next->WithLoops(std::move(loops));
  }
  // Order: distributed loops from earlier calls, the new outers as listed, then the rest.
  std::vector<int> perm;
  const std::vector<Loop>& ls = cur.loops();
  for (size_t j = 0; j < ls.size(); ++j) {
    if (ls[j].kind == LoopKind::kDistributed &&
        std::find(outers.begin(), outers.end(), ls[j].name) == outers.end()) {
      perm.push_back(static_cast<int>(j));
    }
  }
  for (const std::string& o : outers) perm.push_back(cur.LoopIndex(o));
  for (size_t j = 0; j < ls.size(); ++j) {
    if (ls[j].kind != LoopKind::kDistributed) perm.push_back(static_cast<int>(j));
  }
  return Permute(cur, perm);
}

absl::StatusOr<Computation> Shard(const Computation& c, const std::string& tensor,
                                  const std::vector<ShardTarget>& targets) {
  if (absl::Status s = CheckTensor(c, tensor); !s.ok()) return s;
  if (c.sharding(tensor) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", base::Excerpt(tensor), " is already sharded"));
  }
  const Problem& p = c.problem();
  const Mesh& mesh = c.mesh();
  const std::vector<std::string>& dims = p.FirstAccess(tensor)->indices;
  const std::vector<int64_t> shape = p.Shape(tensor);

  Sharding sh;
  sh.targets = targets;
  sh.replicated_axes.assign(mesh.axes.size(), true);
  std::vector<std::vector<const ShardTarget*>> per_dim(dims.size());
  for (const ShardTarget& t : targets) {
    auto it = std::find(dims.begin(), dims.end(), t.dim);
    if (it == dims.end()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", base::Excerpt(tensor),
                                                     " has no dim ", base::Excerpt(t.dim),
                                                     " (its dims: ", base::ExcerptList(dims), ")"));
    }
    if (absl::Status s = CheckAxes(t.target, mesh); !s.ok()) return s;
    for (const auto& [axis, coeff] : t.target.terms)
      sh.replicated_axes[mesh.AxisIndex(axis)] = false;
    per_dim[it - dims.begin()].push_back(&t);
  }
  // The inverse of the layout is a function: (mesh coords r, local index l) -> element e,
  // with e_d = sum over the dim's targets of block_j * target_j(r) + l_d.
  const size_t na = mesh.axes.size();
  const isl::space rl = SetSpace(c.ctx(), tensor, na + dims.size());
  std::vector<int64_t> box;
  for (const MeshAxis& a : mesh.axes) box.push_back(a.size);
  std::vector<isl::aff> elems;
  for (size_t d = 0; d < dims.size(); ++d) {
    // Blocks of a mixed radix: the innermost target's block is ceil(extent / all parts),
    // each outer one the product of the blocks inside it; the last blocks are short (or
    // past the end) when the parts do not divide the extent.
    int64_t parts_in_dim = 1;
    std::vector<int64_t> parts_of;
    for (const ShardTarget* t : per_dim[d]) {
      const auto [lo, hi] = t->target.Range(mesh);
      parts_of.push_back(t->target.modulus != 0 ? t->target.modulus : hi - lo + 1);
      parts_in_dim *= parts_of.back();
    }
    int64_t block = (shape[d] + parts_in_dim - 1) / parts_in_dim * parts_in_dim;
    isl::aff e = Linear(rl, {{static_cast<unsigned>(na + d), 1}}, 0);
    sh.blocks.emplace_back();
    for (size_t k = 0; k < per_dim[d].size(); ++k) {
      const ShardTarget* t = per_dim[d][k];
      const auto [lo, hi] = t->target.Range(mesh);
      block /= parts_of[k];
      std::vector<std::pair<unsigned, int64_t>> terms;
      for (const auto& [axis, coeff] : t->target.terms)
        terms.emplace_back(mesh.AxisIndex(axis), coeff);
      AxisExpr normalized = t->target;
      if (normalized.modulus == 0) normalized.constant -= lo;
      sh.blocks.back().emplace_back(block, normalized);
      isl::aff index = Linear(rl, terms, normalized.constant);
      if (normalized.modulus != 0) index = Mod(index, normalized.modulus);
      e = Add(e, Scale(index, block));
    }
    elems.push_back(e);
    box.push_back(block);
    sh.local_shape.push_back(block);
  }
  const isl::map layout = MapFromAffs(rl, tensor, elems)
                              .intersect_domain(Box(rl, box))
                              .intersect_range(c.TensorSet(tensor))
                              .reverse();
  std::vector<std::string> out_names;
  for (const MeshAxis& a : mesh.axes) out_names.push_back(a.name);
  for (const std::string& d : dims) out_names.push_back("l" + d);
  sh.layout = NameRangeDims(NameDomainDims(layout, dims), out_names);
  sh.owners = ProjectOutRange(layout, mesh.axes.size(), dims.size()).set_range_tuple("Mesh");
  return c.WithSharding(tensor, std::move(sh));
}

absl::StatusOr<Computation> Communicate(const Computation& c, const std::string& tensor,
                                        const std::string& loop,
                                        const std::vector<std::string>& rotate, int prefetch,
                                        int64_t step) {
  if (absl::Status s = CheckTensor(c, tensor); !s.ok()) return s;
  if (step < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("step=", step, " is not a rotation step; a step is at least 1"));
  }
  if (step != 1 && rotate.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step=", step, " without rotate: a step is that of a rotation (rotate=[...])"));
  }
  if (prefetch != 0 && prefetch != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefetch=", prefetch,
                     " is not supported; prefetch is 0 (off) or 1 (the next step's "
                     "transfer overlaps this step)"));
  }
  absl::StatusOr<int> p = FindLoop(c, loop);
  if (!p.ok()) return p.status();
  if (const Communication* t = c.TransferOf(tensor)) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", base::Excerpt(tensor),
                                                   " is already communicated at loop ",
                                                   base::Excerpt(t->loop)));
  }
  const Loop& l = c.loops()[*p];
  if (l.kind == LoopKind::kDistributed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loop ", base::Excerpt(loop), " is distributed; communicate at a serial loop"));
  }
  if (l.kind == LoopKind::kTensorized && *p > 0 &&
      c.loops()[*p - 1].kind == LoopKind::kTensorized) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop ", base::Excerpt(loop),
                     " is inside the tensorized kernel; communicate at a serial loop or at the "
                     "kernel's outermost loop"));
  }
  std::set<std::string> seen;
  for (const std::string& r : rotate) {
    absl::StatusOr<int> rp = FindLoop(c, r);
    if (!rp.ok()) return rp.status();
    if (c.loops()[*rp].kind != LoopKind::kDistributed) {
      return absl::InvalidArgumentError(
          absl::StrCat("rotate by loop ", base::Excerpt(r),
                       ", which is not distributed; rotate names distributed loops"));
    }
    if (!seen.insert(r).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("loop ", base::Excerpt(r), " is named twice in rotate"));
    }
  }
  Computation out = c.WithTransfer(Communication{tensor, loop, rotate, prefetch, step});
  if (rotate.empty()) return out;
  if (l.kind == LoopKind::kTensorized) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop ", base::Excerpt(loop), " is tensorized and cannot rotate"));
  }
  if (!l.rotate.empty()) {
    const std::set<std::string> have(l.rotate.begin(), l.rotate.end());
    if (have == seen && l.rotate_step == step) return out;
    auto with_step = [](const std::vector<std::string>& by, int64_t s) {
      return absl::StrCat("[", base::ExcerptList(by), "]", s == 1 ? "" : absl::StrCat(" step ", s));
    };
    return Reject(
        kConflictingRotation,
        absl::StrCat("loop ", base::Excerpt(loop), " already rotates by ",
                     with_step(l.rotate, l.rotate_step), "; communicate(", base::Excerpt(tensor),
                     ", ", base::Excerpt(loop), ") asks for ", with_step(rotate, step)));
  }
  std::vector<Loop> loops = out.loops();
  loops[*p].rotate = rotate;
  loops[*p].rotate_step = step;
  return out.WithLoops(std::move(loops));
}

const std::vector<std::string>& KernelOps() {
  static const auto* ops = new std::vector<std::string>{
      "matmul", "matmul_ta", "matmul_tb", "matmul_tab", "mul", "add", "contraction"};
  return *ops;
}

namespace {

// The statement restricted to the indices in `keep`, e.g. "C[m,n] += A[k,m] * B[k,n]".
Problem Restrict(const Problem& p, const std::set<std::string>& keep) {
  Problem r = p;
  auto filter = [&](TensorAccess& a) {
    std::vector<std::string> idx;
    for (const std::string& i : a.indices) {
      if (keep.count(i)) idx.push_back(i);
    }
    a.indices = idx;
  };
  filter(r.output);
  for (TensorAccess& a : r.operands) filter(a);
  return r;
}

// The named kernel whose form the restricted statement has, or "contraction".
std::string KernelOf(const Problem& r) {
  const auto& out = r.output.indices;
  if (r.combine == Problem::Combine::kSum) {
    for (const TensorAccess& a : r.operands) {
      if (a.indices != out) return "contraction";
    }
    return "add";
  }
  if (r.operands.size() != 2) return "contraction";
  const auto& a = r.operands[0].indices;
  const auto& b = r.operands[1].indices;
  if (a == out && b == out) return "mul";
  if (out.size() != 2 || a.size() != 2 || b.size() != 2) return "contraction";
  const std::string& i = out[0];
  const std::string& j = out[1];
  std::string k;
  for (const std::string& x : a) {
    if (x != i && x != j) k = x;
  }
  if (k.empty()) return "contraction";
  const bool a_n = a == std::vector<std::string>{i, k}, a_t = a == std::vector<std::string>{k, i};
  const bool b_n = b == std::vector<std::string>{k, j}, b_t = b == std::vector<std::string>{j, k};
  if (a_n && b_n) return "matmul";
  if (a_t && b_n) return "matmul_ta";
  if (a_n && b_t) return "matmul_tb";
  if (a_t && b_t) return "matmul_tab";
  return "contraction";
}

}  // namespace

absl::StatusOr<Computation> Tensorize(const Computation& c, const std::vector<std::string>& loops,
                                      const std::string& op) {
  if (!c.kernel().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the computation is already tensorized into ", c.kernel()));
  }
  if (std::find(KernelOps().begin(), KernelOps().end(), op) == KernelOps().end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown kernel ", base::Excerpt(op),
                                                   " (kernels: ", absl::StrJoin(KernelOps(), ", "),
                                                   ")"));
  }
  if (loops.empty()) return absl::InvalidArgumentError("tensorize needs at least one loop");
  std::set<int> positions;
  std::set<std::string> origins;
  for (const std::string& name : loops) {
    absl::StatusOr<int> p = FindLoop(c, name);
    if (!p.ok()) return p.status();
    const Loop& l = c.loops()[*p];
    if (l.kind == LoopKind::kDistributed) {
      return absl::InvalidArgumentError(
          absl::StrCat("loop ", base::Excerpt(name), " is distributed and cannot be tensorized"));
    }
    if (!positions.insert(*p).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("loop ", base::Excerpt(name), " is named twice in tensorize"));
    }
    if (!origins.insert(l.origin).second && op != "contraction") {
      return absl::InvalidArgumentError(
          absl::StrCat("two tensorized loops walk index ", base::Excerpt(l.origin), "; kernel ",
                       base::Excerpt(op), " needs one loop per index"));
    }
  }
  const int n = static_cast<int>(c.loops().size());
  const int first = n - static_cast<int>(loops.size());
  if (*positions.begin() != first) {
    return absl::InvalidArgumentError(
        absl::StrCat("loop ", base::Excerpt(c.loops()[first].name),
                     " lies inside the tensorized loops but is not tensorized; ",
                     "tensorize the innermost loops (reorder first)"));
  }
  for (int j = first; j < n; ++j) {
    if (!c.loops()[j].rotate.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("loop ", base::Excerpt(c.loops()[j].name),
                                                     " is rotated and cannot be tensorized"));
    }
  }
  for (const Communication& t : c.transfers()) {
    if (c.LoopIndex(t.loop) > first) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor ", base::Excerpt(t.tensor), " is communicated at loop ", base::Excerpt(t.loop),
          ", inside the tensorized loops; communicate at the kernel's outermost loop or outside "
          "it"));
    }
  }
  const Problem restricted = Restrict(c.problem(), origins);
  const std::string form = KernelOf(restricted);
  if (op != "contraction" && form != op) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel ", base::Excerpt(op),
                     " does not fit: over the tensorized indices the statement is ",
                     base::Excerpt(restricted.ToString(), 2 * base::kMaxExcerpt), ", which is ",
                     form == "contraction" ? "a generic contraction" : form));
  }
  std::vector<Loop> ls = c.loops();
  for (int j = first; j < n; ++j) ls[j].kind = LoopKind::kTensorized;
  return c.WithLoops(std::move(ls)).WithKernel(op);
}

}  // namespace meshtune::ir
