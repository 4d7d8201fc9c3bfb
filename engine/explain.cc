#include "engine/explain.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/bytes.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "codegen/emit_cpp.h"
#include "codegen/emit_library.h"
#include "codegen/lower.h"
#include "codegen/pipeline.h"
#include "codegen/pseudocode.h"
#include "engine/callable_response.h"
#include "engine/program_codegen.h"
#include "engine/requests.h"
#include "engine/tune_options.h"
#include "ir/legality.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "runtime/executor.h"
#include "runtime/gemm_form.h"
#include "search/cost_model.h"
#include "search/cost_params.h"
#include "search/program_layouts.h"
#include "storage/hardware_profile.h"

namespace meshtune::engine {

namespace {

// Programs of several statements (ir/statement_program.h) with a program trace
// (ir/program_trace.h): each statement explained as one is, and the moves of its
// intermediates between the statements (the program tuner's reckoning,
// search/program_layouts.h).

// The move of `tensor` from statement `producer` to `consumer` under their traces, on the
// statements' base computations `bases`, costed with `params`.
absl::StatusOr<v1::ProgramResult::Move> MoveOf(const ir::StatementProgram& program,
                                               const std::vector<ir::Computation>& bases,
                                               const std::vector<ir::Trace>& traces,
                                               const search::CostParams& params,
                                               const std::string& tensor, int producer,
                                               int consumer) {
  MT_ASSIGN_OR_RETURN(const std::vector<runtime::Box> held,
                      search::HeldBoxes(bases[producer], traces[producer], tensor));
  MT_ASSIGN_OR_RETURN(const std::vector<runtime::Box> read,
                      search::HeldBoxes(bases[consumer], traces[consumer], tensor));
  MT_ASSIGN_OR_RETURN(const search::MoveCost cost,
                      search::CostMove(program.Shape(tensor), ir::DTypeBytes(program.dtype),
                                       bases[consumer].mesh(), held, read, params));
  v1::ProgramResult::Move m;
  m.set_tensor(tensor);
  m.set_producer(producer + 1);
  m.set_consumer(consumer + 1);
  m.set_in_place(cost.in_place);
  m.set_bytes_max(cost.bytes_max);
  m.set_predicted_s(cost.seconds);
  return m;
}

absl::StatusOr<v1::ExplainResponse> ExplainProgram(const v1::ExplainRequest& request) {
  const v1::Problem& stated = request.problem();
  MT_ASSIGN_OR_RETURN(const ir::StatementProgram program,
                      ir::ParseStatementProgram(stated.expr(), stated.extents(), stated.dtype()));
  if (stated.layouts_size() > 0) {
    return absl::InvalidArgumentError(
        "given layouts (--layout) are not supported for programs of several statements yet");
  }
  const int n = static_cast<int>(program.statements.size());
  MT_ASSIGN_OR_RETURN(const std::vector<ir::Trace> traces,
                      ir::ParseProgramTrace(request.trace().text(), n));
  v1::ExplainResponse out;
  out.set_legal(true);
  double predicted = 0;
  for (int s = 0; s < n; ++s) {
    absl::StatusOr<v1::ExplainResponse> one =
        Explain(StatementRequestOf(request, program, s, traces[s]));
    if (!one.ok()) {
      return absl::Status(one.status().code(),
                          absl::StrCat("statement ", s + 1, ": ", one.status().message()));
    }
    out.set_legal(out.legal() && one->legal() && one->lowering_error().empty());
    predicted += one->predicted_s();
    out.set_costed_with(one->costed_with());
    out.add_statement_exprs(program.statements[s].ToString());
    *out.add_statements() = *std::move(one);
  }
  if (!out.legal()) return out;
  std::vector<ir::Computation> bases;
  for (int s = 0; s < n; ++s) {
    const v1::ExplainRequest one = StatementRequestOf(request, program, s, traces[s]);
    MT_ASSIGN_OR_RETURN(ir::Computation base, BaseComputation(one.problem(), one.mesh()));
    bases.push_back(std::move(base));
  }
  MT_ASSIGN_OR_RETURN(const ChosenProfile chosen,
                      ChooseProfile(request.profile() == "default" ? "" : request.profile(),
                                    bases[0].mesh().Ranks(), FirstUse::kBuiltin));
  for (int s = 0; s < n; ++s) {
    std::set<std::string> read;  // a tensor read twice moves once
    for (const ir::TensorAccess& a : program.statements[s].operands) {
      const int producer = program.Producer(a.tensor);
      if (producer < 0 || producer >= s || !read.insert(a.tensor).second) continue;
      MT_ASSIGN_OR_RETURN(v1::ProgramResult::Move m,
                          MoveOf(program, bases, traces, chosen.params, a.tensor, producer, s));
      predicted += m.predicted_s();
      *out.add_moves() = std::move(m);
    }
  }
  out.set_predicted_s(predicted);
  return out;
}

std::string ProgramExplainText(const v1::ExplainResponse& response) {
  std::string out;
  for (int s = 0; s < response.statements_size(); ++s) {
    absl::StrAppend(&out, "== statement ", s + 1, ": ", response.statement_exprs(s), "\n",
                    ExplainText(response.statements(s)), "\n");
  }
  for (const v1::ProgramResult::Move& m : response.moves()) {
    absl::StrAppend(
        &out, m.in_place()
                  ? absl::StrFormat("between: %s: statement %d reads statement %d's shards in "
                                    "place (nothing moves)\n",
                                    m.tensor(), m.consumer(), m.producer())
                  : absl::StrFormat("between: %s: moved from statement %d to %d, %s sent by the "
                                    "busiest rank, predicted %.6g s\n",
                                    m.tensor(), m.producer(), m.consumer(),
                                    base::FormatBytes(m.bytes_max()), m.predicted_s()));
  }
  absl::StrAppend(&out, response.legal()
                            ? absl::StrFormat("program: legal, predicted %.6g s (%s)\n",
                                              response.predicted_s(), response.costed_with())
                            : "program: not legal (see the statements above)\n");
  return out;
}

}  // namespace

absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request) {
  if (ir::HasSeveralStatements(request.problem().expr())) return ExplainProgram(request);
  MT_ASSIGN_OR_RETURN(ir::Computation base, BaseComputation(request.problem(), request.mesh()));
  MT_ASSIGN_OR_RETURN(ir::Trace trace, ParseTraceMessage(request.trace()));
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, codegen::Prepare(base, trace));
  const ir::Verdict& verdict = prepared.verdict;
  v1::ExplainResponse out;
  out.set_legal(verdict.legal);
  for (const ir::Rejection& r : verdict.reasons) {
    v1::Rejection* p = out.add_reasons();
    p->set_code(r.code);
    p->set_message(r.message);
  }
  const ir::Computation& c = verdict.computation;
  out.set_schedule(c.ScheduleString());
  for (const std::string& t : c.problem().Tensors())
    (*out.mutable_shardings())[t] = c.LayoutString(t);
  if (!verdict.legal) return out;
  const absl::StatusOr<codegen::Program>& program = prepared.program;
  if (!program.ok()) {
    out.set_lowering_error(std::string(program.status().message()));
    return out;
  }
  for (const codegen::TransferSummary& s : codegen::Summarize(*program)) {
    v1::TransferInfo* t = out.add_transfers();
    t->set_tensor(s.tensor);
    t->set_loop(s.loop);
    t->set_pattern(s.pattern.Name());
    for (int a : s.pattern.axes) t->add_axes(a);
    t->set_shift(s.pattern.shift);
    t->set_bytes_per_rank(static_cast<double>(s.bytes_per_rank));
    t->set_prefetch(s.prefetch);
  }
  out.set_pseudocode(codegen::PseudoCode(*program));
  MT_ASSIGN_OR_RETURN(const ChosenProfile chosen,
                      ChooseProfile(request.profile() == "default" ? "" : request.profile(),
                                    program->Ranks(), FirstUse::kBuiltin));
  out.set_predicted_s(
      search::EstimateCost(*program, search::ForRanks(chosen.params, program->Ranks())).seconds);
  out.set_costed_with(chosen.name.empty() ? "built-in machine numbers"
                                          : absl::StrCat("hardware profile \"", chosen.name, "\""));
  return out;
}

