// The table of callable kernels tests/kernel_sampler.cc generates (sampled_kernels.cc):
// what an outside application knows of each, from its header and its command line.
#ifndef MESHTUNE_TESTS_SAMPLED_KERNELS_H_
#define MESHTUNE_TESTS_SAMPLED_KERNELS_H_

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

struct SampledKernel {
  std::string name, expr, extents, mesh;  // as given to `meshtune codegen`
  int ranks;
  std::vector<std::string> tensors;  // the kernel's parameters, in order
  int (*call)(void** shards, MPI_Comm comm);
  int (*shard)(const char* tensor, int rank, int64_t* start, int64_t* extents);
  int (*storage)(const char* tensor, int64_t* storage);
  int (*holds)(const char* tensor, int rank);
};

const std::vector<SampledKernel>& SampledKernels();

#endif  // MESHTUNE_TESTS_SAMPLED_KERNELS_H_
