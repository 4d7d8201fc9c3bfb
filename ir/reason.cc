#include "ir/reason.h"

#include "absl/strings/cord.h"

namespace meshtune::ir {

namespace {
constexpr absl::string_view kPayloadUrl = "type.meshtune/reason";
}

absl::Status Reject(absl::string_view code, absl::string_view message) {
  absl::Status s = absl::FailedPreconditionError(message);
  s.SetPayload(kPayloadUrl, absl::Cord(code));
  return s;
}

std::optional<Rejection> AsRejection(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kFailedPrecondition) return std::nullopt;
  auto code = status.GetPayload(kPayloadUrl);
  if (!code.has_value()) return std::nullopt;
  return Rejection{std::string(*code), std::string(status.message())};
}

}  // namespace meshtune::ir
