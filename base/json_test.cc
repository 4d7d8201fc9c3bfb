#include "base/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "proto/meshtune.pb.h"

namespace meshtune::base {
namespace {

TEST(JsonTest, OneLineWithProtoNamesAndDefaults) {
  v1::MeasuredCandidate m;
  m.mutable_trace()->set_text("distribute([m], [mo], [mi], [x])\nshard(A, m@x)\n");
  m.set_mesh("x=2");
  v1::MeshAxis* x = m.add_mesh_dims();
  x->set_name("x");
  x->set_size(2);
  m.set_predicted_s(0.5);
  m.add_patterns("A@ko \"Broadcast\"\\");
  const std::string json = ToJsonLine(m);
  EXPECT_EQ(json,
            "{\"trace\":{\"text\":\"distribute([m], [mo], [mi], [x])\\nshard(A, "
            "m@x)\\n\"},\"mesh\":\"x=2\","
            "\"predicted_s\":0.5,\"verified\":false,\"error\":\"\",\"patterns\":[\"A@ko "
            "\\\"Broadcast\\\"\\\\\"],\"family\":\"\",\"round_s\":[],"
            "\"mesh_dims\":[{\"name\":\"x\",\"size\":2}],\"implausible\":\"\"}");
  EXPECT_EQ(json.find('\n'), std::string::npos);
  v1::MeasuredCandidate back;
  ASSERT_TRUE(FromJson(json, &back).ok());
  EXPECT_EQ(back.SerializeAsString(), m.SerializeAsString());
  EXPECT_FALSE(back.has_measured_s());
}

TEST(JsonTest, NumbersThatAreNotFiniteAndLargeIntegers) {
  v1::RunResult r;
  r.set_median_s(std::numeric_limits<double>::infinity());
  r.set_checksum(std::nan(""));
  v1::Record record;
  record.set_id(int64_t{1} << 62);
  EXPECT_NE(ToJsonLine(r).find("\"median_s\":\"Infinity\""), std::string::npos) << ToJsonLine(r);
  EXPECT_NE(ToJsonLine(r).find("\"checksum\":\"NaN\""), std::string::npos) << ToJsonLine(r);
  EXPECT_NE(ToJsonLine(record).find("\"id\":\"4611686018427387904\""), std::string::npos);
  v1::RunResult back;
  ASSERT_TRUE(FromJson(ToJsonLine(r), &back).ok());
  EXPECT_TRUE(std::isinf(back.median_s()));
  EXPECT_TRUE(std::isnan(back.checksum()));
}

TEST(JsonTest, ParseErrorsAreInvalidArgument) {
  v1::TuneRequest request;
  absl::Status s = FromJson(R"({"rank": 2})", &request);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "rank: Cannot find field.");
  EXPECT_TRUE(
      FromJson(R"({"rank": 2, "ranks": 3})", &request, /*ignore_unknown_fields=*/true).ok());
  EXPECT_EQ(request.ranks(), 3);
  EXPECT_FALSE(FromJson("{not json", &request).ok());
  // The message is cleared first: nothing of an earlier parse is left.
  ASSERT_TRUE(FromJson(R"({"model_only": true})", &request).ok());
  EXPECT_EQ(request.ranks(), 0);
  EXPECT_TRUE(FromJson(R"({"modelOnly": true})", &request).ok());
}

}  // namespace
}  // namespace meshtune::base
