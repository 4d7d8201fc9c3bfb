#include "runtime/mpi_executor.h"

#include "absl/strings/str_cat.h"
#include "runtime/mpi_comm.h"

namespace meshtune::runtime {

using codegen::Program;

RunStats Execute(const ProblemSpec& problem, const Program& program, MPI_Comm comm,
                 const ExecOptions& options) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  if (size != program.Ranks()) {
    RunStats result;
    result.error = absl::StrCat("the mesh has ", program.Ranks(), " ranks but the job has ", size);
    return result;
  }
  return Execute(problem, program, NewMpiComm(comm, program.axis_sizes), options);
}

}  // namespace meshtune::runtime
