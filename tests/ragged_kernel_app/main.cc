// An MPI application through `ragged`, the kernel meshtune generated at build time for
// C[m,n] += A[m,k] * B[k,n] with m=61, n=47, k=29 on 3 ranks, where the blocks do not
// divide the extents. Every rank allocates each shard at ragged_storage's extents (NaN
// throughout), fills the elements ragged_shard says it holds, calls the kernel twice, and
// checks the C it holds against a serial reference after each call. Rank 0 prints
// "ragged: verified on 3 ranks (C held: N0 N1 N2)"; exit status 0 when every check passes.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "ragged.h"

namespace {

constexpr int64_t kK = 29;

float Value(int tensor, int64_t i, int64_t j) {
  return static_cast<float>(((i * 7 + j * 3 + tensor * 5) % 11) - 5) / 4.0f;
}

struct Shard {
  int64_t start[2] = {0, 0}, ext[2] = {0, 0}, storage[2] = {0, 0};
  std::vector<float> data;
  float& At(int64_t i, int64_t j) { return data[i * storage[1] + j]; }
};

// Tensor `name` (number `tensor`) on `rank`: its storage NaN, its elements filled.
Shard Make(const char* name, int tensor, int rank) {
  Shard s;
  if (ragged_shard(name, rank, s.start, s.ext) != 2 || ragged_storage(name, s.storage) != 2)
    return s;
  s.data.assign(static_cast<size_t>(s.storage[0] * s.storage[1]) + 1, NAN);
  for (int64_t i = 0; i < s.ext[0]; ++i)
    for (int64_t j = 0; j < s.ext[1]; ++j)
      s.At(i, j) = Value(tensor, s.start[0] + i, s.start[1] + j);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Shard a = Make("A", 1, rank), b = Make("B", 2, rank), c = Make("C", 0, rank);
  int bad = a.data.empty() || b.data.empty() || c.data.empty() ? 1 : 0;
  for (int call = 1; call <= 2 && !bad; ++call) {
    const int status = ragged(c.data.data(), a.data.data(), b.data.data(), MPI_COMM_WORLD);
    if (status != 0) {
      std::printf("rank %d: ragged returned %d\n", rank, status);
      MPI_Finalize();
      return status;
    }
    if (ragged_holds("C", rank) != 1) continue;
    for (int64_t i = 0; i < c.ext[0] && !bad; ++i) {
      for (int64_t j = 0; j < c.ext[1] && !bad; ++j) {
        const int64_t gi = c.start[0] + i, gj = c.start[1] + j;
        double product = 0;
        for (int64_t k = 0; k < kK; ++k) product += Value(1, gi, k) * Value(2, k, gj);
        const double expected = Value(0, gi, gj) + call * product;
        const double got = c.At(i, j);
        if (!(std::fabs(got - expected) <= 1e-3 * (1 + std::fabs(expected)))) {
          std::printf("rank %d, call %d: C[%lld, %lld] = %g but the reference is %g\n", rank, call,
                      static_cast<long long>(gi), static_cast<long long>(gj), got, expected);
          bad = 1;
        }
      }
    }
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  long long held = ragged_holds("C", rank) == 1 ? c.ext[0] * c.ext[1] : 0, all[3] = {0, 0, 0};
  MPI_Gather(&held, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (any) {
      std::printf("ragged: MISMATCH\n");
    } else {
      std::printf("ragged: verified on 3 ranks (C held: %lld %lld %lld)\n", all[0], all[1], all[2]);
    }
  }
  MPI_Finalize();
  return any;
}
