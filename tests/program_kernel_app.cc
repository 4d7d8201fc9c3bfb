// An MPI application of a program of statements through the callable kernel `meshtune
// codegen` generated for it (tests/BUILD defines KERNEL, KERNEL_HEADER, EXPR and EXTENTS;
// the program has five tensors, passed in order of first appearance). Every rank allocates
// each tensor's storage (KERNEL_storage), fills the inputs where KERNEL_shard says its shard
// lies, calls the kernel twice, and after each call checks every tensor the program writes
// (the intermediates too) where KERNEL_holds says it holds it, against the serial reference
// of tests/program_reference.h; every element of each must be held by some rank. Rank 0
// prints "program kernel: verified" or the first difference; exit status 0 or 1 (the
// kernel's own status when it fails).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include KERNEL_HEADER
#include "tests/program_reference.h"

#define CONCAT2(a, b) a##b
#define CONCAT(a, b) CONCAT2(a, b)

namespace {

using meshtune::testing::Elements;
using meshtune::testing::ForEach;
using meshtune::testing::Linear;

struct Shard {
  std::vector<int64_t> start, extents, storage;
  std::vector<float> data;
  bool holds = false;
};

// Calls `f(global index, offset in the storage)` for every element `s` holds.
template <typename F>
void ForEachHeld(const Shard& s, F f) {
  ForEach(s.extents, [&](const std::vector<int64_t>& local) {
    std::vector<int64_t> g(local.size());
    for (size_t d = 0; d < local.size(); ++d) g[d] = s.start[d] + local[d];
    f(g, Linear(s.storage, local));
  });
}

int Run(int rank) {
  const meshtune::testing::Reference ref(meshtune::testing::ParseProgram(EXPR),
                                         meshtune::testing::ParseExtents(EXTENTS));
  if (ref.order.size() != 5) {
    if (rank == 0)
      std::printf("program kernel: the program has %zu tensors, not 5\n", ref.order.size());
    return 1;
  }
  std::vector<Shard> shards(5);
  for (size_t t = 0; t < 5; ++t) {
    const char* name = ref.order[t].c_str();
    Shard& s = shards[t];
    const size_t dims = ref.shapes.at(ref.order[t]).size();
    s.start.resize(dims);
    s.extents.resize(dims);
    s.storage.resize(dims);
    if (CONCAT(KERNEL, _shard)(name, rank, s.start.data(), s.extents.data()) != int(dims) ||
        CONCAT(KERNEL, _storage)(name, s.storage.data()) != int(dims)) {
      std::printf("program kernel: rank %d: no shard of %s\n", rank, name);
      return 1;
    }
    s.holds = CONCAT(KERNEL, _holds)(name, rank) == 1;
    s.data.assign(static_cast<size_t>(Elements(s.storage)), 0.0f);
  }
  std::string error;
  for (int call = 0; call < 2 && error.empty(); ++call) {
    for (size_t t = 0; t < 5; ++t) {
      const std::string& name = ref.order[t];
      if (ref.written.at(name) && !ref.accumulated.at(name)) continue;
      ForEachHeld(shards[t], [&](const std::vector<int64_t>& g, int64_t at) {
        shards[t].data[at] = static_cast<float>(meshtune::testing::Value(name, g));
      });
    }
    const int rc = KERNEL(shards[0].data.data(), shards[1].data.data(), shards[2].data.data(),
                          shards[3].data.data(), shards[4].data.data(), MPI_COMM_WORLD);
    if (rc != 0) {
      std::printf("program kernel: kernel returned %d\n", rc);
      return rc;
    }
    for (size_t t = 0; t < 5; ++t) {
      const std::string& name = ref.order[t];
      if (!ref.written.at(name)) continue;
      const std::vector<int64_t>& shape = ref.shapes.at(name);
      std::vector<int> held(static_cast<size_t>(Elements(shape)), 0), all(held.size(), 0);
      if (shards[t].holds) {
        ForEachHeld(shards[t], [&](const std::vector<int64_t>& g, int64_t at) {
          const double got = shards[t].data[at], want = ref.values.at(name)[Linear(shape, g)];
          held[Linear(shape, g)] = 1;
          if (error.empty() && std::fabs(got - want) > 1e-3 * (1 + std::fabs(want))) {
            error = "rank " + std::to_string(rank) + ": " + name + "[" +
                    std::to_string(Linear(shape, g)) + "] is " + std::to_string(got) + ", not " +
                    std::to_string(want);
          }
        });
      }
      MPI_Allreduce(held.data(), all.data(), static_cast<int>(held.size()), MPI_INT, MPI_MAX,
                    MPI_COMM_WORLD);
      for (size_t i = 0; i < all.size() && error.empty(); ++i) {
        if (all[i] == 0) error = "no rank holds " + name + "[" + std::to_string(i) + "]";
      }
    }
  }
  int bad = error.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!error.empty()) std::printf("program kernel: %s\n", error.c_str());
  if (rank == 0 && any == 0) std::printf("program kernel: verified\n");
  return any;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int status = Run(rank);
  MPI_Finalize();
  return status;
}
