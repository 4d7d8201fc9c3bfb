#include "ir/reason.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace meshtune::ir {

namespace {

constexpr absl::string_view kPayloadUrl = "type.meshtune/reason";

// What IllegalSchedule puts before a rejection of `code`'s message.
std::string IllegalPrefix(absl::string_view code) {
  return absl::StrCat("the schedule is illegal: [", code, "] ");
}

}  // namespace

absl::Status Reject(absl::string_view code, absl::string_view message) {
  absl::Status s = absl::FailedPreconditionError(message);
  s.SetPayload(kPayloadUrl, absl::Cord(code));
  return s;
}

absl::Status IllegalSchedule(const Rejection& first) {
  absl::Status s = absl::InvalidArgumentError(IllegalPrefix(first.code) + first.message);
  s.SetPayload(kPayloadUrl, absl::Cord(first.code));
  return s;
}

std::optional<Rejection> AsRejection(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kFailedPrecondition &&
      status.code() != absl::StatusCode::kInvalidArgument) {
    return std::nullopt;
  }
  auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  Rejection r{std::string(*payload), std::string(status.message())};
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    const std::string prefix = IllegalPrefix(r.code);
    if (absl::StartsWith(r.message, prefix)) r.message.erase(0, prefix.size());
  }
  return r;
}

}  // namespace meshtune::ir
