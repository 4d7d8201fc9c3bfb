#include "service/explain.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "ir/verdict.h"
#include "service/requests.h"

namespace meshtune::service {

absl::StatusOr<v1::ExplainResponse> Explain(const v1::ExplainRequest& request) {
  MT_ASSIGN_OR_RETURN(ir::Computation base, BaseComputation(request.problem(), request.mesh()));
  MT_ASSIGN_OR_RETURN(ir::Trace trace, ParseTraceMessage(request.trace()));
  MT_ASSIGN_OR_RETURN(ir::Verdict verdict, ir::Judge(base, trace));
  v1::ExplainResponse out;
  out.set_legal(verdict.legal);
  for (const ir::Rejection& r : verdict.reasons) {
    v1::Rejection* p = out.add_reasons();
    p->set_code(r.code);
    p->set_message(r.message);
  }
  const ir::Computation& c = verdict.computation;
  out.set_schedule(c.ScheduleString());
  for (const std::string& t : c.problem().Tensors()) (*out.mutable_shardings())[t] = c.LayoutString(t);
  return out;
}

std::string ExplainText(const v1::ExplainResponse& response) {
  std::string s = absl::StrCat("verdict: ", response.legal() ? "legal" : "illegal", "\n");
  if (response.reasons_size() > 0) {
    s += "reasons:\n";
    for (const v1::Rejection& r : response.reasons()) absl::StrAppend(&s, "  [", r.code(), "] ", r.message(), "\n");
  }
  absl::StrAppend(&s, "schedule: ", response.schedule(), "\nshardings:\n");
  const std::map<std::string, std::string> sorted(response.shardings().begin(),
                                                  response.shardings().end());
  for (const auto& [tensor, layout] : sorted) absl::StrAppend(&s, "  ", tensor, ": ", layout, "\n");
  return s;
}

}  // namespace meshtune::service
