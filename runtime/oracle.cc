#include "runtime/oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/box.h"
#include "runtime/fill.h"

namespace meshtune::runtime {

std::vector<int64_t> ProblemSpec::Shape(const std::string& tensor) const {
  const Access* access = tensor == output.tensor ? &output : nullptr;
  for (size_t i = 0; access == nullptr && i < operands.size(); ++i) {
    if (operands[i].tensor == tensor) access = &operands[i];
  }
  std::vector<int64_t> shape;
  if (access == nullptr) return shape;
  for (const std::string& index : access->indices) {
    const auto it = extents.find(index);
    shape.push_back(it == extents.end() ? 0 : it->second);
  }
  return shape;
}

Reference::Reference(const ProblemSpec& problem, uint64_t seed, OperandValues values)
    : output_(problem.output.tensor),
      sum_(problem.sum),
      accumulate_(problem.accumulate),
      seed_(seed),
      values_(std::move(values)),
      output_shape_(problem.Shape(problem.output.tensor)) {
  // A point: the output's indices, then the reduction's, in the extents' order.
  std::vector<std::string> point = problem.output.indices;
  for (const auto& [index, extent] : problem.extents) {
    if (std::find(point.begin(), point.end(), index) != point.end()) continue;
    point.push_back(index);
    reduction_extents_.push_back(extent);
    terms_ *= extent;
  }
  for (const ProblemSpec::Access& a : problem.operands) {
    Operand o{a.tensor, {}, problem.Shape(a.tensor)};
    for (const std::string& index : a.indices) {
      o.at.push_back(
          static_cast<int>(std::find(point.begin(), point.end(), index) - point.begin()));
    }
    operands_.push_back(std::move(o));
  }
}

double Reference::At(const std::vector<int64_t>& g, double* magnitude) const {
  double ref = accumulate_ ? ElementValue(seed_, output_, Linear(g, output_shape_)) : 0.0;
  double mag = std::abs(ref);
  std::vector<int64_t> point = g;
  point.resize(g.size() + reduction_extents_.size());
  std::vector<int64_t> e;
  ForEachPoint(reduction_extents_.empty() ? std::vector<int64_t>{1} : reduction_extents_,
               [&](const std::vector<int64_t>& r) {
                 for (size_t k = 0; k < reduction_extents_.size(); ++k) point[g.size() + k] = r[k];
                 double term = sum_ ? 0.0 : 1.0;
                 for (const Operand& o : operands_) {
                   e.resize(o.at.size());
                   for (size_t d = 0; d < o.at.size(); ++d) e[d] = point[o.at[d]];
                   const int64_t at = Linear(e, o.shape);
                   const double v =
                       values_ ? values_(o.tensor, at) : ElementValue(seed_, o.tensor, at);
                   term = sum_ ? term + v : term * v;
                 }
                 ref += term;
                 mag += std::abs(term);
               });
  if (magnitude != nullptr) *magnitude = mag;
  return ref;
}

std::string RankName(const std::vector<std::string>& axis_names, const Coords& coords) {
  std::vector<std::string> parts;
  for (size_t a = 0; a < coords.size() && a < axis_names.size(); ++a)
    parts.push_back(absl::StrCat(axis_names[a], "=", coords[a]));
  return absl::StrJoin(parts, ", ");
}

namespace {

// "C[1, 2]": element `linear` of `tensor` of `shape`.
std::string ElementName(const std::string& tensor, const std::vector<int64_t>& shape,
                        int64_t linear) {
  return absl::StrCat(tensor, "[", absl::StrJoin(Unlinear(linear, shape), ", "), "]");
}

}  // namespace

std::string CheckHeldValues(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                            double tolerance, const std::string& rank, const OperandValues& values,
                            int64_t limit, int64_t cost) {
  const Reference reference(problem, seed, values);
  const std::vector<int64_t> shape = problem.Shape(problem.output.tensor);
  const int64_t work = held.slots * (cost > 0 ? cost : reference.terms());
  const int64_t step = work > limit ? std::max<int64_t>(1, work / std::max<int64_t>(limit, 1)) : 1;
  for (int64_t i = 0; i < held.slots; i += step) {
    const int64_t linear = held.global(i);
    if (linear < 0) continue;
    double mag = 0;
    const double ref = reference.At(Unlinear(linear, shape), &mag);
    const double got = held.value(i);
    if (!(std::abs(got - ref) <= tolerance * mag + 1e-6)) {
      return absl::StrFormat("rank (%s): %s = %.6g but the reference is %.6g", rank,
                             ElementName(problem.output.tensor, shape, linear), got, ref);
    }
  }
  return "";
}

std::string CheckCoverage(const ProblemSpec& problem, const HeldOutput& held, double tolerance,
                          Comm& comm) {
  const std::vector<int64_t> shape = problem.Shape(problem.output.tensor);
  const int64_t total = Elements(shape);
  // This rank's elements by global index, so that each chunk is a contiguous run of them.
  std::vector<std::pair<int64_t, double>> mine;
  mine.reserve(static_cast<size_t>(held.slots));
  for (int64_t i = 0; i < held.slots; ++i) {
    const int64_t g = held.global(i);
    if (g >= 0 && g < total) mine.emplace_back(g, held.value(i));
  }
  std::sort(mine.begin(), mine.end());
  constexpr int64_t kChunk = int64_t{1} << 20;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> count, extreme;  // extreme: the highest value, then minus the lowest
  size_t next = 0;
  for (int64_t lo = 0; lo < total; lo += kChunk) {
    const int64_t n = std::min(kChunk, total - lo);
    count.assign(static_cast<size_t>(n), 0.0);
    extreme.assign(static_cast<size_t>(2 * n), -inf);
    for (; next < mine.size() && mine[next].first < lo + n; ++next) {
      const int64_t i = mine[next].first - lo;
      // A value that is not a number marks its element as not finite.
      const double v = std::isnan(mine[next].second) ? inf : mine[next].second;
      count[i] += 1;
      extreme[i] = std::max(extreme[i], v);
      extreme[n + i] = std::max(extreme[n + i], -v);
    }
    comm.Allreduce(count.data(), n, DataType::kDouble, ReduceOp::kSum, comm.AllAxes());
    comm.Allreduce(extreme.data(), 2 * n, DataType::kDouble, ReduceOp::kMax, comm.AllAxes());
    for (int64_t i = 0; i < n; ++i) {
      const auto name = [&] { return ElementName(problem.output.tensor, shape, lo + i); };
      if (count[i] == 0) return absl::StrCat(name(), " is held by no rank");
      const double high = extreme[i], low = -extreme[n + i];
      if (!std::isfinite(high) || !std::isfinite(low))
        return absl::StrCat(name(), " is not a finite number on some rank");
      if (!(high - low <= tolerance * (std::abs(high) + std::abs(low)) + 1e-6)) {
        return absl::StrFormat("%s differs between its copies: %.6g and %.6g", name(), low, high);
      }
    }
  }
  return "";
}

}  // namespace meshtune::runtime
