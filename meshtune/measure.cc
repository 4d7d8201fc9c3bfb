#include "meshtune/measure.h"

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/records.h"
#include "engine/tune/tune_messages.h"
#include "engine/tune/tune_run.h"
#include "engine/wisdom.h"
#include "meshtune/comm_runner.h"
#include "storage/tuning_db.h"

namespace meshtune {
namespace {

// Every record of `db`, in canonical names (what `records export` writes).
absl::StatusOr<std::vector<v1::Record>> AllRecords(storage::TuningDb& db) {
  std::vector<v1::Record> records;
  v1::ListRecordsRequest request;
  request.set_page_size(storage::kMaxListLimit);
  do {
    absl::StatusOr<v1::ListRecordsResponse> page = engine::ListRecords(db, request);
    if (!page.ok()) return page.status();
    records.insert(records.end(), page->records().begin(), page->records().end());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  return records;
}

// `text` as the file `path`, replaced atomically (a temporary file beside it, renamed).
absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("cannot replace wisdom file ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::Record> MeasureOnComm(const v1::TuneRequest& request,
                                         const runtime::ExecOptions& exec,
                                         const std::string& wisdom_file, MPI_Comm comm,
                                         bool allow_library) {
  CommRunner runner(comm, exec, allow_library);  // its destructor releases the serving ranks
  std::unique_ptr<storage::TuningDb> db = storage::NewInMemoryTuningDb();
  if (!wisdom_file.empty() && std::filesystem::exists(wisdom_file)) {
    absl::StatusOr<engine::ImportReport> imported = engine::ImportWisdomFile(*db, wisdom_file);
    if (!imported.ok()) return imported.status();
  }
  absl::StatusOr<engine::PreparedTune> tune = engine::PrepareTune(request);
  if (!tune.ok()) return tune.status();
  std::string store_error;
  absl::StatusOr<v1::TuneResult> result = engine::RunAndStoreTune(
      tune->options, tune->workload, request, runner, {}, db.get(), &store_error);
  runner.Finish();
  if (!result.ok()) return result.status();
  if (!wisdom_file.empty()) {
    absl::StatusOr<std::vector<v1::Record>> records = AllRecords(*db);
    if (!records.ok()) return records.status();
    // As `records export` writes them: each with its lowered program (engine/wisdom.h); one
    // that does not lower here is written without (plans from it lower the trace).
    for (v1::Record& r : *records) engine::AddProgram(&r).IgnoreError();
    absl::Status written =
        WriteFileAtomically(wisdom_file, engine::WisdomText(*std::move(records)));
    if (!written.ok()) return written;
  }
  return result->record();
}

}  // namespace meshtune