absl::StatusOr<codegen::Program> LowerTrace(const v1::Problem& problem, const v1::Mesh& mesh,
                                            const v1::Trace& trace) {
  MT_ASSIGN_OR_RETURN(ir::Computation base, BaseComputation(problem, mesh));
  MT_ASSIGN_OR_RETURN(ir::Trace parsed, ParseTraceMessage(trace));
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, codegen::Prepare(base, parsed));
  if (!prepared.verdict.legal) {
    const ir::Rejection& first = prepared.verdict.reasons[0];
    return absl::InvalidArgumentError(
        absl::StrCat("the schedule is illegal: [", first.code, "] ", first.message));
  }
  return std::move(prepared.program);
}

absl::StatusOr<PreparedRun> PrepareRun(const v1::ExplainRequest& request) {
  MT_ASSIGN_OR_RETURN(ir::Computation base, BaseComputation(request.problem(), request.mesh()));
  MT_ASSIGN_OR_RETURN(ir::Trace trace, ParseTraceMessage(request.trace()));
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, codegen::Prepare(base, trace));
  if (!prepared.verdict.legal) {
    const ir::Rejection& first = prepared.verdict.reasons[0];
    return absl::InvalidArgumentError(
        absl::StrCat("the schedule is illegal: [", first.code, "] ", first.message));
  }
  if (!prepared.program.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the schedule is refused: ", prepared.program.status().message()));
  }
  PreparedRun out;
  out.spec.problem = runtime::ProblemSpecOf(base.problem());
  out.spec.program = *std::move(prepared.program);
  out.spec.ranks = base.mesh().Ranks();
  out.footprint = prepared.footprint;
  out.computation = std::move(prepared.verdict.computation);
  return out;
}

