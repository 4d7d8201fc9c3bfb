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

RunStats ExecuteStatements(const std::vector<StatementJob>& statements, MPI_Comm comm,
                           const ExecOptions& options) {
  if (statements.empty()) {
    RunStats result;
    result.error = "the program has no statement";
    return result;
  }
  int size = 0;
  MPI_Comm_size(comm, &size);
  const int64_t ranks = statements[0].program.Ranks();
  if (size != ranks) {
    RunStats result;
    result.error = absl::StrCat("the mesh has ", ranks, " ranks but the job has ", size);
    return result;
  }
  const std::vector<int64_t> sizes = statements[0].program.axis_sizes;
  return ExecuteStatements(
      statements, [&](int) { return NewMpiComm(comm, sizes); }, options);
}

}  // namespace meshtune::runtime
