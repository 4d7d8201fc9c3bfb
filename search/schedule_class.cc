#include "search/schedule_class.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "search/lower_bound.h"

namespace meshtune::search {

namespace {

// The mesh axes (of size >= 2) carrying output indices and those carrying reduction indices.
struct AxisUse {
  std::set<int> output, reduction;
};

// Follows `calls`, mapping each loop they make to the problem index it came from, and
// records which axes the distribute calls put output and reduction indices on.
class LoopOrigins {
 public:
  LoopOrigins(const ir::Problem& problem, const ir::Mesh& mesh) : problem_(problem), mesh_(mesh) {
    for (const std::string& i : problem.indices) origin_[i] = i;
  }

  absl::Status Apply(const ir::Instruction& inst) {
    if (const auto* s = std::get_if<ir::SplitCall>(&inst))
      return Derive(s->var, {s->outer, s->inner});
    if (const auto* d = std::get_if<ir::DivideCall>(&inst))
      return Derive(d->var, {d->outer, d->inner});
    if (const auto* d = std::get_if<ir::DistributeCall>(&inst)) return Distribute(*d);
    return absl::OkStatus();
  }
  const AxisUse& use() const { return use_; }

 private:
  // The problem index loop `loop` came from, or InvalidArgument.
  absl::StatusOr<std::string> Origin(const std::string& loop) const {
    auto it = origin_.find(loop);
    if (it == origin_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("loop '", loop, "' is neither an index of ",
                                                     problem_.ToString(),
                                                     " nor made by an earlier call"));
    }
    return it->second;
  }
  absl::Status Derive(const std::string& var, const std::vector<std::string>& made) {
    absl::StatusOr<std::string> index = Origin(var);
    if (!index.ok()) return index.status();
    for (const std::string& m : made) origin_[m] = *index;
    return absl::OkStatus();
  }
  absl::Status Distribute(const ir::DistributeCall& d) {
    for (size_t j = 0; j < d.vars.size() && j < d.axes.size(); ++j) {
      absl::StatusOr<std::string> index = Origin(d.vars[j]);
      if (!index.ok()) return index.status();
      if (j < d.outers.size()) origin_[d.outers[j]] = *index;
      if (j < d.inners.size()) origin_[d.inners[j]] = *index;
      const int axis = mesh_.AxisIndex(d.axes[j]);
      if (axis < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "distribute names axis '", d.axes[j], "', which mesh ", mesh_.ToString(), " lacks"));
      }
      if (mesh_.axes[axis].size < 2) continue;
      (problem_.IsReductionIndex(*index) ? use_.reduction : use_.output).insert(axis);
    }
    return absl::OkStatus();
  }

  const ir::Problem& problem_;
  const ir::Mesh& mesh_;
  std::map<std::string, std::string> origin_;  // loop -> problem index
  AxisUse use_;
};

// The class of a schedule that uses the axes of `mesh` as `use` says (see the header).
std::string Classify(const AxisUse& use, const ir::Mesh& mesh) {
  const bool two_output_axes = use.output.size() >= 2;
  if (use.reduction.empty()) return two_output_axes ? "2D" : "1D";
  if (!two_output_axes) return "split-k";
  int64_t reduction = 1, smallest_output = 0;
  for (int a : use.reduction) reduction *= mesh.axes[a].size;
  for (int a : use.output) {
    const int64_t s = mesh.axes[a].size;
    smallest_output = smallest_output == 0 ? s : std::min(smallest_output, s);
  }
  return reduction >= smallest_output ? "3D" : "2.5D";
}

}  // namespace

absl::StatusOr<std::string> ScheduleClassOfCalls(const std::vector<ir::Instruction>& calls,
                                                 const ir::Problem& problem, const ir::Mesh& mesh) {
  LoopOrigins origins(problem, mesh);
  for (const ir::Instruction& inst : calls) {
    if (absl::Status s = origins.Apply(inst); !s.ok()) return s;
  }
  return Classify(origins.use(), mesh);
}

absl::StatusOr<std::string> ScheduleClassOfTrace(const ir::Trace& trace, const ir::Problem& problem,
                                                 const ir::Mesh& mesh) {
  return ScheduleClassOfCalls(trace.instructions, problem, mesh);
}

std::string ScheduleClass(const Candidate& c, const Space& space, const ir::Problem& problem,
                          const ir::Mesh& mesh) {
  MT_CHECK(c.genome.nest >= 0 && c.genome.nest < static_cast<int>(space.nests().size()));
  absl::StatusOr<std::string> cls =
      ScheduleClassOfCalls(space.nests()[c.genome.nest].nest.calls, problem, mesh);
  MT_CHECK(cls.ok());
  return *cls;
}

std::vector<ClassBest> BestPerClass(Explorer& explorer, const ir::Problem& problem) {
  std::map<std::pair<int, int>, std::string> class_of;  // (mesh, nest) -> class
  std::map<std::string, const Candidate*> best;
  for (const Candidate& c : explorer.candidates()) {
    auto [it, fresh] = class_of.try_emplace({c.mesh, c.genome.nest});
    if (fresh) {
      it->second =
          ScheduleClass(c, explorer.evaluator(c.mesh).space(), problem, explorer.mesh(c.mesh));
    }
    const Candidate*& b = best[it->second];
    if (b == nullptr || Explorer::Better(c, *b)) b = &c;
  }
  std::vector<ClassBest> out;
  for (const char* name : kScheduleClasses) {
    auto it = best.find(name);
    if (it == best.end()) continue;
    ClassBest cb;
    cb.schedule_class = name;
    cb.best = *it->second;
    const ir::Mesh& mesh = explorer.mesh(cb.best.mesh);
    cb.mesh = mesh.ToString();
    const std::optional<double> bound = CommLowerBound(problem, mesh.Ranks());
    if (bound.has_value() && *bound > 0) {
      cb.lower_bound_ratio = static_cast<double>(cb.best.cost.comm_words_per_rank) / *bound;
    }
    out.push_back(std::move(cb));
  }
  return out;
}

}  // namespace meshtune::search
