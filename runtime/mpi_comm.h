// Comm over MPI: a periodic Cartesian communicator of the mesh (no reordering) and one
// sub-communicator per set of axes, created on first use. The only part of the runtime
// that links MPI (the simulator and the service do not). Not thread-safe.
#ifndef MESHTUNE_RUNTIME_MPI_COMM_H_
#define MESHTUNE_RUNTIME_MPI_COMM_H_

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

// A Comm over `comm`, whose size must equal the product of `axis_sizes` (collective: every
// rank of `comm` calls it).
std::unique_ptr<Comm> NewMpiComm(MPI_Comm comm, const std::vector<int64_t>& axis_sizes);

// Whether every rank of `comm` shares one node (MPI_COMM_TYPE_SHARED): their MPI_Wtime
// readings compare (Comm::SharedClock). Collective.
bool OnOneNode(MPI_Comm comm);

// StepSeconds (comm.h) over an MPI communicator, `one_node` as OnOneNode(comm) said.
// Collective.
double StepSeconds(double start, double end, bool one_node, MPI_Comm comm);

// MakeRankRuntime (rank.h) over MPI: `comm`'s size must equal the mesh's ranks.
std::unique_ptr<RankRuntimeBase> MakeRankRuntime(
    int dtype_bytes, MPI_Comm comm, const std::vector<int64_t>& axis_sizes,
    const std::vector<std::string>& axis_names, std::vector<TensorSpec> tensors,
    std::vector<BufferSpec> buffers, ProblemSpec problem, bool accumulate, uint64_t seed);

// MakeBoundRankRuntime (rank.h) over MPI: the caller's memory, `comm`'s size the mesh's ranks.
std::unique_ptr<RankRuntimeBase> MakeBoundRankRuntime(int dtype_bytes, MPI_Comm comm,
                                                      const std::vector<int64_t>& axis_sizes,
                                                      const std::vector<std::string>& axis_names,
                                                      std::vector<TensorSpec> tensors,
                                                      std::vector<BufferSpec> buffers,
                                                      bool accumulate);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_MPI_COMM_H_
