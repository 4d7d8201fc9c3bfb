// The single-process peer of the distributed benchmarks: one process of OpenBLAS with a
// given number of threads doing the whole GEMM, timed inside an MPI job while the job's
// other ranks sleep (they poll for the result every 2 ms instead of spinning in MPI), so
// the process has the machine's cores to itself.
#ifndef MESHTUNE_BENCH_BLAS_PEER_H_
#define MESHTUNE_BENCH_BLAS_PEER_H_

#include <mpi.h>

namespace meshtune::bench {

// Median seconds over `reps` (after one warm-up) of C[m,n] += A[m,k] * B[k,n] in f32 by
// cblas_sgemm with `threads` OpenBLAS threads on rank 0 of `comm`; every rank returns it.
// Collective over `comm`. OpenBLAS is set back to one thread afterwards.
double OpenBlasSeconds(MPI_Comm comm, int m, int n, int k, int threads, int reps);

// A barrier over `comm` whose waiting ranks poll every 2 ms instead of spinning in MPI, so
// that ranks with nothing to do leave the cores to those still working.
void SleepyBarrier(MPI_Comm comm);

}  // namespace meshtune::bench

#endif  // MESHTUNE_BENCH_BLAS_PEER_H_
