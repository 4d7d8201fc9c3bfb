#include "runtime/library/gemm_form.h"

#include <algorithm>
#include <climits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace meshtune::runtime {

namespace {

// The position of `index` in `indices`; -1 when absent.
int Position(const std::vector<std::string>& indices, const std::string& index) {
  const auto it = std::find(indices.begin(), indices.end(), index);
  return it == indices.end() ? -1 : static_cast<int>(it - indices.begin());
}

}  // namespace

absl::Status CheckLibraryExtents(const GemmForm& form) {
  if (std::max({form.m, form.n, form.k}) <= INT_MAX) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("ScaLAPACK's GEMM takes extents up to ", INT_MAX,
                                                 "; the problem has m=", form.m, ", n=", form.n,
                                                 ", k=", form.k));
}

std::optional<GemmForm> GemmFormOf(const ProblemSpec& p) {
  if (p.sum || p.operands.size() != 2 || p.output.indices.size() != 2) return std::nullopt;
  const std::string& i = p.output.indices[0];
  const std::string& j = p.output.indices[1];
  if (i == j) return std::nullopt;
  std::set<std::string> tensors = {p.output.tensor};
  for (const ProblemSpec::Access& a : p.operands) {
    if (a.indices.size() != 2 || a.indices[0] == a.indices[1]) return std::nullopt;
    if (!tensors.insert(a.tensor).second) return std::nullopt;
  }
  // The operand holding i is A, the one holding j is B (a product commutes).
  const ProblemSpec::Access* a = nullptr;
  const ProblemSpec::Access* b = nullptr;
  for (const ProblemSpec::Access& x : p.operands) {
    if (Position(x.indices, i) >= 0 && Position(x.indices, j) < 0) a = &x;
    if (Position(x.indices, j) >= 0 && Position(x.indices, i) < 0) b = &x;
  }
  if (a == nullptr || b == nullptr || a == b) return std::nullopt;
  const std::string& k = a->indices[Position(a->indices, i) == 0 ? 1 : 0];
  if (k == i || k == j || Position(b->indices, k) < 0) return std::nullopt;
  GemmForm f;
  f.c = p.output.tensor;
  f.a = a->tensor;
  f.b = b->tensor;
  f.a_transposed = Position(a->indices, i) == 1;
  f.b_transposed = Position(b->indices, j) == 0;
  const auto extent = [&p](const std::string& x) {
    const auto it = p.extents.find(x);
    return it == p.extents.end() ? int64_t{0} : it->second;
  };
  f.m = extent(i);
  f.n = extent(j);
  f.k = extent(k);
  if (f.m <= 0 || f.n <= 0 || f.k <= 0) return std::nullopt;
  f.accumulate = p.accumulate;
  return f;
}

CyclicPart CyclicPartOf(int64_t rows, int64_t cols, const LibraryGemmConfig& config, int64_t row,
                        int64_t col) {
  CyclicPart p;
  p.rows = rows;
  p.cols = cols;
  p.row = row;
  p.col = col;
  p.prow = config.prow;
  p.pcol = config.pcol;
  p.nb = config.nb;
  // numroc with the source process 0 (ir::Numroc in the given layouts' terms).
  const auto numroc = [&p](int64_t n, int64_t me, int64_t procs) {
    const int64_t blocks = n / p.nb;
    int64_t local = (blocks / procs) * p.nb;
    const int64_t extra = blocks % procs;
    if (me < extra) {
      local += p.nb;
    } else if (me == extra) {
      local += n % p.nb;
    }
    return local;
  };
  p.local_rows = numroc(rows, row, p.prow);
  p.local_cols = numroc(cols, col, p.pcol);
  return p;
}

std::string ConfigText(const LibraryGemmConfig& c) {
  return absl::StrCat(c.prow, "x", c.pcol, ", NB ", c.nb);
}

std::vector<LibraryGemmConfig> LibraryGemmConfigs(const GemmForm& form, int64_t ranks) {
  struct Grid {
    double words;
    int prow, pcol;
  };
  std::vector<Grid> grids;
  for (int64_t prow = 1; prow <= ranks; ++prow) {
    if (ranks % prow != 0) continue;
    const int64_t pcol = ranks / prow;
    // The grid's rows split C's rows (m), its columns C's columns (n).
    const double words = static_cast<double>(form.k) *
                         (static_cast<double>(form.m) / prow + static_cast<double>(form.n) / pcol);
    grids.push_back({words, static_cast<int>(prow), static_cast<int>(pcol)});
  }
  std::stable_sort(grids.begin(), grids.end(),
                   [](const Grid& a, const Grid& b) { return a.words < b.words; });
  std::vector<LibraryGemmConfig> out;
  for (size_t g = 0; g < grids.size() && g < 2; ++g) {
    const int64_t share = std::max<int64_t>({1, (form.m + grids[g].prow - 1) / grids[g].prow,
                                             (form.n + grids[g].pcol - 1) / grids[g].pcol});
    std::set<int> sizes;
    for (int nb : {64, 256}) {
      int fit = nb;
      while (fit > 1 && fit > share) fit /= 2;
      sizes.insert(fit);
    }
    for (int nb : sizes) out.push_back({grids[g].prow, grids[g].pcol, nb});
  }
  return out;
}

absl::StatusOr<std::vector<GemmForm>> GemmChainOf(const std::vector<ProblemSpec>& statements) {
  std::vector<GemmForm> forms;
  for (size_t s = 0; s < statements.size(); ++s) {
    std::optional<GemmForm> form = GemmFormOf(statements[s]);
    if (!form) {
      return absl::InvalidArgumentError(absl::StrCat(
          "statement ", s + 1, " (", statements[s].output.tensor, ") is not of matmul form"));
    }
    for (size_t p = 0; p < s; ++p) {
      if (statements[p].output.tensor == form->c) {
        return absl::InvalidArgumentError(absl::StrCat("statement ", s + 1, " writes ", form->c,
                                                       ", which statement ", p + 1, " writes too"));
      }
      for (const ProblemSpec::Access& a : statements[p].operands) {
        if (a.tensor == form->c) {
          return absl::InvalidArgumentError(absl::StrCat("statement ", p + 1, " reads ", form->c,
                                                         ", which statement ", s + 1,
                                                         " writes after it"));
        }
      }
    }
    forms.push_back(*std::move(form));
  }
  return forms;
}

}  // namespace meshtune::runtime
