// The Program executor over MPI (the worker's and the benchmarks' entry point).
#ifndef MESHTUNE_RUNTIME_MPI_EXECUTOR_H_
#define MESHTUNE_RUNTIME_MPI_EXECUTOR_H_

#include <mpi.h>

#include "codegen/program.h"
#include "runtime/executor.h"
#include "runtime/statements_executor.h"

namespace meshtune::runtime {

// Execute (executor.h) on every rank of `comm`, whose size must equal the program's rank
// count (otherwise the result carries an error). Collective.
RunStats Execute(const ProblemSpec& problem, const codegen::Program& program, MPI_Comm comm,
                 const ExecOptions& options);

// ExecuteStatements (statements_executor.h) on every rank of `comm`, whose size must equal
// the statements' mesh's rank count: each channel a Cartesian communicator of its own.
RunStats ExecuteStatements(const std::vector<StatementJob>& statements, MPI_Comm comm,
                           const ExecOptions& options);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_MPI_EXECUTOR_H_
