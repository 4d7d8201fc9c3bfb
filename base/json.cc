#include "base/json.h"

#include "base/check.h"
#include "google/protobuf/util/json_util.h"

namespace meshtune::base {

std::string ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  // Printing fails only for well-known types meshtune's messages do not use (Any,
  // FieldMask, out-of-range Duration): a failure is a bug.
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  MT_CHECK(status.ok());
  return out;
}

absl::Status FromJson(absl::string_view json, google::protobuf::Message* message,
                      bool ignore_unknown_fields) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = ignore_unknown_fields;
  message->Clear();
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, options);
  if (status.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string(status.message().data(), status.message().size()));
}

}  // namespace meshtune::base
