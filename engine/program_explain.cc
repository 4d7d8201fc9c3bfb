#include "engine/program_explain.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/bytes.h"
#include "base/status_macros.h"
#include "engine/explain.h"
#include "engine/machine_profile.h"
#include "engine/requests.h"
#include "ir/program_trace.h"
#include "ir/statement_program.h"
#include "search/program_layouts.h"

namespace meshtune::engine {

namespace {

// Statement `s` of `program` as a request of its own, with trace `trace`.
v1::ExplainRequest StatementRequest(const v1::ExplainRequest& request,
                                    const ir::StatementProgram& program, int s,
                                    const ir::Trace& trace) {
  v1::ExplainRequest one = request;
  v1::Problem& p = *one.mutable_problem();
  p.set_expr(program.statements[s].ToString());
  p.set_extents(program.statements[s].ExtentsString());
  one.mutable_trace()->set_text(trace.ToString());
  return one;
}

// The move of `tensor` from statement `producer` to `consumer` under their traces.
absl::StatusOr<v1::ProgramResult::Move> MoveOf(const v1::ExplainRequest& request,
                                               const ir::StatementProgram& program,
                                               const std::vector<ir::Trace>& traces,
                                               const std::string& tensor, int producer,
                                               int consumer) {
  std::vector<std::vector<runtime::Box>> boxes;
  ir::Mesh mesh;
  for (int s : {producer, consumer}) {
    const v1::ExplainRequest one = StatementRequest(request, program, s, traces[s]);
    MT_ASSIGN_OR_RETURN(ir::Computation base, BaseComputation(one.problem(), one.mesh()));
    mesh = base.mesh();
    MT_ASSIGN_OR_RETURN(std::vector<runtime::Box> b, search::HeldBoxes(base, traces[s], tensor));
    boxes.push_back(std::move(b));
  }
  MT_ASSIGN_OR_RETURN(const ChosenProfile chosen,
                      ChooseProfile(request.profile() == "default" ? "" : request.profile(),
                                    mesh.Ranks(), FirstUse::kBuiltin));
  MT_ASSIGN_OR_RETURN(const search::MoveCost cost,
                      search::CostMove(program.Shape(tensor), ir::DTypeBytes(program.dtype), mesh,
                                       boxes[0], boxes[1], chosen.params));
  v1::ProgramResult::Move m;
  m.set_tensor(tensor);
  m.set_producer(producer + 1);
  m.set_consumer(consumer + 1);
  m.set_in_place(cost.in_place);
  m.set_bytes_max(cost.bytes_max);
  m.set_predicted_s(cost.seconds);
  return m;
}

}  // namespace

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
        Explain(StatementRequest(request, program, s, traces[s]));
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
  for (int s = 0; s < n && out.legal(); ++s) {
    for (const ir::TensorAccess& a : program.statements[s].operands) {
      const int producer = program.Producer(a.tensor);
      if (producer < 0 || producer >= s) continue;
      MT_ASSIGN_OR_RETURN(v1::ProgramResult::Move m,
                          MoveOf(request, program, traces, a.tensor, producer, s));
      predicted += m.predicted_s();
      *out.add_moves() = std::move(m);
    }
  }
  if (out.legal()) out.set_predicted_s(predicted);
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

}  // namespace meshtune::engine
