// ir/reason.h: the one error of an illegal schedule (IllegalSchedule) and the rejections
// AsRejection recovers from it and from Reject, but not from bad input.
#include "ir/reason.h"

#include <gtest/gtest.h>

#include <string>

namespace meshtune::ir {
namespace {

TEST(ReasonTest, AnIllegalScheduleIsInvalidArgumentInOneFormCarryingItsCode) {
  const Rejection first{std::string(kNonLocalAccess),
                        "rank (x=0, y=0) reads A[0, 8], which rank (x=0, y=1) holds, not it"};
  const absl::Status s = IllegalSchedule(first);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "the schedule is illegal: [non_local_access] rank (x=0, y=0) reads A[0, 8], which "
            "rank (x=0, y=1) holds, not it");
  const std::optional<Rejection> back = AsRejection(s);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->code, kNonLocalAccess);
  EXPECT_EQ(*back, first);
}

TEST(ReasonTest, AsRejectionRecoversRejectAndNothingFromBadInput) {
  const std::optional<Rejection> r = AsRejection(Reject(kOverhang, "loops reach past C"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (Rejection{std::string(kOverhang), "loops reach past C"}));
  EXPECT_FALSE(AsRejection(absl::OkStatus()).has_value());
  EXPECT_FALSE(AsRejection(absl::InvalidArgumentError("unknown loop ko")).has_value());
  EXPECT_FALSE(AsRejection(absl::FailedPreconditionError("lowering_unsound: B")).has_value());
  // The same text without the code is bad input, not a rejection.
  EXPECT_FALSE(
      AsRejection(absl::InvalidArgumentError("the schedule is illegal: [overhang] x")).has_value());
}

}  // namespace
}  // namespace meshtune::ir
