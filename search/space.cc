#include "search/space.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/primitives.h"

namespace meshtune::search {

namespace {

using ir::ShardTarget;

constexpr int kMaxIndices = 8;

// A loop name not yet in `taken` (stem, stem2, stem3, ...); added to it.
std::string Fresh(const std::string& stem, std::set<std::string>* taken) {
  std::string name = stem;
  for (int i = 2; taken->count(name); ++i) name = absl::StrCat(stem, i);
  taken->insert(name);
  return name;
}

ir::AxisExpr PlainAxis(const std::string& axis) {
  ir::AxisExpr e;
  e.terms.emplace_back(axis, 1);
  return e;
}

// Every way to lay `dims` over the mesh: each axis goes to one dim (or, with replication,
// to none); a dim given several axes is split over them in the order listed.
std::vector<std::vector<ShardTarget>> Layouts(const std::vector<std::string>& dims,
                                              const ir::Mesh& mesh, const SpaceOptions& options) {
  const int na = static_cast<int>(mesh.axes.size());
  const int nd = static_cast<int>(dims.size());
  const int choices = nd + (options.allow_replication ? 1 : 0);  // choice nd: replicated
  std::set<std::vector<std::pair<std::string, std::string>>> seen;
  std::vector<std::vector<ShardTarget>> out;
  if (nd == 0) return {{}};
  std::vector<int> assign(na, 0);
  std::function<void(int)> rec = [&](int a) {
    if (a < na) {
      for (int d = 0; d < choices; ++d) {
        assign[a] = d;
        rec(a + 1);
      }
      return;
    }
    // Per dim the axes it gets; then every order of each dim's axes.
    std::vector<std::vector<std::string>> per_dim(nd);
    for (int x = 0; x < na; ++x) {
      if (assign[x] < nd) per_dim[assign[x]].push_back(mesh.axes[x].name);
    }
    std::function<void(int, std::vector<ShardTarget>)> orders = [&](int d,
                                                                    std::vector<ShardTarget> acc) {
      if (d == nd) {
        std::vector<std::pair<std::string, std::string>> key;
        for (const ShardTarget& t : acc) key.emplace_back(t.dim, t.target.ToString());
        if (seen.insert(key).second) out.push_back(acc);
        return;
      }
      std::vector<std::string> axes = per_dim[d];
      std::sort(axes.begin(), axes.end());
      do {
        std::vector<ShardTarget> next = acc;
        for (const std::string& x : axes) next.push_back({dims[d], PlainAxis(x)});
        orders(d + 1, std::move(next));
      } while (std::next_permutation(axes.begin(), axes.end()));
    };
    orders(0, {});
  };
  rec(0);
  if (!options.skew) return out;
  // Skewed variants: a dim on one axis a instead on (a + b) % s for another axis b of the
  // same size s (Cannon's initial alignment). One skewed dim per layout, on one axis (and
  // unless options.split_distributed, only a dim on one axis).
  const size_t plain = out.size();
  for (size_t i = 0; i < plain; ++i) {
    for (size_t t = 0; t < out[i].size(); ++t) {
      const std::string& dim = out[i][t].dim;
      int on_dim = 0;
      for (const ShardTarget& u : out[i]) on_dim += u.dim == dim;
      if (on_dim != 1 && !options.split_distributed) continue;
      const std::string a = out[i][t].target.terms[0].first;
      const int64_t s = mesh.axes[mesh.AxisIndex(a)].size;
      for (const ir::MeshAxis& b : mesh.axes) {
        if (b.name == a || b.size != s) continue;
        std::vector<ShardTarget> v = out[i];
        ir::AxisExpr e;
        e.terms = {{a, 1}, {b.name, 1}};
        std::sort(e.terms.begin(), e.terms.end());
        e.modulus = s;
        v[t].target = e;
        out.push_back(std::move(v));
      }
    }
  }
  return out;
}

// The kernel the innermost loops fold into: the first op Tensorize accepts on the whole
// statement (every index has an innermost loop in every nest).
std::string KernelForm(const ir::Computation& base) {
  std::vector<std::string> all;
  for (const ir::Loop& l : base.loops()) all.push_back(l.name);
  for (const std::string& op : ir::KernelOps()) {
    if (ir::Tensorize(base, all, op).ok()) return op;
  }
  return "contraction";
}

// Whether `parts` blocks of ceil(extent / parts) leave no part empty (past the end): a
// schedule with an empty part leaves ranks idle, which the space offers only through
// meshes of fewer ranks (--allow-idle-ranks).
bool EveryPartHolds(int64_t extent, int64_t parts) {
  return (parts - 1) * ((extent + parts - 1) / parts) < extent;
}

// Divide factors worth trying for an index of extent `extent`: the mesh's axis sizes, their
// lcm and their product, when they leave more than one element a part (blocks of
// ceil(extent / parts), the last one short where they do not divide it) and none empty.
std::vector<int64_t> DivideParts(int64_t extent, const ir::Mesh& mesh) {
  std::set<int64_t> parts;
  int64_t lcm = 1, product = 1;
  for (const ir::MeshAxis& a : mesh.axes) {
    parts.insert(a.size);
    lcm = std::lcm(lcm, a.size);
    product *= a.size;
  }
  parts.insert(lcm);
  parts.insert(product);
  std::vector<int64_t> out;
  for (int64_t p : parts) {
    if (p > 1 && p < extent && EveryPartHolds(extent, p)) out.push_back(p);
  }
  return out;
}

// What every loop nest of one space is built from.
struct NestInputs {
  const ir::Problem& p;
  const ir::Mesh& mesh;
  const SpaceOptions& options;
  bool trivial_mesh = false;  // one rank: nothing is distributed
  // Per index, the loop names of its splits: levels[i][0] = {"mo", "mi"} splits the index,
  // levels[i][1] = {"mo2", "mi2"} splits "mi" again, and so on (kMaxSplits).
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> levels;
  std::vector<std::string> kernel_order;  // the kernel's index order
  std::string kernel;                     // the op the innermost loops fold into
  std::vector<std::vector<std::vector<ShardTarget>>> layouts;  // per tensor, its layouts
};

// A divided index and its number of parts.
using Divides = std::vector<std::pair<std::string, int64_t>>;

// How many times one index may be split (distributed or divided).
constexpr int kMaxSplits = 3;

// How many mesh axes of `assign` run index `index` (none on a trivial mesh).
int Distributions(const NestInputs& in, const std::vector<std::string>& assign,
                  const std::string& index) {
  if (in.trivial_mesh) return 0;
  return static_cast<int>(std::count(assign.begin(), assign.end(), index));
}

// The loop that split number `n` (0 first) of `index` splits: the index, then the inner
// loop of the split before.
const std::string& SplitVar(const NestInputs& in, const std::string& index, int n) {
  return n == 0 ? index : in.levels.at(index)[n - 1].second;
}

// The time loop and the inner loop of dividing `index` under the distribution `assign`:
// the split after its distributions.
const std::pair<std::string, std::string>& DivideLoops(const NestInputs& in,
                                                       const std::vector<std::string>& assign,
                                                       const std::string& index) {
  return in.levels.at(index)[Distributions(in, assign, index)];
}

// Per index of `p`, fresh outer ("mo") and inner ("mi") loop names clashing with no index,
// tensor or mesh axis name.
void NameLoops(const ir::Problem& p, const std::vector<std::string>& tensors, const ir::Mesh& mesh,
               NestInputs* in) {
  std::set<std::string> taken(p.indices.begin(), p.indices.end());
  for (const std::string& t : tensors) taken.insert(t);
  for (const ir::MeshAxis& a : mesh.axes) taken.insert(a.name);
  for (int level = 0; level < kMaxSplits; ++level) {
    for (const std::string& i : p.indices)
      in->levels[i].emplace_back(Fresh(i + "o", &taken), Fresh(i + "i", &taken));
  }
}

// Index order of the kernel: the output's indices, then the others as they appear.
std::vector<std::string> KernelOrder(const ir::Problem& p) {
  std::vector<std::string> kernel_order = p.output.indices;
  for (const ir::TensorAccess& a : p.operands) {
    for (const std::string& i : a.indices) {
      if (std::find(kernel_order.begin(), kernel_order.end(), i) == kernel_order.end())
        kernel_order.push_back(i);
    }
  }
  return kernel_order;
}

// The nest that distributes index assign[a] over mesh axis a (none on a trivial mesh),
// divides `divides` and runs the time loops `serial` in that order above the kernel. An
// index on several axes is distributed again inside its first axis's blocks, by a
// distribute call of its own; a divided index that is distributed divides its local loop.
LoopNest MakeLoopNest(const NestInputs& in, const std::vector<std::string>& assign,
                      const Divides& divides, const std::vector<std::string>& serial) {
  LoopNest n;
  std::map<std::string, int> splits;      // per index, the splits made so far
  std::vector<ir::DistributeCall> calls;  // per split number
  for (size_t a = 0; a < assign.size() && !in.trivial_mesh; ++a) {
    const std::string& i = assign[a];
    const int level = splits[i]++;
    if (static_cast<int>(calls.size()) <= level) calls.resize(level + 1);
    calls[level].vars.push_back(SplitVar(in, i, level));
    calls[level].outers.push_back(in.levels.at(i)[level].first);
    calls[level].inners.push_back(in.levels.at(i)[level].second);
    calls[level].axes.push_back(in.mesh.axes[a].name);
    n.distributed.push_back(in.levels.at(i)[level].first);
  }
  n.calls.insert(n.calls.end(), calls.begin(), calls.end());
  std::map<std::string, int64_t> extents;  // per time loop
  for (const auto& [index, parts] : divides) {
    const int level = splits[index]++;
    const auto& [outer, inner] = DivideLoops(in, assign, index);
    n.calls.push_back(ir::DivideCall{SplitVar(in, index, level), outer, inner, parts});
    extents[outer] = parts;
  }
  n.serial = serial;
  for (const std::string& t : serial) n.serial_extents.push_back(extents.at(t));
  std::vector<std::string> kernel_loops;
  for (const std::string& i : in.kernel_order) {
    const int made = splits[i];
    kernel_loops.push_back(made == 0 ? i : in.levels.at(i)[made - 1].second);
  }
  // Distribute calls move their loops outermost, the last call's first: a reorder puts the
  // distributed loops back in mesh order.
  if (!divides.empty() || calls.size() > 1) {
    ir::ReorderCall order;
    order.order = n.distributed;
    order.order.insert(order.order.end(), serial.begin(), serial.end());
    order.order.insert(order.order.end(), kernel_loops.begin(), kernel_loops.end());
    n.calls.push_back(order);
  }
  n.tensorize = ir::TensorizeCall{kernel_loops, in.kernel};
  return n;
}

// The rotations of `n`: none first, then per time loop each distributed loop alone (with
// options.rotation_steps also in steps of extent / axis size where that is above 1), with
// options.split_distributed each two of three or more, and with several all of them
// together; then, when `n` has a time loop, each of those again prefetched.
std::vector<Rotation> Rotations(const NestInputs& in, const LoopNest& n) {
  const SpaceOptions& options = in.options;
  std::vector<Rotation> rotations;
  rotations.push_back({});
  const std::vector<std::string>& d = n.distributed;
  for (size_t t = 0; t < n.serial.size(); ++t) {
    const std::string& loop = n.serial[t];
    for (size_t a = 0; a < d.size(); ++a) {
      rotations.push_back({loop, {d[a]}});
      const int64_t size = in.mesh.axes[a].size, extent = n.serial_extents[t];
      if (options.rotation_steps && extent > size && extent % size == 0)
        rotations.push_back({loop, {d[a]}, false, extent / size});
    }
    for (size_t a = 0; options.split_distributed && d.size() > 2 && a < d.size(); ++a) {
      for (size_t b = a + 1; b < d.size(); ++b) rotations.push_back({loop, {d[a], d[b]}});
    }
    if (d.size() > 1) rotations.push_back({loop, d});
  }
  if (n.serial.empty()) return rotations;
  const size_t plain = rotations.size();
  for (size_t r = 0; r < plain; ++r) {
    Rotation prefetched = rotations[r];
    prefetched.prefetch = true;
    rotations.push_back(std::move(prefetched));
  }
  return rotations;
}

// Where a tensor may be communicated in `n`: nowhere (""), at each time loop, or at the
// kernel's outermost loop.
std::vector<std::string> CommLevels(const NestInputs& in, const LoopNest& n) {
  const std::vector<std::string>& kernel_loops = n.tensorize.loops;
  const bool reordered = std::any_of(n.calls.begin(), n.calls.end(), [](const ir::Instruction& i) {
    return std::holds_alternative<ir::ReorderCall>(i);
  });
  std::vector<std::string> levels = {""};
  levels.insert(levels.end(), n.serial.begin(), n.serial.end());
  // The kernel's outermost loop: the first in kernel order after a reorder; without
  // one, loops keep the domain's order (indices by name).
  std::string kernel_outer = kernel_loops.front();
  if (!reordered) {
    const auto first = std::min_element(in.kernel_order.begin(), in.kernel_order.end(),
                                        [&](const auto& a, const auto& b) {
                                          return in.p.IndexPosition(a) < in.p.IndexPosition(b);
                                        });
    kernel_outer = kernel_loops[first - in.kernel_order.begin()];
  }
  levels.push_back(kernel_outer);
  return levels;
}

// Per tensor, its options: each of its layouts communicated at each of `levels`, except
// skewed layouts left uncommunicated (never admissible). A level among `n`'s time loops (each
// of at least 2 iterations: the space divides into 2 parts or more) can be prefetched.
std::vector<std::vector<TensorOption>> TensorOptions(const NestInputs& in, const LoopNest& n,
                                                     const std::vector<std::string>& levels) {
  std::vector<std::vector<TensorOption>> options;
  for (const std::vector<std::vector<ShardTarget>>& layouts : in.layouts) {
    std::vector<TensorOption> opts;
    for (const std::string& level : levels) {
      const bool time = std::find(n.serial.begin(), n.serial.end(), level) != n.serial.end();
      for (const std::vector<ShardTarget>& layout : layouts) {
        bool skewed = false;
        for (const ShardTarget& st : layout)
          skewed |= st.target.terms.size() > 1 || st.target.modulus != 0;
        if (skewed && level.empty()) continue;  // never admissible
        opts.push_back({layout, level, time, skewed});
      }
    }
    options.push_back(std::move(opts));
  }
  return options;
}

// Appends to `out` the nests of the distribution `assign` and the divides `divides`, one
// per order of the time loops.
void AddNestsPerOrder(const NestInputs& in, const std::vector<std::string>& assign,
                      const Divides& divides, std::vector<NestChoices>* out) {
  std::vector<std::string> serial;
  for (const auto& d : divides) serial.push_back(DivideLoops(in, assign, d.first).first);
  std::sort(serial.begin(), serial.end());
  do {
    NestChoices nc;
    nc.nest = MakeLoopNest(in, assign, divides, serial);
    nc.rotations = Rotations(in, nc.nest);
    nc.options = TensorOptions(in, nc.nest, CommLevels(in, nc.nest));
    out->push_back(std::move(nc));
  } while (std::next_permutation(serial.begin(), serial.end()));
}

// Appends to `out` the nests of the distribution `assign` for every choice of divides: a
// subset of `rest` (at most options.max_divided) with a factor each. A distributed index
// in `rest` divides its local loop (of the extent over the product of its axes, rounded
// up).
void AddNestsPerDivides(const NestInputs& in, const std::vector<std::string>& assign,
                        const std::vector<std::string>& rest, std::vector<NestChoices>* out) {
  Divides divides;
  auto local_extent = [&](const std::string& index) {
    int64_t e = in.p.extents.at(index);
    for (size_t a = 0; a < assign.size() && !in.trivial_mesh; ++a) {
      if (assign[a] == index) e = (e + in.mesh.axes[a].size - 1) / in.mesh.axes[a].size;
    }
    return e;
  };
  std::function<void(size_t)> divide_rec = [&](size_t r) {
    if (r < rest.size()) {
      divide_rec(r + 1);
      if (static_cast<int>(divides.size()) >= in.options.max_divided) return;
      for (int64_t parts : DivideParts(local_extent(rest[r]), in.mesh)) {
        divides.emplace_back(rest[r], parts);
        divide_rec(r + 1);
        divides.pop_back();
      }
      return;
    }
    AddNestsPerOrder(in, assign, divides, out);
  };
  divide_rec(0);
}

// Appends to `out` the nests of every distribution: mesh axis a runs index assign[a], all
// distinct (on a trivial mesh, none) — or, with options.split_distributed, one index on two
// axes at most once. Then the divides: of the indices not distributed, and with
// options.split_distributed also of the local loops of those distributed.
void AddNests(const NestInputs& in, std::vector<NestChoices>* out) {
  const int na = static_cast<int>(in.mesh.axes.size());
  std::vector<std::string> assign(na);
  std::function<void(int, int)> assign_rec = [&](int a, int repeats) {
    if (a < na && !in.trivial_mesh) {
      for (const std::string& i : in.p.indices) {
        const int before = static_cast<int>(std::count(assign.begin(), assign.begin() + a, i));
        const int more = repeats + (before > 0 ? 1 : 0);
        if (before > 0 && (!in.options.split_distributed || more > 1)) continue;
        assign[a] = i;
        assign_rec(a + 1, more);
      }
      return;
    }
    // No distribution that leaves a rank an empty part of an index.
    for (const std::string& i : in.p.indices) {
      int64_t extent = in.p.extents.at(i);
      for (int a = 0; a < na && !in.trivial_mesh; ++a) {
        if (assign[a] != i) continue;
        const int64_t parts = in.mesh.axes[a].size;
        if (!EveryPartHolds(extent, parts)) return;
        extent = (extent + parts - 1) / parts;
      }
    }
    std::vector<std::string> rest;
    for (const std::string& i : in.p.indices) {
      if (Distributions(in, assign, i) == 0) rest.push_back(i);
    }
    for (const std::string& i : in.p.indices) {
      if (in.options.split_distributed && Distributions(in, assign, i) > 0) rest.push_back(i);
    }
    AddNestsPerDivides(in, assign, rest, out);
  };
  assign_rec(0, 0);
}

}  // namespace

std::string LoopNest::Describe() const {
  std::vector<std::string> parts;
  for (const ir::Instruction& inst : calls) {
    if (const auto* d = std::get_if<ir::DistributeCall>(&inst)) {
      for (size_t i = 0; i < d->vars.size(); ++i)
        parts.push_back(absl::StrCat(d->vars[i], "@", d->axes[i]));
    } else if (const auto* v = std::get_if<ir::DivideCall>(&inst)) {
      parts.push_back(absl::StrCat(v->var, "/", v->parts));
    }
  }
  if (!serial.empty()) parts.push_back(absl::StrCat("order ", absl::StrJoin(serial, ",")));
  return absl::StrJoin(parts, " ");
}

std::string TensorOption::Describe() const {
  std::vector<std::string> t;
  for (const ShardTarget& s : targets) t.push_back(absl::StrCat(s.dim, "@", s.target.ToString()));
  std::string out = targets.empty() ? "replicated" : absl::StrJoin(t, ", ");
  if (!comm_loop.empty()) absl::StrAppend(&out, " at ", comm_loop);
  return out;
}

std::vector<ir::Mesh> MeshFactorisations(int64_t ranks, std::optional<int64_t> mem_per_rank,
                                         const std::set<std::string>& taken) {
  std::vector<std::string> kNames = {"a0", "a1", "a2"};
  for (const std::vector<std::string>& names :
       std::vector<std::vector<std::string>>{{"u", "v", "w"}, {"p", "q", "r"}, {"x", "y", "z"}}) {
    if (!taken.count(names[0]) && !taken.count(names[1]) && !taken.count(names[2])) kNames = names;
  }
  std::vector<ir::Mesh> out;
  std::function<void(int64_t, int64_t, std::vector<int64_t>)> rec =
      [&](int64_t left, int64_t max, std::vector<int64_t> sizes) {
        if (left == 1 && !sizes.empty()) {
          ir::Mesh m;
          for (size_t i = 0; i < sizes.size(); ++i) m.axes.push_back({kNames[i], sizes[i]});
          m.mem_per_rank_bytes = mem_per_rank;
          out.push_back(std::move(m));
          return;
        }
        if (sizes.size() == 3) return;
        for (int64_t f = std::min(left, max); f >= 2; --f) {
          if (left % f != 0) continue;
          std::vector<int64_t> next = sizes;
          next.push_back(f);
          rec(left / f, f, std::move(next));
        }
      };
  rec(ranks, ranks, {});
  if (ranks == 1) {
    ir::Mesh m;
    m.axes.push_back({kNames[0], 1});
    m.mem_per_rank_bytes = mem_per_rank;
    out.push_back(std::move(m));
  }
  return out;
}

absl::StatusOr<Space> Space::Build(const ir::Computation& base, const SpaceOptions& options) {
  const ir::Problem& p = base.problem();
  const ir::Mesh& mesh = base.mesh();
  if (p.indices.size() > kMaxIndices) {
    return absl::InvalidArgumentError(absl::StrCat("the problem has ", p.indices.size(),
                                                   " indices; the search enumerates at most ",
                                                   kMaxIndices));
  }
  Space space;
  space.tensors_ = p.Tensors();
  space.all_to_all_ = options.all_to_all;
  NestInputs in{p, mesh, options};
  in.trivial_mesh = mesh.Ranks() == 1;
  NameLoops(p, space.tensors_, mesh, &in);
  in.kernel_order = KernelOrder(p);
  in.kernel = KernelForm(base);
  // Per tensor, its shard layouts (independent of the nest).
  // No layout that leaves a rank an empty block of a dim (EveryPartHolds).
  auto holding = [&](const std::string& t, const SpaceOptions& o) {
    std::vector<std::vector<ShardTarget>> layouts;
    for (std::vector<ShardTarget>& layout : Layouts(p.FirstAccess(t)->indices, mesh, o)) {
      std::map<std::string, int64_t> parts;
      for (const ShardTarget& st : layout) {
        const auto [lo, hi] = st.target.Range(mesh);
        int64_t& n = parts.emplace(st.dim, 1).first->second;
        n *= st.target.modulus != 0 ? st.target.modulus : hi - lo + 1;
      }
      bool holds = true;
      for (const auto& [dim, n] : parts) holds = holds && EveryPartHolds(p.extents.at(dim), n);
      if (holds) layouts.push_back(std::move(layout));
    }
    return layouts;
  };
  SpaceOptions copies = options;
  copies.allow_replication = true;
  for (const std::string& t : space.tensors_) {
    std::vector<std::vector<ShardTarget>> layouts = holding(t, options);
    // A tensor too small to spread over every rank without an empty block (x[j], j=16, on
    // 5 ranks) is copied along the axes it cannot fill, whatever the storage policy.
    if (layouts.empty() && !options.allow_replication) layouts = holding(t, copies);
    in.layouts.push_back(std::move(layouts));
  }
  AddNests(in, &space.nests_);
  return space;
}

ir::Trace Space::ToTrace(const Genome& g) const {
  const NestChoices& n = nests_[g.nest];
  const Rotation& rot = n.rotations[g.rotation];
  ir::Trace trace;
  trace.instructions = n.nest.calls;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorOption& o = n.options[t][g.options[t]];
    if (!o.targets.empty()) trace.instructions.push_back(ir::ShardCall{tensors_[t], o.targets});
  }
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorOption& o = n.options[t][g.options[t]];
    if (o.comm_loop.empty()) continue;
    ir::CommunicateCall call{tensors_[t], o.comm_loop, {}, rot.prefetch && o.at_time_loop ? 1 : 0};
    if (!rot.loop.empty() && rot.loop == o.comm_loop) {
      call.rotate = rot.by;
      call.step = rot.step;
    }
    trace.instructions.push_back(call);
  }
  trace.instructions.push_back(n.nest.tensorize);
  return trace;
}

