#include "service/cli_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "ir/excerpt.h"

namespace meshtune::service {

absl::StatusOr<std::string> ReadInput(const std::string& path, size_t max_bytes) {
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read trace file '", ir::Excerpt(path), "': ", std::strerror(errno)));
  }
  std::string data;
  char buf[65536];
  while (data.size() <= max_bytes) {
    const size_t n = std::fread(buf, 1, sizeof(buf), f);
    if (n == 0) break;
    data.append(buf, n);
  }
  const bool failed = std::ferror(f) != 0;
  if (f != stdin) std::fclose(f);
  if (failed) return absl::InvalidArgumentError(absl::StrCat("error reading '", ir::Excerpt(path), "'"));
  if (data.size() > max_bytes + 1) data.resize(max_bytes + 1);
  return data;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return absl::StrCat("{\"error\": \"cannot print JSON\"}");
  return out;
}

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace meshtune::service
