// An MPI application of C[m,n] (+)= A[m,k] * B[k,n] through a callable kernel that
// `meshtune codegen` generated (tests/BUILD: KERNEL, KERNEL_HEADER, M, N, K and ACCUMULATE
// are defined there). Every rank builds the global matrices, copies its shards where
// KERNEL_shard says they lie, calls the kernel twice, and checks its output shard against a
// serial reference after each call (for '+=' the second call adds again). Exit status 0
// when every rank's check passes; 1 with a message otherwise; the kernel's own status
// (1: wrong communicator size) is printed as "kernel returned N" and becomes the exit status.
// With GIVEN_ROOT defined the kernel was generated with --layout A=root --layout B=replicated
// --layout C=root: rank 0 passes the whole A and C, every rank the whole B, the others null
// for A and C, and rank 0 checks the whole C.
// The output is checked on every rank that KERNEL_holds says holds it after the call (every
// copy of a copied output, unless generated with --result-on-layer); with HOLDERS defined,
// exactly that many ranks must hold it.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include KERNEL_HEADER

#define CONCAT2(a, b) a##b
#define CONCAT(a, b) CONCAT2(a, b)
#define KERNEL_SHARD CONCAT(KERNEL, _shard)
#define KERNEL_HOLDS CONCAT(KERNEL, _holds)

namespace {

// A's, B's and C's value at a global element: small, distinct, exact in f32.
float Value(int tensor, int64_t i, int64_t j) {
  return static_cast<float>(((i * 7 + j * 3 + tensor * 5) % 11) - 5) / 4.0f;
}

// The shard of `name` on `rank`, copied out of the global matrix `value(i, j)`.
template <typename F>
std::vector<float> Shard(const char* name, int rank, F value, int64_t start[2], int64_t ext[2]) {
  if (KERNEL_SHARD(name, rank, start, ext) != 2) return {};
  std::vector<float> s(static_cast<size_t>(ext[0] * ext[1]));
  for (int64_t i = 0; i < ext[0]; ++i)
    for (int64_t j = 0; j < ext[1]; ++j) s[i * ext[1] + j] = value(start[0] + i, start[1] + j);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int64_t as[2], ae[2], bs[2], be[2], cs[2], ce[2];
#ifdef GIVEN_ROOT
  const auto whole = [](int tensor, int64_t rows, int64_t cols, int64_t* start, int64_t* ext) {
    start[0] = start[1] = 0;
    ext[0] = rows;
    ext[1] = cols;
    std::vector<float> s(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) s[i * cols + j] = Value(tensor, i, j);
    return s;
  };
  std::vector<float> a = whole(1, M, K, as, ae), b = whole(2, K, N, bs, be),
                     c = whole(0, M, N, cs, ce);
  if (rank != 0) {  // root: only rank 0 holds A and C
    a.clear();
    c.clear();
    ce[0] = ce[1] = 0;
  }
  int bad = b.empty() || (rank == 0 && (a.empty() || c.empty())) ? 1 : 0;
#else
  std::vector<float> a = Shard(
      "A", rank, [](int64_t i, int64_t j) { return Value(1, i, j); }, as, ae);
  std::vector<float> b = Shard(
      "B", rank, [](int64_t i, int64_t j) { return Value(2, i, j); }, bs, be);
  std::vector<float> c = Shard(
      "C", rank, [](int64_t i, int64_t j) { return Value(0, i, j); }, cs, ce);
  int bad = a.empty() || b.empty() || c.empty() ? 1 : 0;
#endif
  for (int call = 1; call <= 2 && !bad; ++call) {
    const int status = KERNEL(c.data(), a.data(), b.data(), MPI_COMM_WORLD);
    if (status != 0) {
      std::printf("rank %d: kernel returned %d\n", rank, status);
      MPI_Finalize();
      return status;
    }
    // A rank off the layer the output ends on holds scratch, never read.
    const int holds = KERNEL_HOLDS("C", rank);
    if (holds < 0) bad = 1;
    for (int64_t i = 0; i < ce[0] && !bad && holds == 1; ++i) {
      for (int64_t j = 0; j < ce[1] && !bad; ++j) {
        const int64_t gi = cs[0] + i, gj = cs[1] + j;
        double product = 0;
        for (int64_t k = 0; k < K; ++k) product += Value(1, gi, k) * Value(2, k, gj);
        const double expected = ACCUMULATE ? Value(0, gi, gj) + call * product : product;
        const double got = c[i * ce[1] + j];
        if (std::fabs(got - expected) > 1e-3 * (1 + std::fabs(expected))) {
          std::printf("rank %d, call %d: C[%lld, %lld] = %g but the reference is %g\n", rank, call,
                      static_cast<long long>(gi), static_cast<long long>(gj), got, expected);
          bad = 1;
        }
      }
    }
  }
  int holders = 0, holds = KERNEL_HOLDS("C", rank) == 1 ? 1 : 0;
  MPI_Allreduce(&holds, &holders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#ifdef HOLDERS
  if (holders != HOLDERS) {
    if (rank == 0) std::printf("%d ranks hold C; expected %d\n", holders, HOLDERS);
    bad = 1;
  }
#endif
  if (rank == 0) std::printf("C checked on %d ranks\n", holders);
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf(any ? "callable kernel: MISMATCH\n" : "callable kernel: verified\n");
  MPI_Finalize();
  return any;
}
