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

Precision PrecisionOf(int dtype_bytes) {
  return dtype_bytes == 8 ? Precision::kF64 : Precision::kF32;
}

double UnitRoundoff(Precision precision) {
  return precision == Precision::kF64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
}

double Gamma(int64_t n, double u) {
  const double nu = static_cast<double>(std::max<int64_t>(n, 0)) * u;
  return nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
}

double Expected::Tolerance() const {
  return kToleranceSafety * (run_error + ref_error) + kToleranceFloor;
}

Expected FilledValue(uint64_t seed, const std::string& tensor, int64_t linear,
                     Precision precision) {
  const double v = ElementValue(seed, tensor, linear);
  const double held = precision == Precision::kF32 ? static_cast<double>(static_cast<float>(v)) : v;
  return {v, std::abs(held - v), 0.0, std::abs(v)};
}

Reference::Reference(const ProblemSpec& problem, uint64_t seed, Precision precision,
                     OperandValues values)
    : output_(problem.output.tensor),
      sum_(problem.sum),
      accumulate_(problem.accumulate),
      seed_(seed),
      precision_(precision),
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
  // The roundings on an element's longest path (oracle.h): k - 1 products and n - 1 sums
  // of the terms, or k n - 1 sums of every operand value; one more for a `+=` output.
  const int64_t k = static_cast<int64_t>(operands_.size());
  roundings_ = (sum_ ? k * terms_ - 1 : (k - 1) + (terms_ - 1)) + (accumulate_ ? 1 : 0);
  roundings_ = std::max<int64_t>(roundings_, 0);
}

Expected Reference::ValueOf(const Operand& o, const std::vector<int64_t>& point,
                            std::vector<int64_t>* scratch) const {
  std::vector<int64_t>& e = *scratch;
  e.resize(o.at.size());
  for (size_t d = 0; d < o.at.size(); ++d) e[d] = point[o.at[d]];
  const int64_t at = Linear(e, o.shape);
  return values_ ? values_(o.tensor, at) : FilledValue(seed_, o.tensor, at, precision_);
}

