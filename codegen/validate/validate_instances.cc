// The validator's instances of the program's leaves, their order on a rank, and which rank
// holds which element of a tensor.
#include "codegen/validate/validator.h"
#include "ir/isl_util.h"

namespace meshtune::codegen::validation {

isl::set Validator::InstSet(const Frame& f, unsigned at, const Node& n) const {
  isl::set s = InMesh(f, Coords(f, at)).intersect(f.Var(at + na_).eq_set(f.Cst(n.id)));
  for (size_t k = 0; k < depth_; ++k) {
    const isl::pw_aff v = f.Var(at + na_ + 1 + k);
    if (k < n.depth()) {
      const int64_t lo = n.loops[k]->lo.value();
      s = s.intersect(f.Within(v, lo, lo + n.loops[k]->extent));
    } else {
      s = s.intersect(v.eq_set(f.Cst(0)));
    }
  }
  return s;
}

isl::map Validator::Before(const Node& x, const Node& y) const {
  const unsigned ni = InstDims();
  const Frame f(ctx_, 2 * ni);
  const size_t c = CommonDepth(x, y);
  const unsigned vx = na_ + 1, vy = ni + na_ + 1;
  // Earlier in the first shared loop where they differ, or in the same iteration of all
  // shared loops with x's subtree first in the loop body.
  isl::set order = f.None(), same = f.All();
  for (size_t l = 0; l < c; ++l) {
    order = order.unite(same.intersect(f.Var(vx + l).lt_set(f.Var(vy + l))));
    same = same.intersect(f.Var(vx + l).eq_set(f.Var(vy + l)));
  }
  if (x.order[c] < y.order[c]) order = order.unite(same);
  const isl::set s = InstSet(f, 0, x)
                         .intersect(InstSet(f, ni, y))
                         .intersect(f.Equal(Coords(f, 0), Coords(f, ni)))
                         .intersect(order);
  return Split(s.coalesce(), ni);
}

isl::map Validator::SameIteration(const Node& x, const Node& y) const {
  const unsigned ni = InstDims();
  const Frame f(ctx_, 2 * ni);
  isl::set s =
      InstSet(f, 0, x).intersect(InstSet(f, ni, y)).intersect(f.Equal(Coords(f, 0), Coords(f, ni)));
  for (size_t l = 0; l < CommonDepth(x, y); ++l)
    s = s.intersect(f.Var(na_ + 1 + l).eq_set(f.Var(ni + na_ + 1 + l)));
  return Split(s, ni);
}

isl::map Validator::LastWriter(const Node& reader, const std::vector<const Node*>& writers) const {
  if (writers.size() == 1) {
    const Node& w = *writers[0];
    const size_t c = CommonDepth(w, reader);
    // All of w's loops enclose the reader and w comes first in their body: the reader sees
    // the write of the same iteration.
    if (c == w.depth() && w.order[c] < reader.order[c]) return SameIteration(reader, w);
    return Before(w, reader).reverse().lexmax();
  }
  // The latest write of each writer, then the one that runs after all the others.
  std::vector<isl::map> latest;
  for (const Node* w : writers) latest.push_back(Before(*w, reader).reverse().lexmax());
  isl::map last = isl::map::empty(latest[0].space());
  for (size_t i = 0; i < writers.size(); ++i) {
    isl::set keep = latest[i].domain();
    for (size_t j = 0; j < writers.size(); ++j) {
      if (j == i) continue;
      const isl::set j_first = FlatRangeProduct(latest[j], latest[i])
                                   .intersect_range(Flatten(Before(*writers[j], *writers[i])))
                                   .domain();
      keep = keep.subtract(latest[j].domain().subtract(j_first));
    }
    last = last.unite(latest[i].intersect_domain(keep));
  }
  return last;
}

absl::StatusOr<Affs> Validator::BlockStart(const std::string& tensor, const Frame& f,
                                           const Affs& coords) const {
  const Env env = MakeEnv(coords, nullptr, {});
  Affs out;
  for (const DimLayout& l : p_.Tensor(tensor)->layout) {
    isl::pw_aff start = f.Cst(0);
    for (const auto& [block, index] : l.blocks) {
      MT_ASSIGN_OR_RETURN(const isl::pw_aff i, ToPwAff(index, f, env));
      start = start.add(i.scale(block));
    }
    out.push_back(start);
  }
  return out;
}

absl::StatusOr<isl::set> Validator::Holds(const std::string& tensor, const Frame& f,
                                          const Affs& coords, const Affs& e) const {
  MT_ASSIGN_OR_RETURN(const Affs start, BlockStart(tensor, f, coords));
  const TensorInfo& info = *p_.Tensor(tensor);
  const std::vector<int64_t>& local = info.local_shape;
  isl::set s = InMesh(f, coords);
  // An output held on one layer: only its ranks at coordinate 0 there hold the result.
  for (int a : LayerAxes(p_, info)) s = s.intersect(coords[a].eq_set(f.Cst(0)));
  for (size_t d = 0; d < e.size(); ++d) {
    s = s.intersect(e[d].ge_set(start[d])).intersect(e[d].lt_set(start[d].add(f.Cst(local[d]))));
  }
  return s;
}

}  // namespace meshtune::codegen::validation
