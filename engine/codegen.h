// Codegen: the C++ of a schedule, or of the library, for an application's build.
//
// The in-process engine behind `meshtune codegen` (and the Codegen RPC). Stateless and
// thread-safe.
#ifndef MESHTUNE_ENGINE_CODEGEN_H_
#define MESHTUNE_ENGINE_CODEGEN_H_

#include "absl/status/statusor.h"
#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The C++ of the request: for one statement a callable kernel (codegen/emit/emit_cpp.h;
// request.name and header_name) or, with request.main, a standalone MPI program; for a
// program of several statements a callable kernel of them all (codegen/emit/emit_program.h;
// InvalidArgument with request.main). Of the request's trace lowered on its mesh (engine/
// prepare.h: its errors, as PrepareRun's). Of the library instead when request.library is
// set with prow > 0 (codegen/emit/emit_library.h: ScaLAPACK's GEMM on every tensor in
// cyclic(NB,NB) over the prow x pcol grid; the trace is not read): InvalidArgument when the
// problem is not of matmul form, gives a tensor a layout other than cyclic(NB,NB) or an
// extent beyond int, the library is not the dtype's (PSGEMM for f32, PDGEMM for f64; ""
// means the dtype's), the grid or block is empty, or a mesh is given whose ranks are not
// prow * pcol.
absl::StatusOr<v1::CodegenResponse> Codegen(const v1::CodegenRequest& request);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_CODEGEN_H_
