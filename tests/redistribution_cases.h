// Distributions the redistribution tests move between, and local arrays filled from a
// known tensor (//runtime:redistribution_test, the MPI check tests/redistribution_mpi_app).
#ifndef MESHTUNE_TESTS_REDISTRIBUTION_CASES_H_
#define MESHTUNE_TESTS_REDISTRIBUTION_CASES_H_

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ir/layout.h"
#include "ir/mesh.h"
#include "runtime/redistribution.h"

namespace meshtune::testing {

using runtime::Box;
using runtime::Distribution;
using runtime::Run;

using Locals = std::vector<std::vector<double>>;

// Each rank's local storage filled from the tensor whose element at row-major position e is
// e + 1; -1 where nothing lands. `collisions` counts slots written twice.
inline Locals Fill(const Distribution& d, int ranks, int64_t cols, int* collisions) {
  Locals out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) out[r].assign(static_cast<size_t>(d.LocalElements(r)), -1);
  for (int64_t row = 0; row < d.rows(); ++row) {
    for (const Run& run : d.Row(row)) {
      for (int64_t c = run.begin; c < run.end; ++c) {
        double& slot =
            out[run.rank].at(static_cast<size_t>(run.offset + (c - run.begin) * run.stride));
        if (slot != -1) ++*collisions;
        slot = static_cast<double>(row * cols + c + 1);
      }
    }
  }
  return out;
}

inline int64_t Ceil(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dim `dim` of `n` split in even blocks (the last shorter) over mesh axis `axis`, at `coord`.
inline void Split(Box* b, int dim, int64_t n, int64_t parts, int64_t coord) {
  const int64_t size = Ceil(n, parts);
  b->start[dim] = std::min(n, coord * size);
  b->extent[dim] = std::min(n, (coord + 1) * size) - b->start[dim];
}

struct Named {
  std::string name;
  std::unique_ptr<Distribution> d;
};

// The distributions of an m x n matrix on `mesh` the test moves between.
inline std::vector<Named> Distributions(int64_t m, int64_t n, const ir::Mesh& mesh) {
  std::vector<Named> out;
  for (int64_t mb : {1, 2, 3}) {
    for (int64_t nb : {1, 2, 3}) {
      const ir::GivenLayout l{ir::GivenLayout::Kind::kCyclic, mb, nb};
      out.push_back({l.ToString(), runtime::GivenDistribution(l, {m, n}, mesh)});
    }
  }
  for (auto kind : {ir::GivenLayout::Kind::kRoot, ir::GivenLayout::Kind::kReplicated}) {
    const ir::GivenLayout l{kind, 0, 0};
    out.push_back({l.ToString(), runtime::GivenDistribution(l, {m, n}, mesh)});
  }
  const int64_t px = mesh.axes[0].size, py = mesh.axes.size() > 1 ? mesh.axes[1].size : 1;
  // Rows over x and columns over y (replicated along later axes): a 2D block layout.
  out.push_back(
      {"m@x,n@y", runtime::BoxDistribution({m, n}, mesh, [=](const std::vector<int64_t>& c) {
         Box b{{0, 0}, {m, n}};
         Split(&b, 0, m, px, c[0]);
         if (c.size() > 1) Split(&b, 1, n, py, c[1]);
         return b;
       })});
  // Columns over x, replicated along y.
  out.push_back({"n@x", runtime::BoxDistribution({m, n}, mesh, [=](const std::vector<int64_t>& c) {
                   Box b{{0, 0}, {m, n}};
                   Split(&b, 1, n, px, c[0]);
                   return b;
                 })});
  // Given 2D and 1D block layouts over named axes: rows over the last axis, columns over
  // the first; columns over the first axis alone.
  ir::GivenLayout grid{
      ir::GivenLayout::Kind::kGrid, 0, 0, {mesh.axes.back().name, mesh.axes[0].name}};
  if (mesh.axes.size() == 1) grid.axes[0] = "*";
  out.push_back({grid.ToString(), runtime::GivenDistribution(grid, {m, n}, mesh)});
  const ir::GivenLayout cols{ir::GivenLayout::Kind::kGrid, 0, 0, {"*", mesh.axes[0].name}};
  out.push_back({cols.ToString(), runtime::GivenDistribution(cols, {m, n}, mesh)});
  return out;
}

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_REDISTRIBUTION_CASES_H_
