// Which pattern carries a transfer, over every combination of the facts lowering states
// (codegen/pattern.h, TransferFacts), against the rules written out here on their own: the
// registry's order and each pattern's Recognize together must give exactly these.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/pattern.h"
#include "codegen/program.h"

namespace meshtune::codegen {
namespace {

using Kind = CommPattern::Kind;
using Role = TransferFacts::Role;

// The pattern the rules give, stated as design.md states them.
CommPattern Expected(const TransferFacts& f, bool one_root, std::optional<int> step) {
  CommPattern p;
  switch (f.role) {
    case Role::kFetchOne:
      if (f.axes.empty()) return p;  // Local: the rank's own data
      if (one_root) {
        p.kind = Kind::kBroadcast;
        p.axes = f.axes;
      } else if (f.axes.size() == 1 && step.has_value()) {
        p.kind = Kind::kShift;
        p.axes = f.axes;
        p.shift = *step;
      } else {
        p.kind = Kind::kSendRecv;
      }
      return p;
    case Role::kFetchMany:
      p.kind = f.axes.empty() ? Kind::kAllToAll : Kind::kAllGather;
      p.axes = f.axes;
      return p;
    case Role::kReduce:
      if (f.axes.empty()) {
        p.kind = Kind::kSendRecv;
      } else if (f.ring.has_value()) {
        p.kind = Kind::kRingReduce;
        p.axes = {f.ring->axis};
        p.shift = f.ring->shift;
        p.hop = f.ring->hop;
      } else {
        p.kind = f.replicated ? Kind::kAllReduce : f.split ? Kind::kReduceScatter : Kind::kReduce;
        p.axes = f.axes;
      }
      return p;
  }
  return p;
}

TEST(PatternRegistryTest, EveryCombinationOfFactsGetsThePatternTheRulesGive) {
  const std::vector<std::vector<int>> axis_sets = {{}, {0}, {1}, {0, 1}, {0, 2}, {0, 1, 2}};
  const std::vector<std::optional<int>> steps = {std::nullopt, 1, -1, 2};
  const std::vector<std::optional<TransferFacts::Ring>> rings = {
      std::nullopt, TransferFacts::Ring{0, 1, false}, TransferFacts::Ring{1, -1, true}};
  int checked = 0;
  std::vector<int> seen(11, 0);
  for (Role role : {Role::kFetchOne, Role::kFetchMany, Role::kReduce})
    for (const std::vector<int>& axes : axis_sets)
      for (bool one_root : {false, true})
        for (const std::optional<int>& step : steps)
          for (const std::optional<TransferFacts::Ring>& ring : rings)
            for (bool replicated : {false, true})
              for (bool split : {false, true}) {
                TransferFacts f;
                f.role = role;
                f.axes = axes;
                f.ring = ring;
                f.replicated = replicated;
                f.split = split;
                f.one_root_per_group = [&] { return one_root; };
                f.neighbour_step = [&] { return step; };
                const absl::StatusOr<CommPattern> got = RecognizeTransfer(f);
                ASSERT_TRUE(got.ok()) << got.status();
                const CommPattern want = Expected(f, one_root, step);
                EXPECT_TRUE(*got == want)
                    << "role " << static_cast<int>(role) << " axes " << axes.size() << ": got "
                    << got->ToString() << ", want " << want.ToString();
                ++seen[static_cast<int>(got->kind)];
                ++checked;
              }
  EXPECT_EQ(checked, 3 * 6 * 2 * 4 * 3 * 2 * 2);
  // Every pattern carries some transfer.
  for (int k = 0; k < 10; ++k) EXPECT_GT(seen[k], 0) << PatternOf(static_cast<Kind>(k)).Name();
}

// A fact that cannot be decided (a closed form too large to enumerate) is the answer's error.
TEST(PatternRegistryTest, AFactThatCannotBeDecidedIsTheError) {
  TransferFacts f;
  f.axes = {0};
  f.one_root_per_group = [] { return absl::StatusOr<bool>(absl::OutOfRangeError("too many")); };
  const absl::StatusOr<CommPattern> got = RecognizeTransfer(f);
  EXPECT_EQ(got.status(), absl::OutOfRangeError("too many"));
}

}  // namespace
}  // namespace meshtune::codegen
