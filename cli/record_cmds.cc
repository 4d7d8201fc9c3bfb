#include "cli/record_cmds.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/json.h"
#include "cli/cli_io.h"
#include "cli/record_output.h"
#include "engine/exit_codes.h"
#include "engine/tune_options.h"

namespace meshtune::cli {

namespace {

constexpr int kMaxLimit = 1000;

void FillProblem(const WorkloadFlags& f, v1::Problem* p) {
  p->set_expr(f.expr);
  p->set_extents(f.extents);
  p->set_dtype(f.dtype);
}

// The CLI's own check of the workload flags (the engine's messages name fields, not flags).
absl::Status CheckWorkload(const WorkloadFlags& f) {
  if (f.expr.empty() || f.extents.empty()) {
    return absl::InvalidArgumentError(
        "give the problem: --expr (e.g. 'C[m,n] += A[m,k] * B[k,n]') and --extents");
  }
  if (f.mesh.empty() == (f.ranks == 0)) {
    return absl::InvalidArgumentError(
        "give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)");
  }
  return absl::OkStatus();
}

void PrintRecord(const v1::Record& record, bool json, std::ostream& out) {
  out << (json ? base::ToJsonLine(record) + "\n" : RecordText(record));
}

}  // namespace

int RunLookup(const WorkloadFlags& flags, bool json, engine::Backend& backend, std::ostream& out,
              std::ostream& err) {
  if (absl::Status s = CheckWorkload(flags); !s.ok()) return Fail(s, err);
  v1::LookupRequest request;
  FillProblem(flags, request.mutable_problem());
  request.mutable_mesh()->set_axes(flags.mesh);
  request.mutable_mesh()->set_mem_per_rank(flags.mem_per_rank);
  request.set_ranks(flags.ranks);
  request.set_profile(flags.profile);
  if (flags.same_machine) request.set_machine(engine::ProfileMachine(flags.profile));
  request.set_nearest(flags.nearest);
  absl::StatusOr<v1::LookupResponse> response = backend.Lookup(request);
  if (!response.ok()) return Fail(response.status(), err);
  if (flags.nearest && json) {
    out << base::ToJsonLine(*response) << "\n";
  } else if (response->transferred()) {
    out << TransferredText(*response);
  } else {
    PrintRecord(response->record(), json, out);
  }
  return engine::kExitOk;
}

int RunRecords(const RecordsFlags& flags, engine::Backend& backend, std::ostream& out,
               std::ostream& err) {
  const WorkloadFlags& w = flags.workload;
  const bool filtered = !w.expr.empty() || !w.extents.empty();
  if (flags.id != 0) {
    if (flags.id < 0)
      return Fail(
          absl::InvalidArgumentError(absl::StrCat("--id ", flags.id, " is not a record id")), err);
    v1::GetRecordRequest request;
    request.set_id(flags.id);
    if (filtered) {
      if (w.expr.empty() || w.extents.empty()) {
        return Fail(absl::InvalidArgumentError(
                        "give both --expr and --extents to name the record's problem"),
                    err);
      }
      FillProblem(w, request.mutable_problem());
    }
    absl::StatusOr<v1::Record> record = backend.GetRecord(request);
    if (!record.ok()) return Fail(record.status(), err);
    PrintRecord(*record, flags.json, out);
    return engine::kExitOk;
  }
  if (flags.limit < 1 || flags.limit > kMaxLimit) {
    return Fail(absl::InvalidArgumentError(
                    absl::StrCat("--limit ", flags.limit, " is out of range: 1 to ", kMaxLimit)),
                err);
  }
  if (flags.after < 0) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("--after ", flags.after, " is not a record id")),
        err);
  }
  v1::ListRecordsRequest request;
  if (filtered) {
    if (absl::Status s = CheckWorkload(w); !s.ok()) return Fail(s, err);
    FillProblem(w, request.mutable_problem());
    request.mutable_mesh()->set_axes(w.mesh);
    request.set_ranks(w.ranks);
    request.set_profile(w.profile);
  }
  request.set_page_size(flags.limit);
  // ListRecords' page tokens are record ids (records.h): a page starts after that id.
  if (flags.after > 0) request.set_page_token(absl::StrCat(flags.after));
  absl::StatusOr<v1::ListRecordsResponse> page = backend.ListRecords(request);
  if (!page.ok()) return Fail(page.status(), err);
  for (const v1::Record& r : page->records())
    out << (flags.json ? base::ToJsonLine(r) : RecordLine(r)) << "\n";
  if (!page->next_page_token().empty()) {
    err << "meshtune: more records follow: add --after " << page->next_page_token() << "\n";
  }
  return engine::kExitOk;
}

}  // namespace meshtune::cli
