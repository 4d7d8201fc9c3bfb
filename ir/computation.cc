#include "ir/computation.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/excerpt.h"
#include "ir/layout.h"

namespace meshtune::ir {

absl::string_view LoopKindName(LoopKind kind) {
  switch (kind) {
    case LoopKind::kSerial:
      return "serial";
    case LoopKind::kDistributed:
      return "distributed";
    case LoopKind::kTensorized:
      return "tensorized";
  }
  return "?";
}

std::vector<std::string> Computation::Vars(absl::string_view prefix, size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) v.push_back(absl::StrCat(prefix, i));
  return v;
}

absl::Status CheckMeshNames(const Problem& problem, const Mesh& mesh) {
  for (const MeshAxis& a : mesh.axes) {
    if (problem.IndexPosition(a.name) >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis ", base::Excerpt(a.name), " has the same name as an index of ",
                       base::Excerpt(problem.ToString(), 2 * base::kMaxExcerpt), "; rename one"));
    }
    if (problem.FirstAccess(a.name) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis ", base::Excerpt(a.name), " has the same name as a tensor of ",
                       base::Excerpt(problem.ToString(), 2 * base::kMaxExcerpt), "; rename one"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Computation> Computation::Create(const Problem& problem, const Mesh& mesh) {
  if (absl::Status s = CheckMeshNames(problem, mesh); !s.ok()) return s;
  if (absl::Status s = CheckLayoutAxes(problem, mesh); !s.ok()) return s;
  auto base = std::make_shared<Base>();
  base->isl = std::make_shared<IslContext>();
  base->problem = problem;
  base->mesh = mesh;
  const isl::ctx ctx = base->isl->ctx();
  const size_t n = problem.indices.size();
  const std::vector<std::string> iv = Vars("i", n);
  std::vector<std::string> bounds;
  for (size_t d = 0; d < n; ++d) {
    bounds.push_back(absl::StrCat("0 <= ", iv[d], " < ", problem.extents.at(problem.indices[d])));
  }
  const std::string dom_tuple = absl::StrCat("S[", absl::StrJoin(iv, ","), "]");
  const std::string cond =
      bounds.empty() ? "" : absl::StrCat(" : ", absl::StrJoin(bounds, " and "));
  base->domain =
      NameSetDims(isl::set(ctx, absl::StrCat("{ ", dom_tuple, cond, " }")), problem.indices);

  std::vector<const TensorAccess*> all = {&problem.output};
  for (const TensorAccess& a : problem.operands) all.push_back(&a);
  for (const TensorAccess* a : all) {
    std::vector<std::string> elems;
    for (const std::string& idx : a->indices) elems.push_back(iv[problem.IndexPosition(idx)]);
    isl::map m(ctx, absl::StrCat("{ ", dom_tuple, " -> ", a->tensor, "[", absl::StrJoin(elems, ","),
                                 "] }"));
    m = NameDomainDims(m.intersect_domain(base->domain), problem.indices);
    base->operand_accesses.push_back(m);
    auto it = base->accesses.find(a->tensor);
    if (it == base->accesses.end()) {
      base->accesses.emplace(a->tensor, m);
    } else {
      it->second = it->second.unite(m);
    }
  }
  for (const std::string& t : problem.Tensors()) {
    const std::vector<int64_t> shape = problem.Shape(t);
    const std::vector<std::string> ev = Vars("e", shape.size());
    std::vector<std::string> b;
    for (size_t d = 0; d < shape.size(); ++d)
      b.push_back(absl::StrCat("0 <= ", ev[d], " < ", shape[d]));
    base->tensor_sets.emplace(
        t, NameSetDims(
               isl::set(ctx, absl::StrCat("{ ", t, "[", absl::StrJoin(ev, ","), "]",
                                          b.empty() ? "" : " : ", absl::StrJoin(b, " and "), " }")),
               problem.FirstAccess(t)->indices));
  }

  Computation c;
  c.base_ = std::move(base);
  for (const std::string& idx : problem.indices) {
    Loop l;
    l.name = idx;
    l.extent = problem.extents.at(idx);
    l.origin = idx;
    c.loops_.push_back(l);
  }
  return c;
}

const isl::map& Computation::Access(const std::string& tensor) const {
  auto it = base_->accesses.find(tensor);
  MT_CHECK(it != base_->accesses.end());
  return it->second;
}

const isl::set& Computation::TensorSet(const std::string& tensor) const {
  auto it = base_->tensor_sets.find(tensor);
  MT_CHECK(it != base_->tensor_sets.end());
  return it->second;
}

int Computation::LoopIndex(absl::string_view name) const {
  for (size_t i = 0; i < loops_.size(); ++i) {
    if (loops_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const Sharding* Computation::sharding(const std::string& tensor) const {
  auto it = shardings_.find(tensor);
  return it == shardings_.end() ? nullptr : &it->second;
}

isl::map Computation::Owners(const std::string& tensor) const {
  if (const Sharding* s = sharding(tensor)) return s->owners;
  std::vector<int64_t> sizes;
  for (const MeshAxis& a : mesh().axes) sizes.push_back(a.size);
  return MapFromDomainAndRange(TensorSet(tensor),
                               Box(SetSpace(ctx(), "Mesh", sizes.size()), sizes));
}

const Communication* Computation::TransferOf(const std::string& tensor) const {
  for (const Communication& t : transfers_) {
    if (t.tensor == tensor) return &t;
  }
  return nullptr;
}

int64_t Computation::Reach(const std::string& index) const {
  int64_t reach = 1;
  for (const Loop& l : loops_) {
    if (l.origin == index) reach *= l.extent;
  }
  return reach;
}

bool Computation::Ragged(const std::string& index) const {
  return Reach(index) > problem().extents.at(index);
}

std::vector<int64_t> Computation::StorageShape(const std::string& tensor) const {
  const Sharding* s = sharding(tensor);
  std::vector<int64_t> shape = s != nullptr ? s->local_shape : problem().Shape(tensor);
  const std::vector<std::string>& dims = problem().FirstAccess(tensor)->indices;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (s == nullptr || s->blocks[d].empty()) shape[d] = std::max(shape[d], Reach(dims[d]));
  }
  return shape;
}

bool Computation::OutermostOfIndex(size_t j) const {
  const Loop& l = loops_[j];
  for (const Loop& o : loops_) {
    if (o.origin == l.origin && o.extent > 1 && o.stride > l.stride) return false;
  }
  return true;
}

isl::aff Computation::LoopValue(size_t j) const {
  const Loop& l = loops_[j];
  const isl::aff index = DomainVar(domain().space(), problem().IndexPosition(l.origin));
  // A loop of one iteration is 0 (its stride may equal that of the loop outside it).
  if (l.extent == 1) return Sub(index, index);
  isl::aff v = FloorDiv(index, l.stride);
  if (l.rotate.empty()) return OutermostOfIndex(j) ? v : Mod(v, l.extent);
  for (const std::string& r : l.rotate) v = Sub(v, Scale(LoopValue(LoopIndex(r)), l.rotate_step));
  return Mod(v, l.extent);
}

isl::map Computation::PlacedMap(const std::string& tuple, int depth, bool padded) const {
  const Mesh& m = mesh();
  std::vector<isl::aff> fs;
  std::vector<bool> free(m.axes.size(), true);
  const isl::aff zero = Sub(DomainVar(domain().space(), 0), DomainVar(domain().space(), 0));
  for (size_t a = 0; a < m.axes.size(); ++a) {
    fs.push_back(zero);
    for (size_t j = 0; j < loops_.size(); ++j) {
      if (loops_[j].kind == LoopKind::kDistributed && loops_[j].axis == static_cast<int>(a)) {
        fs.back() = LoopValue(j);
        free[a] = false;
      }
    }
  }
  for (int j = 0; j < depth; ++j) fs.push_back(LoopValue(j));
  isl::set points = domain();
  if (padded) {
    std::vector<int64_t> reach;
    for (const std::string& index : problem().indices) reach.push_back(Reach(index));
    points = Box(domain().space(), reach);
  }
  isl::map out = MapFromAffs(domain().space(), tuple, fs).intersect_domain(points);
  std::vector<int64_t> bounds(m.axes.size() + depth, 0);
  bool any_free = false;
  for (size_t a = 0; a < m.axes.size(); ++a) {
    if (!free[a]) continue;
    out = FreeRangeDim(out, a);
    bounds[a] = m.axes[a].size;
    any_free = true;
  }
  if (!any_free) return out;
  return out.intersect_range(Box(SetSpace(ctx(), tuple, bounds.size()), bounds));
}

const isl::map& Computation::schedule() const {
  if (!schedule_.has_value()) {
    std::vector<isl::aff> fs;
    std::vector<std::string> names;
    for (size_t j = 0; j < loops_.size(); ++j) {
      fs.push_back(LoopValue(j));
      names.push_back(loops_[j].name);
    }
    const isl::map m = MapFromAffs(domain().space(), "S", fs).intersect_domain(domain());
    schedule_ = NameDomainDims(NameRangeDims(m, names), problem().indices);
  }
  return *schedule_;
}

isl::map Computation::RankAndTime(int depth, bool padded) const {
  return MemoMap(absl::StrCat(LoopsKey(), "|RankAndTime ", depth, padded ? " padded" : ""),
                 [&] { return PlacedMap("P", depth, padded); });
}

isl::map Computation::Execution() const {
  return MemoMap(absl::StrCat(LoopsKey(), "|Execution"), [&] { return PlacedMap("Mesh", 0); });
}

std::string Computation::ScheduleString() const {
  return ToString(schedule().detect_equalities().coalesce());
}

std::string Computation::LayoutString(const std::string& tensor) const {
  const Sharding* s = sharding(tensor);
  return s == nullptr ? "replicated" : ToString(s->layout);
}

const std::string& Computation::LoopsKey() const {
  if (!loops_key_.has_value()) {
    std::string key = kernel_;
    for (const Loop& l : loops_) {
      absl::StrAppend(&key, ";", l.name, ":", l.extent, ":", static_cast<int>(l.kind), ":", l.axis,
                      ":", l.origin, ":", l.stride, ":", absl::StrJoin(l.rotate, ","), "*",
                      l.rotate_step);
    }
    loops_key_ = std::move(key);
  }
  return *loops_key_;
}

namespace {

// `memo[key]`, computed with `make` on a miss.
template <typename T>
T Remembered(std::unordered_map<std::string, T>& memo, const std::string& key,
             const std::function<T()>& make) {
  auto it = memo.find(key);
  if (it == memo.end()) it = memo.emplace(key, make()).first;
  return it->second;
}

}  // namespace

isl::map Computation::MemoMap(const std::string& key, const std::function<isl::map()>& make) const {
  return Remembered(base_->memo_maps, key, make);
}

bool Computation::MemoBool(const std::string& key, const std::function<bool()>& make) const {
  return Remembered(base_->memo_bools, key, make);
}

int64_t Computation::MemoInt(const std::string& key, const std::function<int64_t()>& make) const {
  return Remembered(base_->memo_ints, key, make);
}

std::string Computation::TensorKey(const std::string& tensor) const {
  std::string key = tensor;
  if (const Sharding* s = sharding(tensor)) {
    for (const ShardTarget& t : s->targets)
      absl::StrAppend(&key, " ", t.dim, "@", t.target.ToString());
  }
  if (const Communication* t = TransferOf(tensor)) {
    absl::StrAppend(&key, " @", t->loop, "/", absl::StrJoin(t->rotate, ","));
  }
  return key;
}

Computation Computation::WithLoops(std::vector<Loop> loops) const {
  Computation c = *this;
  c.loops_ = std::move(loops);
  c.schedule_.reset();
  c.loops_key_.reset();
  return c;
}

Computation Computation::WithSharding(const std::string& tensor, Sharding sharding) const {
  Computation c = *this;
  c.shardings_[tensor] = std::move(sharding);
  return c;
}

Computation Computation::WithTransfer(Communication transfer) const {
  Computation c = *this;
  c.transfers_.push_back(std::move(transfer));
  return c;
}

Computation Computation::WithKernel(std::string op) const {
  Computation c = *this;
  c.kernel_ = std::move(op);
  c.loops_key_.reset();
  return c;
}

}  // namespace meshtune::ir
