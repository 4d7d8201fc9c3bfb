// Explain: the legality verdict, reasons, schedule and shardings of one trace.
//
// The in-process engine behind `meshtune explain` (and the Explain RPC). Stateless and
// thread-safe: each call builds its own isl context.
#ifndef MESHTUNE_ENGINE_EXPLAIN_H_
#define MESHTUNE_ENGINE_EXPLAIN_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/computation.h"
#include "ir/footprint.h"
#include "proto/meshtune.pb.h"
#include "runtime/launcher.h"
#include "runtime/simulator.h"

namespace meshtune::engine {

// Replays the request's trace on its problem and mesh and judges it. Returns
// InvalidArgument for malformed problems, meshes and traces (the message names the
// offending token); an illegal schedule is a response with legal=false, not an error.
// A program of several statements (its trace a trace per statement between lines ---)
// answers with each statement's response in `statements`, the moves of its intermediates
// between them (in place, or the busiest rank's bytes and the model's seconds) and the
// whole program's predicted time; its errors name the statement.
absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request);

// The C++ of the request: a callable kernel (codegen/emit_cpp.h; request.name and
// header_name) or, with request.main, a standalone MPI program. Of the request's trace,
// lowered on its mesh: InvalidArgument for bad input or an illegal schedule (the message
// gives the first reason), Unimplemented when it cannot be lowered. Of the library instead
// when request.library is set with prow > 0 (codegen/emit_library.h: ScaLAPACK's GEMM on
// every tensor in cyclic(NB,NB) over the prow x pcol grid; the trace is not read):
// InvalidArgument when the problem is not of matmul form, gives a tensor a layout other than
// cyclic(NB,NB) or an extent beyond int, the library is not the dtype's (PSGEMM for f32,
// PDGEMM for f64; "" means the dtype's), the grid or block is empty, or a mesh is given whose
// ranks are not prow * pcol.
absl::StatusOr<v1::CodegenResponse> Codegen(const v1::CodegenRequest& request);

// The Program every rank runs for the request's trace. InvalidArgument for bad input or an
// illegal schedule (the message gives the first reason), Unimplemented when it cannot be
// lowered.
absl::StatusOr<codegen::Program> LowerTrace(const v1::Problem& problem, const v1::Mesh& mesh,
                                            const v1::Trace& trace);

// A run of a trace, ready to launch (runtime::Launch) or simulate.
struct PreparedRun {
  // The statement as stated, the validated Program and the ranks; measurement settings at
  // their defaults.
  runtime::RunSpec spec;
  ir::Footprint footprint;  // per rank: what runtime::CheckRunFitsMemory checks
  // The judged computation (a program's run adds its statements' into one footprint).
  std::optional<ir::Computation> computation;
};

// The request's trace judged, lowered and validated (codegen/pipeline.h) for a run.
// InvalidArgument for bad input or an illegal schedule ("the schedule is illegal: [code]
// message"), FailedPrecondition "the schedule is refused: <reason>" when lowering or
// translation validation refuses its Program.
absl::StatusOr<PreparedRun> PrepareRun(const v1::ExplainRequest& request);

// Human-readable rendering: verdict, reasons, schedule, shardings.
std::string ExplainText(const v1::ExplainResponse& response);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_EXPLAIN_H_
