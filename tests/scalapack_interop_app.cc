// ScaLAPACK interop: on a 2x2 BLACS grid (row-major, 4 ranks), A, B and C in
// PSGEMM's block-cyclic layout with 64 x 64 blocks; PSGEMM computes C += A B on one copy of
// C, a meshtune plan for C[m,n] += A[m,k] * B[k,n] on mesh x=2,y=2 (the model's best
// schedule) runs from the same layouts on another copy (Plan::ExecuteInLayouts), and every
// rank compares its local part of the two element by element. Also with A on rank 0 and B
// on every rank (both whole, row-major) and only C block-cyclic. Rank 0 prints a line per
// case and "interop: N cases, largest relative difference X"; exit status 1 when a
// difference exceeds 1e-4. Last, the layouts' in-place form (ir::InPlaceForm) runs on
// PSGEMM's local arrays as they are.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "meshtune/plan.h"
#include "third_party/scalapack_api.h"

namespace {

constexpr int kNb = 64, kGrid = 2;

float Value(int i, int j, int salt) {
  return static_cast<float>(((i * 7 + j * 13 + salt * 5) % 17) - 8) / 8.0f;
}

// A rows x cols matrix's local part (column-major) on grid position (row, col), with its
// descriptor, filled with Value.
struct Local {
  std::vector<float> data;
  int desc[9];
};

Local Make(int rows, int cols, int ctx, int row, int col, int salt) {
  const int zero = 0, nb = kNb, grid = kGrid;
  const int lr = numroc_(&rows, &nb, &row, &zero, &grid),
            lc = numroc_(&cols, &nb, &col, &zero, &grid);
  const int lld = std::max(1, lr);
  Local x;
  int info = 0;
  descinit_(x.desc, &rows, &cols, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
  x.data.resize(static_cast<size_t>(lld) * lc);
  for (int lj = 0; lj < lc; ++lj) {
    for (int li = 0; li < lr; ++li) {
      const int i = ((li / kNb) * kGrid + row) * kNb + li % kNb;
      const int j = ((lj / kNb) * kGrid + col) * kNb + lj % kNb;
      x.data[static_cast<size_t>(li) + static_cast<size_t>(lj) * lld] = Value(i, j, salt);
    }
  }
  return x;
}

// The whole rows x cols matrix, row-major.
std::vector<float> Whole(int rows, int cols, int salt) {
  std::vector<float> v(static_cast<size_t>(rows) * cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) v[static_cast<size_t>(i) * cols + j] = Value(i, j, salt);
  return v;
}

// The largest relative difference of `ours` from `theirs` over every rank.
double LargestDifference(const std::vector<float>& ours, const std::vector<float>& theirs) {
  double mine = 0;
  for (size_t i = 0; i < ours.size(); ++i)
    mine = std::max(
        mine, std::fabs(double(ours[i]) - theirs[i]) / std::max(1.0, std::fabs(double(theirs[i]))));
  double largest = 0;
  MPI_Allreduce(&mine, &largest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return largest;
}

// C += A B by PSGEMM on the local parts and descriptors.
void Psgemm(int m, int n, int k, const Local& a, const Local& b, Local* c) {
  const int one = 1;
  const float alpha = 1, beta = 1;
  psgemm_("N", "N", &m, &n, &k, &alpha, a.data.data(), &one, &one, a.desc, b.data.data(), &one,
          &one, b.desc, &beta, c->data.data(), &one, &one, c->desc);
}

// Runs `plan` on `data` (by tensor) in `layouts`; aborts the job on an error.
void ExecuteOrAbort(meshtune::Plan& plan, const std::map<std::string, std::string>& layouts,
                    std::map<std::string, void*> data, int rank) {
  std::vector<void*> ordered;
  for (const std::string& t : plan.tensors()) ordered.push_back(data[t]);
  if (absl::Status s = plan.ExecuteInLayouts(layouts, ordered); !s.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// The cases run, those that failed (a difference over 1e-4), the largest difference.
struct Tally {
  double worst = 0;
  int cases = 0, failed = 0;
  void Add(double largest) {
    worst = std::max(worst, largest);
    ++cases;
    if (!(largest <= 1e-4)) ++failed;
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int ctx = 0, rows = 0, cols = 0, row = 0, col = 0;
  Cblacs_get(-1, 0, &ctx);
  Cblacs_gridinit(&ctx, "Row", kGrid, kGrid);
  Cblacs_gridinfo(ctx, &rows, &cols, &row, &col);
  Tally tally;
  for (const auto& [m, n, k] : {std::array<int, 3>{256, 192, 320}, {200, 130, 70}}) {
    for (const bool whole_inputs : {false, true}) {
      const Local a = Make(m, k, ctx, row, col, 1), b = Make(k, n, ctx, row, col, 2);
      Local c = Make(m, n, ctx, row, col, 3);
      std::vector<float> ours = c.data;
      Psgemm(m, n, k, a, b, &c);
      meshtune::PlanOptions o;
      o.mode = meshtune::PlanMode::kEstimate;
      o.mesh = "x=2,y=2";
      auto plan = meshtune::Plan::Create(
          "C[m,n] += A[m,k] * B[k,n]",
          "m=" + std::to_string(m) + ",n=" + std::to_string(n) + ",k=" + std::to_string(k),
          MPI_COMM_WORLD, o);
      if (!plan.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, plan.status().ToString().c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      std::vector<float> whole_a, whole_b;
      std::map<std::string, std::string> layouts = {{"C", "cyclic(64,64)"}};
      std::map<std::string, void*> data = {{"C", ours.data()}};
      if (whole_inputs) {
        layouts["A"] = "root";
        layouts["B"] = "replicated";
        if (rank == 0) whole_a = Whole(m, k, 1);
        whole_b = Whole(k, n, 2);
        data["A"] = whole_a.data();
        data["B"] = whole_b.data();
      } else {
        layouts["A"] = layouts["B"] = "cyclic(64,64)";
        data["A"] = const_cast<float*>(a.data.data());
        data["B"] = const_cast<float*>(b.data.data());
      }
      ExecuteOrAbort(**plan, layouts, data, rank);
      const double largest = LargestDifference(ours, c.data);
      tally.Add(largest);
      if (rank == 0) {
        std::printf("%dx%dx%d, A and B %s: schedule on %s, largest relative difference %.3g\n", m,
                    n, k, whole_inputs ? "root and replicated" : "block-cyclic",
                    (*plan)->mesh().c_str(), largest);
      }
    }
  }
  // In place: the in-place form of the three NB-64 layouts (ir::InPlaceForm) runs on
  // PSGEMM's own local arrays, each a block of its transposed tensor (grid(y,x)).
  {
    const int m = 256, n = 384, k = 128;
    const std::string extents =
        "m=" + std::to_string(m) + ",n=" + std::to_string(n) + ",k=" + std::to_string(k);
    auto problem = meshtune::ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", extents);
    if (!problem.ok() || !meshtune::ir::SetLayouts(
                              {"A=cyclic(64,64)", "B=cyclic(64,64)", "C=cyclic(64,64)"}, &*problem)
                              .ok())
      MPI_Abort(MPI_COMM_WORLD, 2);
    const auto form = meshtune::ir::InPlaceForm(*problem, *meshtune::ir::ParseMesh("x=2,y=2"));
    if (!form.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, form.status().ToString().c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const Local a = Make(m, k, ctx, row, col, 1), b = Make(k, n, ctx, row, col, 2);
    Local c = Make(m, n, ctx, row, col, 3);
    std::vector<float> ours = c.data;
    Psgemm(m, n, k, a, b, &c);
    std::map<std::string, std::string> layouts;
    for (const auto& [tensor, layout] : form->layouts) layouts[tensor] = layout.ToString();
    meshtune::PlanOptions options{meshtune::PlanMode::kEstimate, "", "x=2,y=2"};
    options.layouts = layouts;  // the model then prefers the schedule that runs in place
    auto plan = meshtune::Plan::Create(form->ToString(), extents, MPI_COMM_WORLD, options);
    if (!plan.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, plan.status().ToString().c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    std::map<std::string, void*> data = {{"A", const_cast<float*>(a.data.data())},
                                         {"B", const_cast<float*>(b.data.data())},
                                         {"C", ours.data()}};
    ExecuteOrAbort(**plan, layouts, data, rank);
    const double largest = LargestDifference(ours, c.data);
    tally.Add(largest);
    // Whether the schedule's shards are the local arrays (each tensor transposed, its rows
    // over y and columns over x): then nothing was redistributed.
    int own = 1;
    const std::map<std::string, std::pair<int, int>> dims = {
        {"A", {k, m}}, {"B", {n, k}}, {"C", {n, m}}};
    for (const auto& [t, d] : dims) {
      const auto shard = (*plan)->Shard(t);
      own &= shard.ok() &&
             shard->start == std::vector<int64_t>{col * d.first / 2, row * d.second / 2} &&
             shard->extents == std::vector<int64_t>{d.first / 2, d.second / 2};
    }
    int all = 0;
    MPI_Allreduce(&own, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf(
          "%dx%dx%d in place as %s (%s): largest relative difference %.3g, shards are "
          "the local arrays: %s\n",
          m, n, k, form->ToString().c_str(), layouts["A"].c_str(), largest, all ? "yes" : "no");
    }
  }
  if (rank == 0) {
    std::printf("interop: %d cases, largest relative difference %.3g\n", tally.cases, tally.worst);
  }
  // Bad calls: their messages, on rank 0.
  auto plan = meshtune::Plan::Create("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", MPI_COMM_WORLD,
                                     {meshtune::PlanMode::kEstimate, "", "x=2,y=2"});
  std::vector<float> x(64);
  const std::vector<void*> three = {x.data(), x.data(), x.data()};
  for (const absl::Status& s : {(*plan)->ExecuteInLayouts({{"D", "root"}}, three),
                                (*plan)->ExecuteInLayouts({{"A", "cyclic(64)"}}, three),
                                (*plan)->ExecuteInLayouts({{"A", "root"}}, {x.data()})}) {
    if (rank == 0) std::printf("refused: %s\n", std::string(s.message()).c_str());
  }
  Cblacs_gridexit(ctx);
  MPI_Finalize();
  return tally.failed == 0 ? 0 : 1;
}
