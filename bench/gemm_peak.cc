// gemm_peak: the machine's limit for a GEMM — one process of OpenBLAS on every core (or
// --threads) doing C[m,n] += A[m,k] * B[k,n] in f32 — as the median and the best of --reps
// timed calls after a warm-up, in seconds and GF/s. The floor no distributed run on this
// machine can beat (bench/measured_floor.sh).
//   bazel run -c opt //bench:gemm_peak -- --m 2048 --n 2048 --k 2048
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/median.h"

extern "C" void openblas_set_num_threads(int);

int main(int argc, char** argv) {
  CLI::App app{"gemm_peak: one process of OpenBLAS on every core"};
  int m = 2048, n = 2048, k = 2048, reps = 5;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--m", m)->check(CLI::Range(1, 1 << 20));
  app.add_option("--n", n)->check(CLI::Range(1, 1 << 20));
  app.add_option("--k", k)->check(CLI::Range(1, 1 << 20));
  app.add_option("--reps", reps)->check(CLI::Range(1, 1000));
  app.add_option("--threads", threads)->check(CLI::Range(1, 4096));
  CLI11_PARSE(app, argc, argv);
  openblas_set_num_threads(threads);
  std::vector<float> a(static_cast<size_t>(m) * k, 0.5f), b(static_cast<size_t>(k) * n, 0.25f),
      c(static_cast<size_t>(m) * n, 0.0f);
  std::vector<double> seconds;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
                1.0f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) seconds.push_back(s);
  }
  const double flops = 2.0 * m * n * k;
  const double median = meshtune::base::Median(seconds);
  const double best = *std::min_element(seconds.begin(), seconds.end());
  std::printf(
      "{\"m\":%d,\"n\":%d,\"k\":%d,\"threads\":%d,\"median_s\":%.6g,\"best_s\":%.6g,"
      "\"median_gflops\":%.4g,\"best_gflops\":%.4g}\n",
      m, n, k, threads, median, best, flops / median / 1e9, flops / best / 1e9);
  return 0;
}
