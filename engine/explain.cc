#include "engine/explain.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/bytes.h"
#include "base/status_macros.h"
#include "codegen/emit/pseudocode.h"
#include "codegen/pipeline.h"
#include "cost/cost_model.h"
#include "cost/cost_params.h"
#include "engine/tune/machine_profile.h"
#include "ir/statement_program.h"
#include "search/program_layouts.h"

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
                                               const cost::CostParams& params,
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

// A statement's `trace` on its base computation explained: its verdict and reasons,
// schedule and shardings, and when legal and lowered its transfers, pseudo-code and the time
// the model predicts with the hardware profile `profile` ("" or "default": the built-in
// numbers).
absl::StatusOr<v1::ExplainResponse> ExplainStatement(const ir::Computation& base,
                                                     const ir::Trace& trace,
                                                     const std::string& profile) {
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
  for (const codegen::TransferSummary& t : codegen::Summarize(*program)) {
    v1::TransferInfo* info = out.add_transfers();
    info->set_tensor(t.tensor);
    info->set_loop(t.loop);
    info->set_pattern(t.pattern.Name());
    for (int a : t.pattern.axes) info->add_axes(a);
    info->set_shift(t.pattern.shift);
    info->set_bytes_per_rank(static_cast<double>(t.bytes_per_rank));
    info->set_prefetch(t.prefetch);
  }
  out.set_pseudocode(codegen::PseudoCode(*program));
  MT_ASSIGN_OR_RETURN(
      const ChosenProfile chosen,
      ChooseProfile(profile == "default" ? "" : profile, program->Ranks(), FirstUse::kBuiltin));
  out.set_predicted_s(
      cost::EstimateCost(*program, cost::ForRanks(chosen.params, program->Ranks())).seconds);
  out.set_costed_with(chosen.name.empty() ? "built-in machine numbers"
                                          : absl::StrCat("hardware profile \"", chosen.name, "\""));
  return out;
}

// A program of several statements explained: each statement as one is (its errors after
// "statement N: "), then the moves of its intermediates between them and the program's
// predicted time (the sum), when every statement is legal and lowered.
absl::StatusOr<v1::ExplainResponse> ExplainProgram(const ScheduleJob& job,
                                                   const std::string& profile) {
  const ir::StatementProgram& program = job.program;
  const int n = static_cast<int>(program.statements.size());
  v1::ExplainResponse out;
  out.set_legal(true);
  double predicted = 0;
  std::vector<ir::Computation> bases;  // each statement's, judged and then moved between
  for (int s = 0; s < n; ++s) {
    absl::StatusOr<ir::Computation> base = StatementBase(job, s);
    absl::StatusOr<v1::ExplainResponse> one =
        base.ok() ? ExplainStatement(*base, job.traces[s], profile)
                  : absl::StatusOr<v1::ExplainResponse>(base.status());
    if (!one.ok()) {
      return absl::Status(one.status().code(),
                          absl::StrCat("statement ", s + 1, ": ", one.status().message()));
    }
    out.set_legal(out.legal() && one->legal() && one->lowering_error().empty());
    predicted += one->predicted_s();
    out.set_costed_with(one->costed_with());
    out.add_statement_exprs(program.statements[s].ToString());
    *out.add_statements() = *std::move(one);
    bases.push_back(*std::move(base));
  }
  if (!out.legal()) return out;
  MT_ASSIGN_OR_RETURN(
      const ChosenProfile chosen,
      ChooseProfile(profile == "default" ? "" : profile, job.mesh.Ranks(), FirstUse::kBuiltin));
  for (int s = 0; s < n; ++s) {
    std::set<std::string> read;  // a tensor read twice moves once
    for (const ir::TensorAccess& a : program.statements[s].operands) {
      const int producer = program.Producer(a.tensor);
      if (producer < 0 || producer >= s || !read.insert(a.tensor).second) continue;
      MT_ASSIGN_OR_RETURN(v1::ProgramResult::Move m,
                          MoveOf(program, bases, job.traces, chosen.params, a.tensor, producer, s));
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

absl::StatusOr<v1::ExplainResponse> Explain(const ScheduleJob& job, const std::string& profile) {
  if (!job.program.single()) return ExplainProgram(job, profile);
  MT_ASSIGN_OR_RETURN(const ir::Computation base, StatementBase(job, 0));
  return ExplainStatement(base, job.traces[0], profile);
}

absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request) {
  MT_ASSIGN_OR_RETURN(const ScheduleJob job,
                      JobOf(request.problem(), request.mesh(), request.trace()));
  return Explain(job, request.profile());
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
