#include "cli/batch_cmd.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "base/json.h"
#include "cli/flag_groups.h"
#include "cli/tune_output.h"
#include "engine/exit_codes.h"
#include "runtime/launch/launcher.h"

namespace meshtune::cli {

namespace {

// A TuneRequest's text fields are a few KB at most: a longer line is not one.
constexpr size_t kMaxLineBytes = 1 << 20;

std::string ErrorLine(int line, const std::string& message) {
  v1::BatchLine out;
  out.set_line(line);
  out.set_error(message);
  return base::ToJsonLine(out);
}

std::string ResultLine(int line, const v1::TuneResult& result) {
  v1::BatchLine out;
  out.set_line(line);
  *out.mutable_result() = result;
  return base::ToJsonLine(out);
}

// Opens the batch file (flags.path, "-" for stdin) into `file`. kExitBadInput, with the
// message on `err`, when it is a directory or cannot be read.
std::optional<int> OpenBatchFile(const std::string& path, std::ifstream& file, std::ostream& err) {
  if (path == "-") return std::nullopt;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    err << "meshtune: cannot read batch file '" << base::Excerpt(path, base::kMaxPathExcerpt)
        << "': it is a directory\n";
    return engine::kExitBadInput;
  }
  file.open(path);
  if (!file) {
    const int error = errno;
    err << "meshtune: cannot read batch file '" << base::Excerpt(path, base::kMaxPathExcerpt)
        << "': " << std::strerror(error) << "\n";
    return engine::kExitBadInput;
  }
  return std::nullopt;
}

// What one request line produced: its BatchLine in JSON, whether it failed, whether the
// batch stops after it (interrupted by SIGINT/SIGTERM).
struct LineOutcome {
  std::string json;
  bool failed = false;
  bool stop = false;
};

// Runs request line `number` (not blank, not a comment) on `backend`. Once the daemon is
// unreachable, `unavailable` holds why and later lines are not sent.
LineOutcome RunLine(absl::string_view line, int number, const BatchFlags& flags,
                    engine::Backend& backend, std::string& unavailable, std::ostream& err) {
  if (line.size() > kMaxLineBytes) {
    return {ErrorLine(number, absl::StrCat("the line is ", line.size(),
                                           " bytes long; the limit is ", kMaxLineBytes, " bytes")),
            true};
  }
  if (!unavailable.empty())
    return {ErrorLine(number, absl::StrCat("not sent: ", unavailable)), true};
  v1::TuneRequest request;
  const absl::Status parsed = base::FromJson(line, &request);
  if (!parsed.ok()) {
    // protobuf's message may go on with a picture of the input: its first line says it.
    const std::string message(parsed.message());
    return {ErrorLine(number, absl::StrCat("not a meshtune.v1.TuneRequest in JSON: ",
                                           base::Excerpt(message.substr(0, message.find('\n')),
                                                         4 * base::kMaxExcerpt))),
            true};
  }
  if (flags.model_only) request.set_model_only(true);
  if (flags.no_calibrate) request.set_no_calibrate(true);
  bool drew = false;
  engine::TuneProgressFn progress;
  if (flags.progress) {
    progress = [&](const v1::TuneProgress& p) {
      err << "\r\033[K"
          << "line " << number << ": " << TuneProgressText(p) << std::flush;
      drew = true;
    };
  }
  absl::StatusOr<v1::TuneResult> result = backend.Tune(request, progress);
  if (drew) err << "\r\033[K" << std::flush;
  if (!result.ok()) {
    // The daemon went away (or never answered): every later line gets its error line too.
    if (absl::IsUnavailable(result.status())) unavailable = std::string(result.status().message());
    // Interrupted (SIGINT/SIGTERM stopped this tune's search or job): the rest is not run.
    return {ErrorLine(number, std::string(result.status().message())), true,
            absl::IsCancelled(result.status())};
  }
  return {ResultLine(number, *result),
          result->measurements_size() > 0 && !result->record().verified()};
}

}  // namespace

int RunBatch(const BatchFlags& flags, engine::Backend& backend, std::ostream& out,
             std::ostream& err) {
  std::ifstream file;
  if (std::optional<int> bad = OpenBatchFile(flags.path, file, err)) return *bad;
  std::istream& in = flags.path == "-" ? std::cin : file;
  int number = 0, requests = 0, failed = 0;
  std::string unavailable;  // once the daemon is gone, why: the rest is not sent
  std::string text;
  while (std::getline(in, text)) {
    ++number;
    const absl::string_view line = absl::StripAsciiWhitespace(text);
    if (line.empty() || line[0] == '#') continue;
    ++requests;
    const LineOutcome outcome = RunLine(line, number, flags, backend, unavailable, err);
    if (outcome.failed) ++failed;
    // Once `out` cannot be written, the rest of the batch would tune for nobody.
    errno = 0;
    out << outcome.json << std::endl;
    if (!out) {
      err << "meshtune: cannot write to standard output: "
          << (errno != 0 ? std::strerror(errno) : "a write failed") << "\n";
      return engine::kExitFailed;
    }
    if (outcome.stop) break;
  }
  if (in.bad()) {
    err << "meshtune: error reading batch file '"
        << base::Excerpt(flags.path, base::kMaxPathExcerpt) << "' after line " << number << "\n";
    return engine::kExitFailed;
  }
  if (failed > 0) {
    err << "meshtune: " << failed << " of " << requests << " requests failed\n";
    return engine::kExitFailed;
  }
  return engine::kExitOk;
}

Command AddBatchCommand(CLI::App& app) {
  struct State {
    BatchFlags flags;
    TargetFlags target;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd =
      app.add_subcommand("batch", "run the tunes of a JSON-lines file of meshtune.v1.TuneRequest");
  cmd->add_option("file", state->flags.path, "JSON-lines file ('-' for stdin)")->required();
  cmd->add_flag("--model-only", state->flags.model_only,
                "measure nothing in any request: the cost model's best");
  AddNoCalibrateFlag(cmd, &state->flags.no_calibrate);
  state->target.Add(cmd, TargetUse::kDatabase);
  return {cmd, [state] {
            // In this process: the job of a measurement is stopped by SIGINT and SIGTERM.
            if (state->target.server.empty()) runtime::InstallStopSignalHandlers();
            state->flags.progress = isatty(STDERR_FILENO) != 0;
            return RunBatch(state->flags, *state->target.Make(), std::cout, std::cerr);
          }};
}

}  // namespace meshtune::cli
