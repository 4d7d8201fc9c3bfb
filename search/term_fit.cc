#include "search/term_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace meshtune::search {

namespace {

constexpr int kClasses = 4;
constexpr std::array<const char*, kClasses> kNames = {"compute", "point-to-point transfers",
                                                      "collectives", "reductions"};

std::array<double, kClasses> Terms(const TermSample& s) {
  return {s.compute, s.point_to_point, s.collective, s.reduction};
}

// Solves the n x n system a x = b in place by Gaussian elimination with partial pivoting;
// false when it is singular (a pivot below 1e-9 of the largest diagonal entry: columns
// that are multiples of each other, within rounding).
bool Solve(std::vector<std::vector<double>>& a, std::vector<double>& b) {
  const size_t n = b.size();
  double largest = 0;
  for (size_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(a[i][i]));
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    if (!(std::fabs(a[pivot][col]) > 1e-9 * largest)) return false;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (size_t c = col; c < n; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  for (size_t i = 0; i < n; ++i) b[i] /= a[i][i];
  return true;
}

}  // namespace

absl::StatusOr<TermScales> FitTermScales(const std::vector<TermSample>& samples) {
  std::array<double, kClasses> total{};
  double all = 0;
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
  }
  // The classes the samples say something of, and the columns of the fit.
  std::vector<int> fitted;
  for (int c = 0; c < kClasses; ++c) {
    if (total[c] >= 0.01 * all && total[c] > 0) fitted.push_back(c);
  }
  if (fitted.empty() || samples.size() < fitted.size() + 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fitting ", fitted.size(), " term scale", fitted.size() == 1 ? "" : "s", " needs at least ",
        fitted.size() + 2, " measured schedules, got ", samples.size()));
  }
  // Normal equations of min sum_j ((sum_c x_jc w_c - overlap_j) / m_j - 1)^2.
  const size_t k = fitted.size();
  std::vector<std::vector<double>> ata(k, std::vector<double>(k, 0));
  std::vector<double> atb(k, 0);
  for (const TermSample& s : samples) {
    const std::array<double, kClasses> x = Terms(s);
    const double target = 1 + s.overlap / s.measured;
    for (size_t i = 0; i < k; ++i) {
      const double xi = x[fitted[i]] / s.measured;
      atb[i] += xi * target;
      for (size_t j = 0; j < k; ++j) ata[i][j] += xi * x[fitted[j]] / s.measured;
    }
  }
  if (!Solve(ata, atb)) {
    return absl::InvalidArgumentError(
        "the runs do not tell the term classes apart (every schedule has them in the same "
        "proportions); measure schedules that differ in them");
  }
  std::array<double, kClasses> scale = {1, 1, 1, 1};
  for (size_t i = 0; i < k; ++i) {
    if (!(atb[i] > 0 && std::isfinite(atb[i]))) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the runs give %s a scale of %.3g; measure schedules that differ in "
                          "them",
                          kNames[fitted[i]], atb[i]));
    }
    scale[fitted[i]] = atb[i];
  }
  TermScales out;
  out.compute = scale[0];
  out.point_to_point = scale[1];
  out.collective = scale[2];
  out.reduction = scale[3];
  return out;
}

}  // namespace meshtune::search