Expected Reference::At(const std::vector<int64_t>& g) const {
  const Expected c0 =
      accumulate_ ? FilledValue(seed_, output_, Linear(g, output_shape_), precision_) : Expected{};
  double ref = c0.value;
  // The sums of the bound (oracle.h): what the inputs carry into the run's and the
  // reference's values, and the magnitudes their roundings scale.
  double carried_run = c0.run_error, carried_ref = c0.ref_error;
  double run_magnitude = std::abs(c0.value) + c0.ref_error + c0.run_error;
  double ref_magnitude = std::abs(c0.value);
  double magnitude = std::abs(c0.value);  // |c0| + sum |t_r|
  std::vector<int64_t> point = g;
  point.resize(g.size() + reduction_extents_.size());
  std::vector<int64_t> scratch;
  ForEachPoint(reduction_extents_.empty() ? std::vector<int64_t>{1} : reduction_extents_,
               [&](const std::vector<int64_t>& r) {
                 for (size_t k = 0; k < reduction_extents_.size(); ++k) point[g.size() + k] = r[k];
                 double term = sum_ ? 0.0 : 1.0;
                 // A product's prod |v_j|, prod (|v_j| + f_j) - prod |v_j| and
                 // prod (A_j + e_j) - prod A_j, each kept as a sum of nonnegative parts
                 // (no cancellation): (X + D)(x + d) - X x = D (x + d) + X d.
                 double p = 1, p_ref = 0, p_run = 0;
                 for (const Operand& o : operands_) {
                   const Expected v = ValueOf(o, point, &scratch);
                   const double a = std::abs(v.value), big_a = a + v.ref_error;
                   if (sum_) {
                     term += v.value;
                     carried_run += v.run_error;
                     carried_ref += v.ref_error;
                     run_magnitude += big_a + v.run_error;
                     ref_magnitude += a;
                     continue;
                   }
                   term *= v.value;
                   const double pa = p + p_ref;  // prod A_j so far
                   p_run = p_run * (big_a + v.run_error) + pa * v.run_error;
                   p_ref = p_ref * big_a + p * v.ref_error;
                   p *= a;
                 }
                 if (!sum_) {
                   carried_run += p_run;
                   carried_ref += p_ref;
                   run_magnitude += p + p_ref + p_run;
                   ref_magnitude += p;
                 }
                 ref += term;
                 magnitude += std::abs(term);
               });
  Expected out;
  out.value = ref;
  out.run_error = carried_run + Gamma(roundings_, UnitRoundoff(precision_)) * run_magnitude;
  out.ref_error = carried_ref + Gamma(roundings_, UnitRoundoff(Precision::kF64)) * ref_magnitude;
  out.magnitude = magnitude;
  return out;
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

// The first held element that is not right (`right(got, expected)` false) as the message
// says it; "" when none.
std::string FirstWrong(const ProblemSpec& problem, const Reference& reference,
                       const HeldOutput& held, const std::string& rank, int64_t limit, int64_t cost,
                       const std::function<bool(double got, const Expected& expected)>& right) {
  const std::vector<int64_t> shape = problem.Shape(problem.output.tensor);
  const int64_t work = held.slots * (cost > 0 ? cost : reference.terms());
  const int64_t step = work > limit ? std::max<int64_t>(1, work / std::max<int64_t>(limit, 1)) : 1;
  for (int64_t i = 0; i < held.slots; i += step) {
    const int64_t linear = held.global(i);
    if (linear < 0) continue;
    const Expected expected = reference.At(Unlinear(linear, shape));
    const double got = held.value(i);
    if (!right(got, expected)) {
      return absl::StrFormat("rank (%s): %s = %.6g but the reference is %.6g", rank,
                             ElementName(problem.output.tensor, shape, linear), got,
                             expected.value);
    }
  }
  return "";
}

// CheckCoverage with its agreement of copies: `agree(linear, high, low)`.
std::string Coverage(const ProblemSpec& problem, const HeldOutput& held, Comm& comm,
                     const std::function<bool(int64_t linear, double high, double low)>& agree) {
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
      if (!agree(lo + i, high, low)) {
        return absl::StrFormat("%s differs between its copies: %.6g and %.6g", name(), low, high);
      }
    }
  }
  return "";
}

}  // namespace

std::string CheckHeldValues(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                            Precision precision, const std::string& rank,
                            const OperandValues& values, int64_t limit, int64_t cost) {
  const Reference reference(problem, seed, precision, values);
  return FirstWrong(problem, reference, held, rank, limit, cost,
                    [](double got, const Expected& expected) {
                      return std::abs(got - expected.value) <= expected.Tolerance();
                    });
}

std::string CheckHeldValues(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                            double tolerance, const std::string& rank) {
  const Reference reference(problem, seed, Precision::kF64);
  return FirstWrong(problem, reference, held, rank, 4'000'000, 0,
                    [tolerance](double got, const Expected& expected) {
                      return std::abs(got - expected.value) <=
                             tolerance * expected.magnitude + 1e-6;
                    });
}

std::string CheckCoverage(const ProblemSpec& problem, uint64_t seed, const HeldOutput& held,
                          Precision precision, Comm& comm, const OperandValues& values) {
  const Reference reference(problem, seed, precision, values);
  const std::vector<int64_t> shape = problem.Shape(problem.output.tensor);
  const double gamma = Gamma(reference.roundings(), UnitRoundoff(precision));
  return Coverage(problem, held, comm, [&](int64_t linear, double high, double low) {
    // Copies this close are within twice the bound when they are right: Tolerance() is at
    // least 2 gamma_N M (M the magnitudes its rounding scales, oracle.h), and right copies
    // have |high| + |low| <= 2 (M + E_run).
    if (high - low <= gamma * (std::abs(high) + std::abs(low))) return true;
    return high - low <= 2 * reference.At(Unlinear(linear, shape)).Tolerance();
  });
}

std::string CheckCoverage(const ProblemSpec& problem, const HeldOutput& held, double tolerance,
                          Comm& comm) {
  return Coverage(problem, held, comm, [tolerance](int64_t, double high, double low) {
    return high - low <= tolerance * (std::abs(high) + std::abs(low)) + 1e-6;
  });
}

}  // namespace meshtune::runtime