namespace {

// The response of a request whose answer is the library (request.library(), prow > 0):
// ScaLAPACK's GEMM on the problem's tensors in cyclic(NB,NB), no trace lowered.
absl::StatusOr<v1::CodegenResponse> LibraryCodegen(const v1::CodegenRequest& request) {
  const v1::LibraryRun& library = request.library();
  MT_ASSIGN_OR_RETURN(const ir::Problem problem, ProblemOf(request.problem()));
  const std::optional<runtime::GemmForm> form =
      runtime::GemmFormOf(runtime::ProblemSpecOf(problem));
  if (!form) {
    return absl::InvalidArgumentError(
        absl::StrCat("the library serves problems of matmul form only; ", problem.ToString(),
                     " is not one (C[i,j] = or += A * B of two matrices with one index summed)"));
  }
  codegen::LibraryKernelSpec spec;
  spec.dtype_bytes = static_cast<int>(ir::DTypeBytes(problem.dtype));
  const std::string routine = codegen::LibraryRoutine(spec);
  if (!library.library().empty() && library.library() != routine) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the library '", base::Excerpt(library.library()), "' does not serve the ",
        ir::DTypeName(problem.dtype), " problem ", problem.ToString(), " (", routine, " does)"));
  }
  if (library.pcol() < 1 || library.nb() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the library's grid ", library.prow(), "x",
                                                   library.pcol(), ", NB ", library.nb(),
                                                   " is not a grid and block size"));
  }
  const int64_t grid_ranks = int64_t{library.prow()} * library.pcol();
  if (grid_ranks > ir::kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat("the library's grid ", library.prow(), "x",
                                                   library.pcol(), " has more than ", ir::kMaxRanks,
                                                   " ranks"));
  }
  std::string where = absl::StrCat(grid_ranks, " ranks");
  if (HasMeshAxes(request.mesh())) {
    MT_ASSIGN_OR_RETURN(const ir::Mesh mesh, MeshAxesOf(request.mesh()));
    if (mesh.Ranks() != grid_ranks) {
      return absl::InvalidArgumentError(
          absl::StrCat("the library's grid ", library.prow(), "x", library.pcol(), " has ",
                       grid_ranks, " ranks; the mesh ", mesh.ToString(), " has ", mesh.Ranks()));
    }
    where = absl::StrCat("mesh ", mesh.ToString());
  }
  MT_RETURN_IF_ERROR(runtime::CheckLibraryExtents(*form));
  // The kernel takes every tensor in cyclic(NB,NB): a problem may give that layout, no other.
  const std::string cyclic = absl::StrCat("cyclic(", library.nb(), ",", library.nb(), ")");
  for (const auto& [tensor, layout] : problem.layouts) {
    if (layout.ToString() != cyclic) {
      return absl::InvalidArgumentError(absl::StrCat("the library's kernel takes every tensor in ",
                                                     cyclic, "; the problem gives ", tensor, "=",
                                                     layout.ToString()));
    }
  }
  spec.c = form->c;
  spec.a = form->a;
  spec.b = form->b;
  spec.b_first = problem.operands[0].tensor == form->b;
  spec.m = form->m;
  spec.n = form->n;
  spec.k = form->k;
  spec.a_transposed = form->a_transposed;
  spec.b_transposed = form->b_transposed;
  spec.accumulate = form->accumulate;
  spec.prow = library.prow();
  spec.pcol = library.pcol();
  spec.nb = library.nb();
  const std::string title = absl::StrCat(
      problem.ToString(), " with ", problem.ExtentsString(), " (", ir::DTypeName(problem.dtype),
      ") on ", where, "\nScaLAPACK ", routine, " on a ", library.prow(), "x", library.pcol(),
      " grid, NB ", library.nb(), " (every tensor in ", cyclic, ")");
  v1::CodegenResponse out;
  if (request.main()) {
    out.set_source(codegen::EmitLibraryCpp(problem, spec, title));
    return out;
  }
  return CallableResponse(request, [&](const std::string& name) {
    return codegen::EmitLibraryCallable(spec, title, name, request.header_name());
  });
}

}  // namespace

