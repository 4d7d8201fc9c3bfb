// meshtune's SUMMA-family schedules against ScaLAPACK PSGEMM, same ranks, same run.
//
//   bazel build -c opt //bench:psgemm_bench
//   OPENBLAS_NUM_THREADS=1 mpirun -n 4 --oversubscribe bazel-bin/bench/psgemm_bench [--n 2048]
//   [--reps 5]
//
// C[m,n] += A[m,k] * B[k,n], f32, m = n = k = N on a 2x2 mesh. PSGEMM runs at every block
// size in {64, ..., 1024} and the best is the peer. For each meshtune schedule it prints
// the median time, the ratio to the best PSGEMM, and each rank's local kernel time
// against the same GEMM calls run by one process alone (the other ranks sleep meanwhile).
#include <cblas.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/psgemm.h"
#include "codegen/validate/validate.h"
#include "ir/verdict.h"
#include "runtime/mpi_executor.h"

namespace {

using meshtune::bench::Median;

// `calls` sgemm calls of m x n x k on rank 0 alone; the other ranks sleep in a
// non-busy wait. Median seconds per repetition, on every rank.
double SingleProcessGemm(int m, int n, int k, int calls, int reps) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double t = 0;
  if (rank == 0) {
    std::vector<float> a(static_cast<size_t>(m) * k, 0.5f), b(static_cast<size_t>(k) * n, 0.25f),
        c(static_cast<size_t>(m) * n, 0.f);
    std::vector<double> times;
    for (int r = 0; r < reps + 1; ++r) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < calls; ++i) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a.data(), k, b.data(),
                    n, 1.f, c.data(), n);
      }
      if (r > 0) times.push_back(MPI_Wtime() - t0);
    }
    t = Median(times);
  }
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (int done = 0; !done;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) usleep(2000);
  }
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

std::string Trace(const std::string& name, int parts) {
  const std::string p = std::to_string(parts);
  std::string t = "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, " + p +
                  ")\nreorder(mo, no, ko, mi, ni, ki)\nshard(C, m@x, n@y)\n";
  if (name == "cannon") {
    t += "shard(A, m@x, k@(x+y)%2)\nshard(B, k@(x+y)%2, n@y)\ncommunicate(A, ko, rotate=[mo,no])\n"
         "communicate(B, ko, rotate=[mo,no])\n";
  } else {
    t += "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\n";
    t += name == "pumma" ? "communicate(A, ko, rotate=[no])\n" : "communicate(A, ko)\n";
    t += "communicate(B, ko)\n";
  }
  return t + "tensorize([mi, ni, ki], matmul)\n";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n = 2048, reps = 5, rank = 0, size = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n")) n = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) {
    if (rank == 0) std::fprintf(stderr, "run with mpirun -n 4\n");
    MPI_Finalize();
    return 2;
  }
  double best = 0;
  int best_nb = 0;
  for (int nb : {64, 128, 256, 512, 1024}) {
    const double t = meshtune::bench::PsgemmSeconds(n, n, n, nb, 2, 2, reps);
    if (rank == 0)
      std::printf("PSGEMM  NB=%-4d  median %.4f s  %.2f GFLOP/s\n", nb, t,
                  2.0 * n * n * n / t / 1e9);
    if (best == 0 || t < best) {
      best = t;
      best_nb = nb;
    }
  }
  if (rank == 0) {
    std::printf("best PSGEMM: NB=%d, %.4f s\n\n", best_nb, best);
    std::printf("%-10s %5s %10s %10s %12s %12s %12s\n", "schedule", "k/ko", "median_s", "/PSGEMM",
                "kernel_s", "alone_s", "kernel_eff");
  }
  const std::string extents =
      "m=" + std::to_string(n) + ",n=" + std::to_string(n) + ",k=" + std::to_string(n);
  for (const auto& [name, parts] : std::vector<std::pair<std::string, int>>{
           {"summa", 2}, {"summa", 4}, {"summa", 8}, {"pumma", 2}, {"cannon", 2}}) {
    const auto problem = meshtune::ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", extents);
    const auto base =
        meshtune::ir::Computation::Create(*problem, *meshtune::ir::ParseMesh("x=2,y=2"));
    const auto verdict = meshtune::ir::Judge(*base, *meshtune::ir::ParseTrace(Trace(name, parts)));
    if (!verdict.ok() || !verdict->legal) continue;
    const auto program = meshtune::codegen::LowerValidated(verdict->computation);
    if (!program.ok()) continue;
    meshtune::runtime::ExecOptions options;
    options.reps = reps;
    const meshtune::runtime::RunStats r = meshtune::runtime::Execute(
        meshtune::runtime::ProblemSpecOf(*problem), *program, MPI_COMM_WORLD, options);
    const double alone = SingleProcessGemm(n / 2, n / 2, n / parts, parts, reps);
    const double t = Median(r.seconds), kernel = Median(r.kernel_seconds);
    if (rank == 0) {
      std::printf("%-10s %5d %10.4f %10.3f %12.4f %12.4f %11.0f%%%s\n", name.c_str(), n / parts, t,
                  t / best, kernel, alone, 100.0 * alone / kernel,
                  r.verified ? "" : "  NOT VERIFIED");
    }
  }
  MPI_Finalize();
  return 0;
}
