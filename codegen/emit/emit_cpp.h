// The C++ emitter: a Program as a callable kernel or a standalone MPI program, over
// runtime/rank.h.
//
// Both drive the same RankRuntime the executor does, calling its primitives from plain
// loops. The callable kernel (EmitCallable) runs the schedule on the caller's shards and
// MPI communicator; it links //runtime:mpi_comm and //runtime:rank (MPI, CBLAS). The
// standalone program (EmitCpp) fills, communicates, computes, verifies and times exactly
// like `meshtune run`; rank 0 prints one JSON line, a meshtune.v1.RunResult (Bazel: a
// cc_binary depending on //runtime:mpi_comm, //runtime:rank and //runtime:run_result).
#ifndef MESHTUNE_CODEGEN_EMIT_EMIT_CPP_H_
#define MESHTUNE_CODEGEN_EMIT_EMIT_CPP_H_

#include <string>

#include "codegen/program.h"
#include "ir/problem.h"

namespace meshtune::codegen {

// `title` goes into the header comment (e.g. the problem, mesh and trace). The program
// checks its output against `problem`, the problem `program` was lowered from as stated
// (runtime/oracle.h), not against anything read from `program`.
std::string EmitCpp(const ir::Problem& problem, const Program& program, const std::string& title);

// A callable kernel: a header declaring it, documenting each tensor's shard, and its source.
struct CallableKernel {
  std::string header, source;
};

// The kernel `name` (a C identifier) of `program`, declared extern "C" in the header:
//   int NAME(float* C, const float* A, const float* B, MPI_Comm comm);
// one pointer per tensor of program.tensors (inputs const), each this rank's shard, dense
// and row-major; and
//   int NAME_shard(const char* tensor, int rank, int64_t* start, int64_t* extents);
// which tells where a tensor's shard lies on an MPI rank and which elements it holds, and
//   int NAME_storage(const char* tensor, int64_t* storage);
// the extents of every rank's array for it (the full block: codegen/program.h). `header_name` is
// how the source includes the header (e.g. "kernel.h"); "" includes none (the caller puts the
// header first).
CallableKernel EmitCallable(const Program& program, const std::string& title,
                            const std::string& name, const std::string& header_name);

// A callable kernel header's declarations, in an include guard: `int NAME(params, MPI_Comm
// comm)`, NAME_shard, NAME_storage and NAME_holds (documented), for a mesh of `ranks` ranks.
std::string CallableDeclarations(const std::string& name, int64_t ranks, const std::string& params);

// The #include lines (and using-declaration) a callable kernel's definitions need.
extern const char kCallableIncludes[];

// The definitions of the callable kernel `name` of `program` (a block-layout one: no given
// layouts), without includes: NAME, NAME_shard, NAME_storage, NAME_holds and the helpers they
// use, as EmitCallable's source holds them (a program's kernel puts each statement's in a
// namespace of its own: codegen/emit/emit_program.h).
std::string CallableDefinitions(const Program& program, const std::string& name);

// The declaration of `problem` in an emitted program, `const ProblemSpec problem{...};`
// (runtime/oracle.h) indented by `pad`: the check's statement, written from the problem as
// stated, not from the program.
std::string ProblemDecl(const ir::Problem& problem, const std::string& pad);

// The global index of a tensor's first element on a rank, in the mesh axes' variables.
std::vector<Expr> ShardStart(const TensorInfo& tensor);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_EMIT_EMIT_CPP_H_