std::optional<Genome> Space::Find(const ir::Trace& trace) const {
  std::vector<ir::Instruction> loop_calls;
  std::optional<ir::TensorizeCall> tensorize;
  std::map<std::string, std::vector<ShardTarget>> targets;
  std::map<std::string, std::string> comm;
  std::map<std::string, bool> prefetch;  // per communicated tensor
  Rotation rot;
  for (const ir::Instruction& inst : trace.instructions) {
    if (const auto* s = std::get_if<ir::ShardCall>(&inst)) {
      targets[s->tensor] = s->targets;
    } else if (const auto* c = std::get_if<ir::CommunicateCall>(&inst)) {
      comm[c->tensor] = c->loop;
      prefetch[c->tensor] = c->prefetch != 0;
      rot.prefetch = rot.prefetch || c->prefetch != 0;
      if (!c->rotate.empty()) {
        if (!rot.loop.empty() &&
            (rot.loop != c->loop || rot.by != c->rotate || rot.step != c->step))
          return std::nullopt;
        rot.loop = c->loop;
        rot.by = c->rotate;
        rot.step = c->step;
      }
    } else if (const auto* t = std::get_if<ir::TensorizeCall>(&inst)) {
      tensorize = *t;
    } else {
      loop_calls.push_back(inst);
    }
  }
  if (!tensorize.has_value()) return std::nullopt;
  for (size_t n = 0; n < nests_.size(); ++n) {
    const NestChoices& nc = nests_[n];
    if (nc.nest.calls != loop_calls || !(nc.nest.tensorize == *tensorize)) continue;
    Genome g;
    g.nest = static_cast<int>(n);
    g.rotation = -1;
    for (size_t r = 0; r < nc.rotations.size(); ++r) {
      if (nc.rotations[r].loop == rot.loop && nc.rotations[r].by == rot.by &&
          nc.rotations[r].step == rot.step && nc.rotations[r].prefetch == rot.prefetch)
        g.rotation = static_cast<int>(r);
    }
    if (g.rotation < 0) return std::nullopt;
    for (size_t t = 0; t < tensors_.size(); ++t) {
      const std::vector<ShardTarget>& want = targets[tensors_[t]];
      const std::string& loop = comm[tensors_[t]];
      int found = -1;
      for (size_t o = 0; o < nc.options[t].size() && found < 0; ++o) {
        if (nc.options[t][o].targets == want && nc.options[t][o].comm_loop == loop)
          found = static_cast<int>(o);
      }
      // Prefetch is all or none: on every communicate at a time loop when the rotation has it.
      if (found < 0 ||
          prefetch[tensors_[t]] != (rot.prefetch && nc.options[t][found].at_time_loop)) {
        return std::nullopt;
      }
      g.options.push_back(found);
    }
    return g;
  }
  return std::nullopt;
}

}  // namespace meshtune::search
