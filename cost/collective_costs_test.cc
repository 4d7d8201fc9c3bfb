// CollectiveCosts: the measured line at a measured group size, carried to other sizes by
// each collective's form, nonblocking forms with their fallback, and bad fits refused.
#include "cost/collective_costs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace meshtune::cost {
namespace {

constexpr Collective kAll[] = {Collective::kBroadcast, Collective::kReduce, Collective::kAllGather,
                               Collective::kReduceScatter, Collective::kAllReduce};

TEST(CollectiveCostsTest, NamesRoundTrip) {
  for (Collective c : kAll) {
    for (bool nonblocking : {false, true}) {
      const std::string name = CollectiveFormName({c, nonblocking});
      const std::optional<CollectiveForm> back = ParseCollective(name);
      ASSERT_TRUE(back.has_value()) << name;
      EXPECT_EQ(back->collective, c);
      EXPECT_EQ(back->nonblocking, nonblocking);
    }
  }
  EXPECT_EQ(CollectiveFormName({Collective::kReduceScatter, true}), "ireduce_scatter");
  EXPECT_FALSE(ParseCollective("gather").has_value());
  EXPECT_FALSE(ParseCollective("i").has_value());
  EXPECT_FALSE(ParseCollective("iibcast").has_value());
}

TEST(CollectiveCostsTest, MeasuredGroupSizesUseTheirOwnLine) {
  const absl::StatusOr<CollectiveCosts> c =
      CollectiveCosts::Create({{{Collective::kAllReduce, false}, {4, 3e-6, 2e-9}},
                               {{Collective::kAllReduce, false}, {2, 1e-6, 1e-9}}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->Seconds(Collective::kAllReduce, 2, 1000), 1e-6 + 1e-9 * 1000);
  EXPECT_DOUBLE_EQ(c->Seconds(Collective::kAllReduce, 4, 1000), 3e-6 + 2e-9 * 1000);
  EXPECT_EQ(c->Seconds(Collective::kAllReduce, 1, 1000), 0);  // one rank: nothing moves
  EXPECT_EQ(c->Seconds(Collective::kBroadcast, 4, 1000), 0);  // never measured
  EXPECT_TRUE(c->Has(Collective::kAllReduce));
  EXPECT_FALSE(c->Has(Collective::kBroadcast));
  EXPECT_FALSE(c->Empty());
  EXPECT_TRUE(CollectiveCosts().Empty());
}

// Other group sizes: the nearest measured size below (else the smallest) carried by the
// latency and volume terms, for every collective and several sizes.
TEST(CollectiveCostsTest, OtherGroupSizesFollowTheAlgorithmsForm) {
  for (Collective kind : kAll) {
    SCOPED_TRACE(CollectiveName(kind));
    const absl::StatusOr<CollectiveCosts> c = CollectiveCosts::Create(
        {{{kind, false}, {2, 1e-6, 1e-9}}, {{kind, false}, {8, 5e-6, 3e-9}}});
    ASSERT_TRUE(c.ok());
    for (int64_t g : {3, 4, 5, 7, 9, 16, 64, 4096}) {
      const int64_t from = g < 8 ? 2 : 8;
      const double alpha = from == 2 ? 1e-6 : 5e-6, beta = from == 2 ? 1e-9 : 3e-9;
      const double expected = alpha * LatencyTerm(kind, g) / LatencyTerm(kind, from) +
                              beta * VolumeTerm(kind, g) / VolumeTerm(kind, from) * 4096;
      EXPECT_DOUBLE_EQ(c->Seconds(kind, g, 4096), expected) << g;
    }
  }
  // The forms themselves: a ring all-gather over 8 ranks takes 7 steps of 1/8 of the box.
  EXPECT_EQ(LatencyTerm(Collective::kAllGather, 8), 7);
  EXPECT_EQ(VolumeTerm(Collective::kAllGather, 8), 7.0 / 8);
  EXPECT_EQ(LatencyTerm(Collective::kBroadcast, 8), 3);
  EXPECT_EQ(VolumeTerm(Collective::kBroadcast, 8), 1);
  EXPECT_EQ(LatencyTerm(Collective::kAllReduce, 4), 4);
  EXPECT_EQ(VolumeTerm(Collective::kAllReduce, 4), 1.5);
}

TEST(CollectiveCostsTest, NonblockingFormsFallBackToTheBlockingLine) {
  const absl::StatusOr<CollectiveCosts> c =
      CollectiveCosts::Create({{{Collective::kReduce, false}, {2, 1e-6, 1e-10}},
                               {{Collective::kReduce, true}, {2, 2e-6, 3e-10}},
                               {{Collective::kBroadcast, false}, {2, 1e-6, 1e-10}},
                               {{Collective::kAllGather, true}, {2, 4e-6, 5e-10}}});
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->Seconds(Collective::kReduce, 2, 100, false), 1e-6 + 1e-8);
  EXPECT_DOUBLE_EQ(c->Seconds(Collective::kReduce, 2, 100, true), 2e-6 + 3e-8);
  // Only blocking measured: the nonblocking call costs the same; and the other way round.
  EXPECT_DOUBLE_EQ(c->Seconds(Collective::kBroadcast, 2, 100, true), 1e-6 + 1e-8);
  EXPECT_DOUBLE_EQ(c->Seconds(Collective::kAllGather, 2, 100, false), 4e-6 + 5e-8);
  EXPECT_TRUE(c->Has(Collective::kAllGather));
}

TEST(CollectiveCostsTest, RefusesBadFits) {
  EXPECT_EQ(CollectiveCosts::Create({{{Collective::kBroadcast, false}, {1, 1e-6, 1e-9}}})
                .status()
                .message(),
            "collective fit bcast over 1 ranks: a group has at least 2 ranks");
  EXPECT_EQ(
      CollectiveCosts::Create({{{Collective::kReduce, true}, {2, -1e-6, 1e-9}}}).status().message(),
      "collective fit ireduce over 2 ranks: alpha -1e-06 and beta 1e-09 must be "
      "non-negative and finite");
  EXPECT_EQ(
      CollectiveCosts::Create({{{Collective::kAllGather, false}, {2, 1e-6, NAN}}}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CollectiveCosts::Create({{{Collective::kAllGather, false}, {4, 1e-6, 1e-9}},
                                     {{Collective::kAllGather, false}, {4, 2e-6, 1e-9}}})
                .status()
                .message(),
            "collective fit allgather over 4 ranks is given twice");
  // The same group size in the two forms is two lines, not one given twice.
  EXPECT_TRUE(CollectiveCosts::Create({{{Collective::kAllGather, false}, {4, 1e-6, 1e-9}},
                                       {{Collective::kAllGather, true}, {4, 2e-6, 1e-9}}})
                  .ok());
}

}  // namespace
}  // namespace meshtune::cost
