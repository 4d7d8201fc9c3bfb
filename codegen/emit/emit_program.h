// The C++ emitter of a program of several statements (ir/statement_program.h): one callable
// kernel that runs every statement's lowered Program in order on the caller's shards of the
// program's tensors, and moves a tensor a statement reads in another layout than the one it
// lives in (runtime/redistribution.h), as runtime/bound_statements.h does in a plan.
#ifndef MESHTUNE_CODEGEN_EMIT_EMIT_PROGRAM_H_
#define MESHTUNE_CODEGEN_EMIT_EMIT_PROGRAM_H_

#include <string>
#include <vector>

#include "codegen/emit/emit_cpp.h"
#include "codegen/program.h"

namespace meshtune::codegen {

// The kernel `name` (a C identifier) of `statements` (each statement's Program, in program
// order, all on one mesh and of one dtype, block layouts only), declared extern "C":
//   int NAME(float* H, const float* X, ..., MPI_Comm comm);
// one pointer per tensor of the program in `tensors` order (every tensor once, in order of
// first appearance; the tensors a statement writes not const), each this rank's shard where
// the tensor lives: where the statement writing it leaves it, or for an input where the
// first statement reading it reads it; and NAME_shard, NAME_storage and NAME_holds as
// EmitCallable's, of those shards. The source links //runtime:mpi_comm, //runtime:rank,
// //runtime:redistribution and //runtime:given_spec. `header_name` as EmitCallable's.
CallableKernel EmitProgramCallable(const std::vector<Program>& statements,
                                   const std::vector<std::string>& tensors,
                                   const std::string& title, const std::string& name,
                                   const std::string& header_name);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_EMIT_EMIT_PROGRAM_H_
