// Comm over MPI: a periodic Cartesian communicator of the mesh (no reordering) and one
// sub-communicator per set of axes, created on first use. Not thread-safe.
#ifndef MESHTUNE_RUNTIME_MPI_COMM_H_
#define MESHTUNE_RUNTIME_MPI_COMM_H_

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/comm.h"

namespace meshtune::runtime {

// A Comm over `comm`, whose size must equal the product of `axis_sizes` (collective: every
// rank of `comm` calls it).
std::unique_ptr<Comm> NewMpiComm(MPI_Comm comm, const std::vector<int64_t>& axis_sizes);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_MPI_COMM_H_
