// ScaLAPACK PSGEMM timing for the benchmarks that compare meshtune's schedules with it
// (psgemm_bench, tuned_vs_psgemm). Link //bench:psgemm and call from inside an MPI job:
//
//   const double s = meshtune::bench::PsgemmSeconds(m, n, k, nb, prow, pcol, reps);
#ifndef MESHTUNE_BENCH_PSGEMM_H_
#define MESHTUNE_BENCH_PSGEMM_H_

#include <vector>

namespace meshtune::bench {

// Median of `v` (the upper one for an even count); 0 when empty.
double Median(std::vector<double> v);

// C[m,n] += A[m,k] * B[k,n] in f32 through PSGEMM, every matrix block-cyclic with square
// nb x nb blocks on a row-major prow x pcol BLACS grid of MPI_COMM_WORLD. One warm-up call,
// then `reps` timed ones; a call's time is the slowest rank's. Returns the median, on
// every rank. Collective over MPI_COMM_WORLD, whose size must be prow * pcol.
double PsgemmSeconds(int m, int n, int k, int nb, int prow, int pcol, int reps);

}  // namespace meshtune::bench

#endif  // MESHTUNE_BENCH_PSGEMM_H_
