#include "storage/tuning_db.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "ir/mesh.h"
#include "ir/program_trace.h"
#include "ir/trace.h"
#include "storage/home_dir.h"

namespace meshtune::storage {
namespace {

absl::Status CheckSeconds(absl::string_view field, double s) {
  if (!std::isfinite(s) || s < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuning record: ", field, " is ", s, "; it must be finite and >= 0"));
  }
  return absl::OkStatus();
}

// The winner's mesh: axes that `w`'s mesh allows.
absl::Status CheckMesh(const Workload& w, TuningRecord* r) {
  if (r->mesh.empty()) {
    if (w.IsRankCount()) {
      return absl::InvalidArgumentError(absl::StrCat("tuning record: mesh is empty; a record of a ",
                                                     w.MeshText(),
                                                     " workload names the mesh it chose"));
    }
    r->mesh = w.MeshText();
    return absl::OkStatus();
  }
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(r->mesh);
  if (!mesh.ok())
    return absl::InvalidArgumentError(absl::StrCat("tuning record: ", mesh.status().message()));
  r->mesh = mesh->ToString();
  if (w.IsRankCount()) {
    if (mesh->Ranks() != w.ranks) {
      return absl::InvalidArgumentError(absl::StrCat("tuning record: mesh ", r->mesh, " has ",
                                                     mesh->Ranks(), " ranks, not the workload's ",
                                                     w.MeshText()));
    }
  } else if (r->mesh != w.MeshText()) {
    return absl::InvalidArgumentError(absl::StrCat("tuning record: mesh ", r->mesh,
                                                   " is not the workload's mesh ", w.MeshText()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view TimingName(Timing t) {
  switch (t) {
    case Timing::kPaced:
      return "paced";
    case Timing::kMeasured:
      return "measured";
    case Timing::kNone:
      break;
  }
  return "";
}

absl::StatusOr<Timing> ParseTiming(absl::string_view text) {
  if (text.empty()) return Timing::kNone;
  if (text == "paced") return Timing::kPaced;
  if (text == "measured") return Timing::kMeasured;
  return absl::InvalidArgumentError(absl::StrCat("timing \"", absl::CHexEscape(text),
                                                 "\" is not \"measured\", \"paced\" or empty"));
}

std::string DefaultDbPath() {
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && cache[0] == '/') {
    return absl::StrCat(cache, "/meshtune/tuning.db");
  }
  return absl::StrCat(HomeDir(), "/.cache/meshtune/tuning.db");
}

absl::Status CheckRecord(const Workload& w, TuningRecord* r) {
  if (w.fingerprint.empty()) {
    return absl::InvalidArgumentError(
        "tuning record: the workload has no fingerprint (make it with MakeWorkload)");
  }
  if (!r->fingerprint.empty() && r->fingerprint != w.fingerprint) {
    return absl::InvalidArgumentError(absl::StrCat("tuning record: fingerprint ",
                                                   absl::CHexEscape(r->fingerprint),
                                                   " is not the workload's ", w.fingerprint));
  }
  r->fingerprint = w.fingerprint;
  r->canonical_workload = w.canonical;
  // One trace, or a program's: one per statement between lines "---".
  absl::StatusOr<std::vector<ir::Trace>> parts;
  if (w.IsProgram()) {
    parts = ir::ParseProgramTrace(r->trace, static_cast<int>(w.statements.size()));
  } else if (absl::StatusOr<ir::Trace> trace = ir::ParseTrace(r->trace); trace.ok()) {
    parts = std::vector<ir::Trace>{*std::move(trace)};
  } else {
    parts = trace.status();
  }
  if (!parts.ok())
    return absl::InvalidArgumentError(absl::StrCat("tuning record: ", parts.status().message()));
  std::vector<std::string> texts;
  for (const ir::Trace& trace : *parts) {
    if (trace.instructions.empty())
      return absl::InvalidArgumentError("tuning record: the trace has no call");
    texts.push_back(trace.ToString());
  }
  r->trace = absl::StrJoin(texts, "---\n");
  if (absl::Status s = CheckMesh(w, r); !s.ok()) return s;
  if (absl::Status s = CheckSeconds("predicted_s", r->predicted_s); !s.ok()) return s;
  if (r->measured_s.has_value()) {
    if (absl::Status s = CheckSeconds("measured_s", *r->measured_s); !s.ok()) return s;
    if (r->timing == Timing::kNone) r->timing = Timing::kMeasured;
  } else if (r->verified) {
    return absl::InvalidArgumentError("tuning record: verified without measured_s");
  } else if (!r->sample.empty()) {
    return absl::InvalidArgumentError("tuning record: a sample without measured_s");
  } else if (r->timing != Timing::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuning record: timing ", TimingName(r->timing), " without measured_s"));
  }
  for (const std::string& p : r->patterns) {
    if (p.empty() || absl::StrContains(p, '\n')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tuning record: pattern \"", absl::CHexEscape(p), "\" is empty or holds a newline"));
    }
  }
  if (r->tuner_version.empty()) r->tuner_version = kTunerVersion;
  if (r->created_unix_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuning record: created_unix_ms is ", r->created_unix_ms));
  }
  if (r->created_unix_ms == 0) {
    r->created_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  }
  return absl::OkStatus();
}

absl::Status CheckRun(StoredRun* r) {
  if (r->run.empty()) return absl::InvalidArgumentError("a measured run must not be empty");
  if (r->created_unix_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("created_unix_ms ", r->created_unix_ms, " must not be negative"));
  }
  if (r->created_unix_ms == 0) {
    r->created_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  }
  return absl::OkStatus();
}

absl::Status CheckListArguments(int limit, int64_t after_id) {
  if (limit < 1 || after_id < 0) {
    return absl::InvalidArgumentError(absl::StrCat("listing tuning records: limit is ", limit,
                                                   " and after_id ", after_id,
                                                   "; limit must be >= 1 and after_id >= 0"));
  }
  return absl::OkStatus();
}

bool BetterRecord(const TuningRecord& a, const TuningRecord& b) {
  if (a.verified != b.verified) return a.verified;
  if (a.checked.empty() != b.checked.empty()) return !a.checked.empty();
  // Verified (both or neither): a paced time is no measurement, it ranks after measured ones.
  const bool paced_a = a.verified && a.timing != Timing::kMeasured;
  const bool paced_b = b.verified && b.timing != Timing::kMeasured;
  if (paced_a != paced_b) return paced_b;
  const double ta = a.verified ? *a.measured_s : a.predicted_s;
  const double tb = b.verified ? *b.measured_s : b.predicted_s;
  if (ta != tb) return ta < tb;
  return a.id < b.id;
}

absl::StatusOr<std::vector<TuningRecord>> ListAllRecords(TuningDb& db,
                                                         const std::string& fingerprint) {
  std::vector<TuningRecord> all;
  for (int64_t after = 0;;) {
    absl::StatusOr<std::vector<TuningRecord>> page = db.List(fingerprint, kMaxListLimit, after);
    if (!page.ok()) return page.status();
    if (page->empty()) return all;
    after = page->back().id;
    for (TuningRecord& r : *page) all.push_back(std::move(r));
  }
}

}  // namespace meshtune::storage
