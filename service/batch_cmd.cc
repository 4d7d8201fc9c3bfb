#include "service/batch_cmd.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "ir/excerpt.h"
#include "google/protobuf/util/json_util.h"
#include "service/cli_io.h"
#include "service/exit_codes.h"
#include "service/tune_output.h"

namespace meshtune::service {

namespace {

std::string ErrorLine(int line, const std::string& message) {
  return absl::StrCat("{\"line\": ", line, ", \"error\": ", JsonQuote(message), "}");
}

}  // namespace

int RunBatch(const BatchFlags& flags, Backend& backend, std::ostream& out, std::ostream& err) {
  std::ifstream file;
  if (flags.path != "-") {
    file.open(flags.path);
    if (!file) {
      err << "meshtune: cannot read batch file '" << ir::Excerpt(flags.path) << "': " << std::strerror(errno)
          << "\n";
      return kExitBadInput;
    }
  }
  std::istream& in = flags.path == "-" ? std::cin : file;
  int number = 0, requests = 0, failed = 0;
  std::string unavailable;  // once the daemon is gone, why: the rest is not sent
  std::string text;
  while (std::getline(in, text)) {
    ++number;
    const absl::string_view line = absl::StripAsciiWhitespace(text);
    if (line.empty() || line[0] == '#') continue;
    ++requests;
    if (!unavailable.empty()) {
      ++failed;
      out << ErrorLine(number, absl::StrCat("not sent: ", unavailable)) << std::endl;
      continue;
    }
    v1::TuneRequest request;
    const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(line), &request);
    if (!parsed.ok()) {
      ++failed;
      // protobuf's message may go on with a picture of the input: its first line says it.
      const std::string message(parsed.message().data(), parsed.message().size());
      out << ErrorLine(number, absl::StrCat("not a meshtune.v1.TuneRequest in JSON: ",
                                            message.substr(0, message.find('\n'))))
          << std::endl;
      continue;
    }
    if (flags.model_only) request.set_model_only(true);
    bool drew = false;
    TuneProgressFn progress;
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
      if (result.status().code() == absl::StatusCode::kUnavailable) unavailable = std::string(result.status().message());
      ++failed;
      out << ErrorLine(number, std::string(result.status().message())) << std::endl;
      continue;
    }
    if (result->measurements_size() > 0 && !result->record().verified()) ++failed;
    out << "{\"line\": " << number << ", \"result\": " << ToJson(*result) << "}" << std::endl;
  }
  if (failed > 0) {
    err << "meshtune: " << failed << " of " << requests << " requests failed\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace meshtune::service
