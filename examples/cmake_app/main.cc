// An MPI application that multiplies C[m,n] += A[m,k] * B[k,n] (m=64, n=48, k=32) on 4
// ranks through `gemm`, the kernel meshtune generated at build time for a 2x2 mesh. Every
// rank fills its shards of A, B and C where gemm_shard says they lie, calls the kernel
// twice, and checks its shard of C against a serial reference after each call. Exit status
// 0 when every rank's check passes; 1 with a message otherwise (the kernel's own status,
// 1 for a communicator that is not of 4 ranks, is printed and becomes the exit status).
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "gemm.h"

namespace {

constexpr int64_t kK = 32;

// A's, B's and C's value at a global element: small, distinct, exact in f32.
float Value(int tensor, int64_t i, int64_t j) {
  return static_cast<float>(((i * 7 + j * 3 + tensor * 5) % 11) - 5) / 4.0f;
}

// The shard of tensor `name` (number `tensor`) on `rank`: where it lies (`start`, the
// `ext` elements it holds), its storage (`storage`: the full block, larger than `ext` where
// a last block is short) and its values, row-major in the storage.
std::vector<float> Shard(const char* name, int tensor, int rank, int64_t start[2], int64_t ext[2],
                         int64_t storage[2]) {
  if (gemm_shard(name, rank, start, ext) != 2 || gemm_storage(name, storage) != 2) return {};
  std::vector<float> s(static_cast<size_t>(storage[0] * storage[1]));
  for (int64_t i = 0; i < ext[0]; ++i)
    for (int64_t j = 0; j < ext[1]; ++j)
      s[i * storage[1] + j] = Value(tensor, start[0] + i, start[1] + j);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int64_t as[2], ae[2], astore[2], bs[2], be[2], bstore[2], cs[2], ce[2], cstore[2];
  std::vector<float> a = Shard("A", 1, rank, as, ae, astore);
  std::vector<float> b = Shard("B", 2, rank, bs, be, bstore);
  std::vector<float> c = Shard("C", 0, rank, cs, ce, cstore);
  int bad = a.empty() || b.empty() || c.empty() ? 1 : 0;
  for (int call = 1; call <= 2 && !bad; ++call) {
    const int status = gemm(c.data(), a.data(), b.data(), MPI_COMM_WORLD);
    if (status != 0) {
      std::printf("rank %d: gemm returned %d\n", rank, status);
      MPI_Finalize();
      return status;
    }
    for (int64_t i = 0; i < ce[0] && !bad; ++i) {
      for (int64_t j = 0; j < ce[1] && !bad; ++j) {
        const int64_t gi = cs[0] + i, gj = cs[1] + j;
        double product = 0;
        for (int64_t k = 0; k < kK; ++k) product += Value(1, gi, k) * Value(2, k, gj);
        const double expected = Value(0, gi, gj) + call * product;
        const double got = c[i * cstore[1] + j];
        if (std::fabs(got - expected) > 1e-3 * (1 + std::fabs(expected))) {
          std::printf("rank %d, call %d: C[%lld, %lld] = %g but the reference is %g\n", rank, call,
                      static_cast<long long>(gi), static_cast<long long>(gj), got, expected);
          bad = 1;
        }
      }
    }
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf(any ? "gemm: MISMATCH\n" : "gemm: verified on 4 ranks\n");
  MPI_Finalize();
  return any;
}
