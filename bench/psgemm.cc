// ScaLAPACK PSGEMM timing (see psgemm.h); used by psgemm_bench and tuned_vs_psgemm.
#include "bench/psgemm.h"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "third_party/scalapack_api.h"

namespace meshtune::bench {
namespace {

// A rows x cols matrix's local part on this rank, with its ScaLAPACK descriptor.
struct LocalMatrix {
  std::vector<float> data;
  int desc[9];
};

LocalMatrix Distribute(int rows, int cols, int nb, int ctx, int row, int col, int prow, int pcol) {
  const int zero = 0;
  const int lr = numroc_(&rows, &nb, &row, &zero, &prow),
            lc = numroc_(&cols, &nb, &col, &zero, &pcol);
  const int lld = std::max(1, lr);
  int info = 0;
  LocalMatrix x;
  x.data.resize(static_cast<size_t>(lr) * lc);
  descinit_(x.desc, &rows, &cols, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
  return x;
}

void Fill(std::vector<float>& v, size_t prime) {
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((i * prime % 1000) / 1000.0 - 0.5);
}

}  // namespace

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double PsgemmSeconds(int m, int n, int k, int nb, int prow, int pcol, int reps) {
  int ctx = 0, rows = 0, cols = 0, row = 0, col = 0;
  Cblacs_get(-1, 0, &ctx);
  Cblacs_gridinit(&ctx, "Row", prow, pcol);
  Cblacs_gridinfo(ctx, &rows, &cols, &row, &col);
  LocalMatrix a = Distribute(m, k, nb, ctx, row, col, prow, pcol);
  LocalMatrix b = Distribute(k, n, nb, ctx, row, col, prow, pcol);
  LocalMatrix c = Distribute(m, n, nb, ctx, row, col, prow, pcol);
  Fill(a.data, 7919);
  Fill(b.data, 104729);
  const int one = 1;
  const float alpha = 1, beta = 1;
  std::vector<double> times;
  for (int r = 0; r < reps + 1; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    psgemm_("N", "N", &m, &n, &k, &alpha, a.data.data(), &one, &one, a.desc, b.data.data(), &one,
            &one, b.desc, &beta, c.data.data(), &one, &one, c.desc);
    double dt = MPI_Wtime() - t0, worst = 0;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (r > 0) times.push_back(worst);
  }
  Cblacs_gridexit(ctx);
  return Median(times);
}

}  // namespace meshtune::bench
