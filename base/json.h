// JSON of protobuf messages: every JSON answer of meshtune (the CLI's --json, batch lines,
// the worker's and the calibration job's result lines) is a message of
// proto/meshtune.proto in protobuf's JSON mapping, printed and parsed here. Stateless;
// thread-safe.
#ifndef MESHTUNE_BASE_JSON_H_
#define MESHTUNE_BASE_JSON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace meshtune::base {

// `message` as one line of JSON (no newline): field names as in the .proto
// (preserve_proto_field_names), fields at their default values printed too (an unset
// `optional` field or message field is left out), 64-bit integers as strings, doubles
// that are not finite as "NaN", "Infinity" and "-Infinity" — protobuf's JSON mapping.
std::string ToJsonLine(const google::protobuf::Message& message);

// Parses `json` (protobuf's JSON mapping; field names as in the .proto or in lowerCamelCase)
// into `message`, which is cleared first. Unknown fields are errors unless
// `ignore_unknown_fields`. InvalidArgument with protobuf's message (e.g. "rank: Cannot
// find field.") when `json` is not such a message.
absl::Status FromJson(absl::string_view json, google::protobuf::Message* message,
                      bool ignore_unknown_fields = false);

}  // namespace meshtune::base

#endif  // MESHTUNE_BASE_JSON_H_
