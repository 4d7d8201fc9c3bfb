// Parsing meshtune's JSON answers in tests with protobuf's own parser (unknown fields
// refused), so that a test checks that a line *is* the message it claims to be.
#ifndef MESHTUNE_TESTS_PROTO_JSON_H_
#define MESHTUNE_TESTS_PROTO_JSON_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "google/protobuf/util/json_util.h"

namespace meshtune::testing {

// Parses one JSON line (a trailing newline allowed) into `message`.
inline ::testing::AssertionResult ParsesAs(const std::string& json,
                                           google::protobuf::Message* message) {
  std::string line = json;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  if (line.empty() || line.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "not one line of JSON: " << json;
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(line, message, options);
  if (!status.ok()) {
    return ::testing::AssertionFailure()
           << "not a " << message->GetTypeName() << ": " << status.ToString() << "\n"
           << json;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_PROTO_JSON_H_
