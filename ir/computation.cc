#include "ir/computation.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/check.h"

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

absl::StatusOr<Computation> Computation::Create(const Problem& problem, const Mesh& mesh) {
  for (const MeshAxis& a : mesh.axes) {
    if (problem.IndexPosition(a.name) >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("mesh axis ", a.name,
                                                     " has the same name as an index of ",
                                                     problem.ToString(), "; rename one"));
    }
    if (problem.FirstAccess(a.name) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("mesh axis ", a.name,
                                                     " has the same name as a tensor of ",
                                                     problem.ToString(), "; rename one"));
    }
  }
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
  const std::string cond = bounds.empty() ? "" : absl::StrCat(" : ", absl::StrJoin(bounds, " and "));
  base->domain = NameSetDims(isl::set(ctx, absl::StrCat("{ ", dom_tuple, cond, " }")),
                             problem.indices);

  std::vector<const TensorAccess*> all = {&problem.output};
  for (const TensorAccess& a : problem.operands) all.push_back(&a);
  for (const TensorAccess* a : all) {
    std::vector<std::string> elems;
    for (const std::string& idx : a->indices) elems.push_back(iv[problem.IndexPosition(idx)]);
    isl::map m(ctx, absl::StrCat("{ ", dom_tuple, " -> ", a->tensor, "[", absl::StrJoin(elems, ","),
                                 "] }"));
    m = NameDomainDims(m.intersect_domain(base->domain), problem.indices);
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
    for (size_t d = 0; d < shape.size(); ++d) b.push_back(absl::StrCat("0 <= ", ev[d], " < ", shape[d]));
    base->tensor_sets.emplace(
        t, NameSetDims(isl::set(ctx, absl::StrCat("{ ", t, "[", absl::StrJoin(ev, ","), "]",
                                                  b.empty() ? "" : " : ", absl::StrJoin(b, " and "),
                                                  " }")),
                       problem.FirstAccess(t)->indices));
  }

  Computation c;
  c.base_ = std::move(base);
  const std::vector<std::string> tv = Vars("t", n);
  std::vector<std::string> eqs;
  for (size_t d = 0; d < n; ++d) eqs.push_back(absl::StrCat(tv[d], " = ", iv[d]));
  isl::map sched(ctx, absl::StrCat("{ ", dom_tuple, " -> S[", absl::StrJoin(tv, ","), "]",
                                   eqs.empty() ? "" : " : ", absl::StrJoin(eqs, " and "), " }"));
  c.schedule_ = NameDomainDims(NameRangeDims(sched.intersect_domain(c.base_->domain), problem.indices),
                               problem.indices);
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
  const Mesh& m = mesh();
  const std::vector<std::string> rv = Vars("r", m.axes.size());
  std::vector<std::string> b;
  for (size_t a = 0; a < m.axes.size(); ++a) b.push_back(absl::StrCat("0 <= ", rv[a], " < ", m.axes[a].size));
  const isl::set ranks(ctx(), absl::StrCat("{ Mesh[", absl::StrJoin(rv, ","), "] : ",
                                           absl::StrJoin(b, " and "), " }"));
  return MapFromDomainAndRange(TensorSet(tensor), ranks);
}

const Transfer* Computation::TransferOf(const std::string& tensor) const {
  for (const Transfer& t : transfers_) {
    if (t.tensor == tensor) return &t;
  }
  return nullptr;
}

isl::map Computation::Placement() const {
  const Mesh& m = mesh();
  const std::vector<std::string> tv = Vars("t", loops_.size());
  const std::vector<std::string> rv = Vars("r", m.axes.size());
  std::vector<std::string> cons;
  for (size_t a = 0; a < m.axes.size(); ++a) {
    int loop = -1;
    for (size_t j = 0; j < loops_.size(); ++j) {
      if (loops_[j].kind == LoopKind::kDistributed && loops_[j].axis == static_cast<int>(a)) {
        loop = static_cast<int>(j);
      }
    }
    cons.push_back(loop >= 0 ? absl::StrCat(rv[a], " = ", tv[loop])
                             : absl::StrCat("0 <= ", rv[a], " < ", m.axes[a].size));
  }
  return isl::map(ctx(), absl::StrCat("{ S[", absl::StrJoin(tv, ","), "] -> Mesh[",
                                      absl::StrJoin(rv, ","), "] : ", absl::StrJoin(cons, " and "),
                                      " }"));
}

isl::map Computation::Execution() const { return schedule_.apply_range(Placement()); }

std::string Computation::ScheduleString() const { return ToString(schedule_); }

std::string Computation::LayoutString(const std::string& tensor) const {
  const Sharding* s = sharding(tensor);
  return s == nullptr ? "replicated" : ToString(s->layout);
}

Computation Computation::WithSchedule(isl::map schedule, std::vector<Loop> loops) const {
  Computation c = *this;
  std::vector<std::string> names;
  for (const Loop& l : loops) names.push_back(l.name);
  c.schedule_ = NameDomainDims(NameRangeDims(schedule, names), base_->problem.indices);
  c.loops_ = std::move(loops);
  return c;
}

Computation Computation::WithSharding(const std::string& tensor, Sharding sharding) const {
  Computation c = *this;
  c.shardings_[tensor] = std::move(sharding);
  return c;
}

Computation Computation::WithTransfer(Transfer transfer) const {
  Computation c = *this;
  c.transfers_.push_back(std::move(transfer));
  return c;
}

Computation Computation::WithKernel(std::string op) const {
  Computation c = *this;
  c.kernel_ = std::move(op);
  return c;
}

}  // namespace meshtune::ir
