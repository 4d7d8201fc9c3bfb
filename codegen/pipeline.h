// The pipeline: the one way a schedule trace becomes a Program that runs. The trace is
// replayed and judged (ir::Judge: the legality rules, with reasons), the legal computation
// lowered (codegen::Lower) and the Program proven by translation validation
// (codegen::AdmitProgram); nothing else in meshtune makes a Program to run or to cost for
// the user. Parsing is not part of it: its inputs are values (ir::Computation, ir::Trace)
// that the edges (the CLI, the daemon, the library, file readers) parsed once.
//
// Cache policy: none here. A caller that judges many traces of one base (the search)
// passes its ir::LegalityCache; the verdicts are the same with or without it.
// Thread-compatible: uses the base Computation's isl context (one thread at a time).
#ifndef MESHTUNE_CODEGEN_PIPELINE_H_
#define MESHTUNE_CODEGEN_PIPELINE_H_

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "ir/computation.h"
#include "ir/footprint.h"
#include "ir/legality.h"
#include "ir/trace.h"
#include "ir/verdict.h"

namespace meshtune::codegen {

// How far the pipeline goes.
enum class Through {
  kJudge,     // the verdict and the footprint only (e.g. a record checked against a budget)
  kValidate,  // and, when legal, the validated Program
};

// A judged trace and, when legal, its Program.
struct Prepared {
  ir::Verdict verdict;  // the replayed computation; legal, or its reasons
  // Per rank, the shards and transfer buffers of verdict.computation.
  ir::Footprint footprint;
  // kValidate only: the validated Program; ir::IllegalSchedule of the schedule's first
  // reason ("the schedule is illegal: [code] message") when the verdict is illegal; the
  // validator's refusal ("lowering_unsound: ...", "unvalidated: ...") or lowering's error
  // otherwise.
  absl::StatusOr<Program> program = absl::FailedPreconditionError("not lowered");
};

// `trace` replayed on `base`, judged and (through kValidate) lowered and validated.
// InvalidArgument when an instruction of the trace is malformed (ir::Judge's error); an
// illegal or refused schedule is an answer, not an error.
absl::StatusOr<Prepared> Prepare(const ir::Computation& base, const ir::Trace& trace,
                                 Through through = Through::kValidate,
                                 ir::LegalityCache* cache = nullptr);

// The validated Program of `trace` on `base`: Prepare's program, with its errors.
absl::StatusOr<Program> PrepareProgram(const ir::Computation& base, const ir::Trace& trace);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_PIPELINE_H_
