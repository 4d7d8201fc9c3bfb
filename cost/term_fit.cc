#include "cost/term_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace meshtune::cost {

namespace {

constexpr int kClasses = 4;
constexpr std::array<const char*, kClasses> kNames = {"compute", "point-to-point transfers",
                                                      "collectives", "reductions"};

std::array<double, kClasses> Terms(const TermSample& s) {
  return {s.compute, s.point_to_point, s.collective, s.reduction};
}

// Solves the n x n normal equations a x = b in place (b becomes x) by Gaussian elimination
// with partial pivoting, each unknown first scaled to make a's diagonal 1 (a message count
// and a class's seconds differ by orders of magnitude); false when it is singular (a zero
// diagonal entry, or a pivot below 1e-9: columns that are multiples of each other, within
// rounding).
bool Solve(std::vector<std::vector<double>>& a, std::vector<double>& b) {
  const size_t n = b.size();
  std::vector<double> norm(n);
  for (size_t i = 0; i < n; ++i) {
    if (!(a[i][i] > 0)) return false;
    norm[i] = std::sqrt(a[i][i]);
  }
  for (size_t i = 0; i < n; ++i) {
    b[i] /= norm[i];
    for (size_t j = 0; j < n; ++j) a[i][j] /= norm[i] * norm[j];
  }
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    if (!(std::fabs(a[pivot][col]) > 1e-9)) return false;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (size_t c = col; c < n; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  for (size_t i = 0; i < n; ++i) b[i] /= a[i][i] * norm[i];
  return true;
}

// The unknowns of one of FitTermScales's least squares, in order: with `common` the
// classes' common scale and a departure from it for each of `classes`, else a scale for
// each; then with `message` the message wait.
struct Columns {
  std::vector<int> classes;
  bool common = false;
  bool message = false;
  size_t size() const { return (common ? 1 : 0) + classes.size() + (message ? 1 : 0); }
};

// Sample `s`'s row of the least squares over `cols`, divided by its measured time.
std::vector<double> Row(const TermSample& s, const Columns& cols) {
  const std::array<double, kClasses> x = Terms(s);
  std::vector<double> row;
  if (cols.common) row.push_back((x[0] + x[1] + x[2] + x[3]) / s.measured);
  for (int c : cols.classes) row.push_back(x[c] / s.measured);
  if (cols.message) row.push_back(s.messages / s.measured);
  return row;
}

// What row_j . x should be for sample `s`: 1 + overlap / m, less (without cols.common) the
// classes not fitted, at scale 1.
double Target(const TermSample& s, const Columns& cols) {
  double fixed = 0;
  if (!cols.common) {
    const std::array<double, kClasses> x = Terms(s);
    for (int c = 0; c < kClasses; ++c) {
      if (std::find(cols.classes.begin(), cols.classes.end(), c) == cols.classes.end())
        fixed += x[c];
    }
  }
  return 1 + (s.overlap - fixed) / s.measured;
}

// A solved least squares: its unknowns over its columns and its sum of squared residuals.
struct Solution {
  std::vector<double> x;
  double residual = 0;
};

// The unknowns over `cols` that minimize sum_j (row_j . x - 1 - overlap_j / m_j)^2 plus,
// with cols.common, shrink * samples * (the departures squared); nullopt when the normal
// equations are singular.
std::optional<Solution> SolveColumns(const std::vector<TermSample>& samples, const Columns& cols,
                                     double shrink) {
  const size_t k = cols.size();
  std::vector<std::vector<double>> ata(k, std::vector<double>(k, 0));
  std::vector<double> atb(k, 0);
  for (const TermSample& s : samples) {
    const std::vector<double> row = Row(s, cols);
    const double target = Target(s, cols);
    for (size_t i = 0; i < k; ++i) {
      atb[i] += s.weight * row[i] * target;
      for (size_t j = 0; j < k; ++j) ata[i][j] += s.weight * row[i] * row[j];
    }
  }
  if (cols.common) {
    for (size_t i = 1; i <= cols.classes.size(); ++i)
      ata[i][i] += shrink * static_cast<double>(samples.size());
  }
  if (!Solve(ata, atb)) return std::nullopt;
  Solution out{atb, 0};
  for (const TermSample& s : samples) {
    const std::vector<double> row = Row(s, cols);
    double r = -Target(s, cols);
    for (size_t i = 0; i < k; ++i) r += row[i] * out.x[i];
    out.residual += s.weight * r * r;
  }
  return out;
}

// SolveColumns, without the message wait when the samples would make it negative or cannot
// tell it from the classes (they say nothing of waiting).
std::optional<Solution> SolveWaitingOrNot(const std::vector<TermSample>& samples, Columns& cols,
                                          double shrink) {
  std::optional<Solution> out = SolveColumns(samples, cols, shrink);
  if (cols.message && (!out || !(out->x.back() >= 0))) {
    cols.message = false;
    out = SolveColumns(samples, cols, shrink);
  }
  return out;
}

}  // namespace

double SpreadWeight(double median, double low, double high) {
  double h = 0.05;
  if (median > 0 && high > low && std::isfinite(low) && std::isfinite(high)) {
    h = std::max(0.01, (high - low) / (2 * median));
  }
  return 1 / (h * h);
}

absl::StatusOr<TermScales> FitTermScales(const std::vector<TermSample>& given) {
  // The weights over their mean: the shrinkage and the noise stay in the units of a sample.
  std::vector<TermSample> samples = given;
  double weights = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!(samples[i].weight > 0 && std::isfinite(samples[i].weight))) {
      return absl::InvalidArgumentError(absl::StrCat("sample ", i + 1, " has weight ",
                                                     samples[i].weight, "; it must be positive"));
    }
    weights += samples[i].weight;
  }
  for (TermSample& s : samples) s.weight *= static_cast<double>(samples.size()) / weights;
  std::array<double, kClasses> total{};
  double all = 0;
  Columns cols;
  for (size_t i = 0; i < samples.size(); ++i) {
    const TermSample& s = samples[i];
    if (!(s.measured > 0 && std::isfinite(s.measured))) {
      return absl::InvalidArgumentError(absl::StrCat("sample ", i + 1, " has measured time ",
                                                     s.measured, "; it must be positive"));
    }
    const std::array<double, kClasses> x = Terms(s);
    for (int c = 0; c < kClasses; ++c) {
      total[c] += x[c] / s.measured;
      all += x[c] / s.measured;
    }
    if (s.messages > 0) cols.message = true;
  }
  for (int c = 0; c < kClasses; ++c) {
    if (total[c] >= 0.01 * all && total[c] > 0) cols.classes.push_back(c);
  }
  const size_t k = cols.classes.size();
  if (k == 0 || samples.size() < cols.size() + 2) {
    return absl::InvalidArgumentError(absl::StrCat("fitting ", k, " term scale", k == 1 ? "" : "s",
                                                   cols.message ? " and the message wait" : "",
                                                   " needs at least ", cols.size() + 2,
                                                   " measured schedules, got ", samples.size()));
  }
  // First each class on its own; its residuals say how noisy the samples are, and so how
  // far they may pull a class from the others (a prior spread of kScaleSpread).
  const std::optional<Solution> free = SolveWaitingOrNot(samples, cols, 0);
  if (!free) {
    return absl::InvalidArgumentError(
        "the runs do not tell the term classes apart (every schedule has them in the same "
        "proportions); measure schedules that differ in them");
  }
  const double noise = free->residual / static_cast<double>(samples.size() - cols.size());
  std::array<double, kClasses> scale = {1, 1, 1, 1};
  for (size_t i = 0; i < k; ++i) scale[cols.classes[i]] = free->x[i];
  double wait = cols.message ? free->x.back() : 0;
  Columns shrunk = cols;
  shrunk.common = true;
  // Exact samples (no noise) keep the free fit: the shrunk system is singular without it.
  if (std::optional<Solution> s =
          SolveWaitingOrNot(samples, shrunk, noise / (kScaleSpread * kScaleSpread));
      s && noise > 0) {
    scale.fill(s->x[0]);
    for (size_t i = 0; i < k; ++i) scale[cols.classes[i]] = s->x[0] + s->x[1 + i];
    wait = shrunk.message ? s->x.back() : 0;
  }
  for (int c = 0; c < kClasses; ++c) {
    if (!(scale[c] > 0 && std::isfinite(scale[c]))) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the runs give %s a scale of %.3g; measure schedules that differ in "
                          "them",
                          kNames[c], scale[c]));
    }
  }
  TermScales out;
  out.compute = scale[0];
  out.point_to_point = scale[1];
  out.collective = scale[2];
  out.reduction = scale[3];
  out.message = wait;
  return out;
}

}  // namespace meshtune::cost