absl::StatusOr<v1::CodegenResponse> Codegen(const v1::CodegenRequest& request) {
  if (request.has_library() && request.library().prow() > 0) return LibraryCodegen(request);
  if (ir::HasSeveralStatements(request.problem().expr())) return ProgramCodegen(request);
  MT_ASSIGN_OR_RETURN(codegen::Program program,
                      LowerTrace(request.problem(), request.mesh(), request.trace()));
  MT_ASSIGN_OR_RETURN(ir::Computation base, BaseComputation(request.problem(), request.mesh()));
  MT_ASSIGN_OR_RETURN(ir::Trace trace, ParseTraceMessage(request.trace()));
  const std::string title =
      absl::StrCat(base.problem().ToString(), " with ", base.problem().ExtentsString(), " (",
                   ir::DTypeName(base.problem().dtype), ") on mesh ", base.mesh().ToString(),
                   "\ntrace:\n", trace.ToString());
  v1::CodegenResponse out;
  if (request.main()) {
    out.set_source(codegen::EmitCpp(base.problem(), program, title));
    return out;
  }
  return CallableResponse(request, [&](const std::string& name) {
    return codegen::EmitCallable(program, title, name, request.header_name());
  });
}

std::string ExplainText(const v1::ExplainResponse& response) {
  if (response.statements_size() > 0) return ProgramExplainText(response);
  std::string s = absl::StrCat("verdict: ", response.legal() ? "legal" : "illegal", "\n");
  if (response.reasons_size() > 0) {
    s += "reasons:\n";
    for (const v1::Rejection& r : response.reasons())
      absl::StrAppend(&s, "  [", r.code(), "] ", r.message(), "\n");
  }
  absl::StrAppend(&s, "schedule: ", response.schedule(), "\nshardings:\n");
  const std::map<std::string, std::string> sorted(response.shardings().begin(),
                                                  response.shardings().end());
  for (const auto& [tensor, layout] : sorted) absl::StrAppend(&s, "  ", tensor, ": ", layout, "\n");
  if (response.transfers_size() > 0) s += "transfers:\n";
  for (const v1::TransferInfo& t : response.transfers()) {
    if (t.loop() == "layout" || t.loop() == "layout-out") {
      absl::StrAppend(&s, "  ", t.tensor(), " at ", t.loop(), ": all-to-all ",
                      t.loop() == "layout" ? "from its given layout into the shards"
                                           : "from the shards into its given layout",
                      ", up to ", base::FormatBytes(static_cast<int64_t>(t.bytes_per_rank())),
                      " per rank\n");
      continue;
    }
    const bool ring = t.pattern() == "Shift" || t.pattern() == "RingReduce";
    absl::StrAppend(&s, "  ", t.tensor(), " at ", t.loop(), ": ", t.pattern(), " axes [",
                    absl::StrJoin(t.axes(), ", "), "]",
                    ring ? absl::StrCat(" shift ", t.shift()) : "", ", ",
                    base::FormatBytes(static_cast<int64_t>(t.bytes_per_rank())), " per rank",
                    t.prefetch() != 0 ? ", prefetched (two buffers)" : "", "\n");
  }
  if (!response.lowering_error().empty())
    absl::StrAppend(&s, "not lowered: ", response.lowering_error(), "\n");
  if (!response.costed_with().empty()) {
    absl::StrAppend(&s, "predicted: ", response.predicted_s(), " s (", response.costed_with(),
                    ")\n");
  }
  if (!response.pseudocode().empty()) absl::StrAppend(&s, "program:\n", response.pseudocode());
  return s;
}

}  // namespace meshtune::engine
