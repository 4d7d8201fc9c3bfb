#include "search/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace meshtune::search {

namespace {

bool Has(const ir::TensorAccess& a, const std::string& index) {
  return std::find(a.indices.begin(), a.indices.end(), index) != a.indices.end();
}

// The vertices of {s >= 0 : sum of s_j over covers[i] >= 1 for every index i}, found by
// making every choice of J constraints tight (J = tensors) and keeping the feasible
// solutions. covers[i] lists the tensors index i appears in.
std::vector<std::vector<double>> Vertices(const std::vector<std::vector<int>>& covers,
                                          int tensors) {
  std::vector<std::vector<double>> rows;  // a row r: r . s >= rhs, rhs 0 or 1
  std::vector<double> rhs;
  for (int j = 0; j < tensors; ++j) {
    rows.emplace_back(tensors, 0.0);
    rows.back()[j] = 1;
    rhs.push_back(0);
  }
  for (const std::vector<int>& c : covers) {
    rows.emplace_back(tensors, 0.0);
    for (int j : c) rows.back()[j] = 1;
    rhs.push_back(1);
  }
  std::vector<std::vector<double>> out;
  const int n = static_cast<int>(rows.size());
  std::vector<int> pick(tensors);
  std::function<void(int, int)> choose = [&](int from, int depth) {
    if (depth == tensors) {
      // Gaussian elimination with partial pivoting on the picked rows.
      std::vector<std::vector<double>> a;
      for (int r : pick) {
        a.push_back(rows[r]);
        a.back().push_back(rhs[r]);
      }
      for (int col = 0; col < tensors; ++col) {
        int best = col;
        for (int r = col + 1; r < tensors; ++r)
          if (std::abs(a[r][col]) > std::abs(a[best][col])) best = r;
        if (std::abs(a[best][col]) < 1e-12) return;  // singular: not a vertex
        std::swap(a[col], a[best]);
        for (int r = 0; r < tensors; ++r) {
          if (r == col) continue;
          const double f = a[r][col] / a[col][col];
          for (int c = col; c <= tensors; ++c) a[r][c] -= f * a[col][c];
        }
      }
      std::vector<double> s(tensors);
      for (int j = 0; j < tensors; ++j) s[j] = a[j][tensors] / a[j][j];
      for (int r = 0; r < n; ++r) {
        double lhs = 0;
        for (int j = 0; j < tensors; ++j) lhs += rows[r][j] * s[j];
        if (lhs < rhs[r] - 1e-9) return;
      }
      out.push_back(s);
      return;
    }
    for (int r = from; r <= n - (tensors - depth); ++r) {
      pick[depth] = r;
      choose(r + 1, depth + 1);
    }
  };
  choose(0, 0);
  return out;
}

// The least sum of d_j with lo_j <= d_j <= c_j and sum_j s_j ln d_j >= ln t (feasible at
// d = c by the HBL inequality over the whole space): d_j = clamp(mu s_j, lo_j, c_j) for the
// least mu that meets the product, found by bisection on log mu.
double LeastFootprint(const std::vector<double>& s, const std::vector<double>& lo,
                      const std::vector<double>& c, double t) {
  auto at = [&](double mu, double* sum) {
    double log_product = 0;
    *sum = 0;
    for (size_t j = 0; j < s.size(); ++j) {
      const double d = std::clamp(mu * s[j], lo[j], c[j]);
      log_product += s[j] * std::log(d);
      *sum += d;
    }
    return log_product;
  };
  double sum = 0;
  if (at(0, &sum) >= std::log(t)) return sum;
  double low = -50, high = std::log(*std::max_element(c.begin(), c.end())) + 50;
  for (int step = 0; step < 200; ++step) {
    const double mid = (low + high) / 2;
    (at(std::exp(mid), &sum) >= std::log(t) ? high : low) = mid;
  }
  at(std::exp(high), &sum);
  return sum;
}

}  // namespace

std::optional<double> MatmulCommLowerBound(const ir::Problem& p, int64_t ranks) {
  if (ranks <= 1 || p.combine != ir::Problem::Combine::kProduct || p.operands.size() != 2)
    return std::nullopt;
  const ir::TensorAccess& out = p.output;
  const ir::TensorAccess& a = p.operands[0];
  const ir::TensorAccess& b = p.operands[1];
  if (a.tensor == b.tensor || a.tensor == out.tensor || b.tensor == out.tensor) return std::nullopt;
  double m = 1, n = 1, k = 1;
  for (const std::string& index : p.indices) {
    const bool in_out = Has(out, index), in_a = Has(a, index), in_b = Has(b, index);
    const double extent = static_cast<double>(p.extents.at(index));
    if (in_out && in_a && !in_b) {
      m *= extent;
    } else if (in_out && in_b && !in_a) {
      n *= extent;
    } else if (in_a && in_b && !in_out) {
      k *= extent;
    } else {
      return std::nullopt;
    }
  }
  std::vector<double> d = {m, n, k};
  std::sort(d.begin(), d.end(), std::greater<double>());
  const double d1 = d[0], d2 = d[1], d3 = d[2];
  const double procs = static_cast<double>(ranks);
  double accessed = 0;
  if (procs <= d1 / d2) {
    accessed = (d1 * d2 + d1 * d3) / procs + d2 * d3;
  } else if (procs <= d1 * d2 / (d3 * d3)) {
    accessed = 2 * std::sqrt(d1 * d2 * d3 * d3 / procs) + d1 * d2 / procs;
  } else {
    accessed = 3 * std::cbrt(std::pow(d1 * d2 * d3 / procs, 2));
  }
  return accessed - (d1 * d2 + d1 * d3 + d2 * d3) / procs;
}

std::optional<double> CommLowerBound(const ir::Problem& p, int64_t ranks) {
  if (ranks <= 1) return std::nullopt;
  std::vector<const ir::TensorAccess*> tensors = {&p.output};
  for (const ir::TensorAccess& a : p.operands) tensors.push_back(&a);
  for (size_t i = 0; i < tensors.size(); ++i)
    for (size_t j = i + 1; j < tensors.size(); ++j)
      if (tensors[i]->tensor == tensors[j]->tensor) return std::nullopt;
  const int count = static_cast<int>(tensors.size());
  const double procs = static_cast<double>(ranks);
  double iterations = 1;
  for (const std::string& index : p.indices) iterations *= static_cast<double>(p.extents.at(index));
  const double t = iterations / procs;
  std::vector<double> lo(count), c(count);
  double owned = 0;
  for (int j = 0; j < count; ++j) {
    c[j] = 1;
    for (const std::string& index :
         std::set<std::string>(tensors[j]->indices.begin(), tensors[j]->indices.end()))
      c[j] *= static_cast<double>(p.extents.at(index));
    // Each element of tensor j takes part in iterations / c_j iterations.
    lo[j] = std::clamp(t / (iterations / c[j]), 1.0, c[j]);
    owned += c[j] / procs;
  }
  std::vector<std::vector<int>> covers;
  for (const std::string& index : p.indices) {
    covers.emplace_back();
    for (int j = 0; j < count; ++j)
      if (Has(*tensors[j], index)) covers.back().push_back(j);
  }
  double accessed = 0;
  for (const std::vector<double>& s : Vertices(covers, count))
    accessed = std::max(accessed, LeastFootprint(s, lo, c, t));
  double bound = accessed - owned;
  if (bound <= 1e-9 * owned) bound = 0;  // none beyond the bisection's rounding
  if (const std::optional<double> matmul = MatmulCommLowerBound(p, ranks))
    bound = std::max(bound, *matmul);
  return bound;
}

}  // namespace meshtune::search
