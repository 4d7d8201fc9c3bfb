#include "cli/codegen_lookup.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "engine/estimate.h"
#include "engine/wisdom.h"

namespace meshtune::cli {
namespace {

// `text` in single quotes for a POSIX shell (a quote inside as '\'').
std::string SingleQuoted(const std::string& text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// `word` as one shell word: as it is when every character is safe, else in single quotes.
std::string ShellWord(const std::string& word) {
  bool safe = !word.empty();
  for (const char c : word) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string("_-./=,:+@%").find(c) != std::string::npos;
    safe = safe && ok;
  }
  return safe ? word : SingleQuoted(word);
}

// The estimate's request for `workload`.
v1::TuneRequest EstimateRequest(const v1::LookupRequest& workload) {
  v1::TuneRequest request;
  *request.mutable_problem() = workload.problem();
  *request.mutable_mesh() = workload.mesh();
  request.set_ranks(workload.ranks());
  request.set_profile(workload.profile());
  request.set_model_only(true);
  return request;
}

}  // namespace

std::string TuneCommand(const v1::LookupRequest& workload, const std::string& wisdom) {
  const std::string w = ShellWord(wisdom);
  const v1::Problem& p = workload.problem();
  std::string tune = absl::StrCat("meshtune tune --expr ", SingleQuoted(p.expr()), " --extents ",
                                  ShellWord(p.extents()));
  if (!p.dtype().empty() && p.dtype() != "f32")
    absl::StrAppend(&tune, " --dtype ", ShellWord(p.dtype()));
  if (workload.ranks() != 0) {
    absl::StrAppend(&tune, " --ranks ", workload.ranks());
  } else {
    absl::StrAppend(&tune, " --mesh ", ShellWord(workload.mesh().axes()));
  }
  if (!workload.mesh().mem_per_rank().empty())
    absl::StrAppend(&tune, " --mem-per-rank ", ShellWord(workload.mesh().mem_per_rank()));
  if (!workload.profile().empty() && workload.profile() != "default")
    absl::StrAppend(&tune, " --profile ", ShellWord(workload.profile()));
  return absl::StrCat("meshtune records import ", w, " && ", tune, " && meshtune records export > ",
                      w);
}

absl::StatusOr<v1::Record> FindSchedule(const v1::LookupRequest& workload,
                                        const ScheduleSource& source, engine::Backend& backend,
                                        const std::function<void(const std::string&)>& warn) {
  if (!source.lookup) return engine::EstimateWithBuiltinNumbers(EstimateRequest(workload));
  absl::StatusOr<v1::LookupResponse> found =
      source.wisdom.empty() ? backend.Lookup(workload)
                            : engine::LookupInWisdomFile(source.wisdom, workload);
  if (found.ok()) return found->record();
  const bool miss = found.status().code() == absl::StatusCode::kNotFound &&
                    absl::StartsWith(found.status().message(), "no tuning ");  // record or database
  if (!miss) return found.status();
  if (!source.estimate) {
    if (source.wisdom.empty()) return found.status();
    return absl::NotFoundError(
        absl::StrCat(found.status().message(), "; run: ", TuneCommand(workload, source.wisdom)));
  }
  if (warn) {
    warn(absl::StrCat(absl::StripSuffix(found.status().message(), "; tune it first"),
                      "; --estimate: the cost model's best with built-in machine numbers"));
  }
  return engine::EstimateWithBuiltinNumbers(EstimateRequest(workload));
}

}  // namespace meshtune::cli
