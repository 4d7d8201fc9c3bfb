#include "bench/blas_peer.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "bench/psgemm.h"

namespace meshtune::bench {

namespace {

// Completes `request`, polling every 2 ms.
void WaitSleeping(MPI_Request* request) {
  for (int done = 0; MPI_Test(request, &done, MPI_STATUS_IGNORE), !done;) usleep(2000);
}

}  // namespace

double OpenBlasSeconds(MPI_Comm comm, int m, int n, int k, int threads, int reps) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double median = 0;
  if (rank == 0) {
    std::vector<float> a(static_cast<int64_t>(m) * k), b(static_cast<int64_t>(k) * n),
        c(static_cast<int64_t>(m) * n, 0.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) / 8;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) / 8;
    openblas_set_num_threads(threads);
    std::vector<double> seconds;
    for (int r = 0; r <= reps; ++r) {
      const double t0 = MPI_Wtime();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(),
                  n, 1.0f, c.data(), n);
      if (r > 0) seconds.push_back(MPI_Wtime() - t0);
    }
    openblas_set_num_threads(1);
    median = Median(seconds);
    for (int r = 1; r < size; ++r) MPI_Send(&median, 1, MPI_DOUBLE, r, 99, comm);
  } else {
    MPI_Request request;
    MPI_Irecv(&median, 1, MPI_DOUBLE, 0, 99, comm, &request);
    WaitSleeping(&request);
  }
  return median;
}

void SleepyBarrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  WaitSleeping(&request);
}

}  // namespace meshtune::bench
