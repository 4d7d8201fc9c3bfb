// The maps of the seed notebook (docs/design.md, "The seed notebook"), reproduced by the
// primitives, compared with isl equality.
#include "ir/primitives.h"

#include <gtest/gtest.h>

#include "base/check.h"
#include "ir/isl_util.h"
#include "ir/reason.h"

namespace meshtune::ir {
namespace {

Computation Matmul(const char* mesh = "x=8,y=8") {
  absl::StatusOr<Problem> p = ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048");
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<Mesh> m = ParseMesh(mesh);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<Computation> c = Computation::Create(*p, *m);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

std::string Msg(const absl::StatusOr<Computation>& c) { return std::string(c.status().message()); }

Computation Must(absl::StatusOr<Computation> c) {
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

TEST(PrimitivesTest, NotebookScheduleAfterDistributeDivideReorder) {
  Computation c = Matmul();
  c = Must(Distribute(c, {"m", "n"}, {"mo", "no"}, {"mi", "ni"}, {"x", "y"}));
  c = Must(Divide(c, "k", "ko", "ki", 8));
  c = Must(Reorder(c, {"mo", "no", "ko", "mi", "ni", "ki"}));
  // The seed notebook's printed schedule (Out[8]), tuple s0 renamed S.
  const isl::map expected(
      c.ctx(),
      "{ S[k, m, n] -> S[mo, no, ko, mi = m - 64mo, ni = n - 128no, ki = k - 256ko] "
      ": 0 <= k <= 2047 and 0 <= m <= 511 and 0 <= n <= 1023 and -63 + m <= 64mo "
      "<= m and -127 + n <= 128no <= n and -255 + k <= 256ko <= k }");
  EXPECT_TRUE(c.schedule().is_equal(expected)) << c.ScheduleString();
  ASSERT_EQ(c.loops().size(), 6u);
  EXPECT_EQ(c.loops()[0].kind, LoopKind::kDistributed);
  EXPECT_EQ(c.loops()[0].axis, 0);
  EXPECT_EQ(c.loops()[1].axis, 1);
  EXPECT_EQ(c.loops()[2].kind, LoopKind::kSerial);
  EXPECT_EQ(c.loops()[2].extent, 8);
  EXPECT_EQ(c.loops()[5].extent, 256);
  EXPECT_EQ(c.loops()[3].origin, "m");
}

TEST(PrimitivesTest, NotebookShardingOfC) {
  Computation c = Matmul();
  c = Must(Distribute(c, {"m", "n"}, {"mo", "no"}, {"mi", "ni"}, {"x", "y"}));
  c = Must(Shard(c, "C", {{"m", AxisExpr{{{"x", 1}}, 0, 0}}, {"n", AxisExpr{{{"y", 1}}, 0, 0}}}));
  const isl::map expected(
      c.ctx(),
      "{ C[m, n] -> C[x, y, m - 64x, local_n = n - 128y] : 0 <= m <= 511 and 0 <= n "
      "<= 1023 and 0 <= x <= 7 and -63 + m <= 64x <= m and 0 <= y <= 7 and -127 + n "
      "<= 128y <= n }");
  ASSERT_NE(c.sharding("C"), nullptr);
  EXPECT_TRUE(c.sharding("C")->layout.is_equal(expected)) << c.LayoutString("C");
  EXPECT_EQ(c.sharding("C")->local_shape, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(c.sharding("A"), nullptr);  // untouched tensors stay replicated
}

TEST(PrimitivesTest, NotebookSplitThenDivide) {
  Computation c = Matmul();
  c = Must(Split(c, "m", "mo", "mi", 8));
  c = Must(Divide(c, "n", "no", "ni", 8));
  const isl::map expected(
      c.ctx(),
      "{ S[k, m, n] -> S[k' = k, mo, mi = m - 8mo, no, ni = n - 128no] : 0 <= k <= "
      "2047 and 0 <= m <= 511 and 0 <= n <= 1023 and -7 + m <= 8mo <= m and -127 + n "
      "<= 128no <= n }");
  EXPECT_TRUE(c.schedule().is_equal(expected)) << c.ScheduleString();
}

TEST(PrimitivesTest, SkewedShardingIsCannonsLayout) {
  Computation c = Matmul();
  AxisExpr skew{{{"x", 1}, {"y", 1}}, 0, 8};
  c = Must(Shard(c, "A", {{"m", AxisExpr{{{"x", 1}}, 0, 0}}, {"k", skew}}));
  const isl::map expected(
      c.ctx(),
      "{ A[m, k] -> A[x, y, m - 64x, k - 256*((x + y) mod 8)] : 0 <= m < 512 and "
      "0 <= k < 2048 and 0 <= x < 8 and 0 <= y < 8 and 64x <= m < 64x + 64 and "
      "256*((x + y) mod 8) <= k < 256*((x + y) mod 8) + 256 }");
  EXPECT_TRUE(c.sharding("A")->layout.is_equal(expected)) << c.LayoutString("A");
}

TEST(PrimitivesTest, RotateRewritesTheLoopOnEveryRank) {
  Computation c = Matmul();
  c = Must(Distribute(c, {"m", "n"}, {"mo", "no"}, {"mi", "ni"}, {"x", "y"}));
  c = Must(Divide(c, "k", "ko", "ki", 8));
  c = Must(Reorder(c, {"mo", "no", "ko", "mi", "ni", "ki"}));
  c = Must(Communicate(c, "A", "ko", {"no"}));
  const isl::map expected(
      c.ctx(),
      "{ S[k, m, n] -> S[mo, no, ko, mi, ni, ki] : 0 <= k < 2048 and 0 <= m < 512 "
      "and 0 <= n < 1024 and mi = m - 64mo and 0 <= mi < 64 and ni = n - 128no and "
      "0 <= ni < 128 and ki = k - 256*floor(k/256) and ko = (floor(k/256) - no) mod 8 }");
  EXPECT_TRUE(c.schedule().is_equal(expected)) << c.ScheduleString();
  EXPECT_EQ(c.loops()[2].rotate, std::vector<std::string>{"no"});
  // The same rotation again is fine; a different one conflicts.
  EXPECT_TRUE(Communicate(c, "B", "ko", {"no"}).ok());
  absl::StatusOr<Computation> bad = Communicate(c, "B", "ko", {"mo"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(AsRejection(bad.status())->code, kConflictingRotation);
}

// step=N: the loop runs (t + N * sum rotate) mod extent; the same loops with another step
// conflict; a step needs a rotation and is at least 1.
TEST(PrimitivesTest, RotationStepsScaleTheTurn) {
  Computation c = Matmul();
  c = Must(Distribute(c, {"m", "n"}, {"mo", "no"}, {"mi", "ni"}, {"x", "y"}));
  c = Must(Divide(c, "k", "ko", "ki", 8));
  c = Must(Reorder(c, {"mo", "no", "ko", "mi", "ni", "ki"}));
  const Computation plain = c;
  c = Must(Communicate(c, "A", "ko", {"no"}, 0, 3));
  const isl::map expected(
      c.ctx(),
      "{ S[k, m, n] -> S[mo, no, ko, mi, ni, ki] : 0 <= k < 2048 and 0 <= m < 512 "
      "and 0 <= n < 1024 and mi = m - 64mo and 0 <= mi < 64 and ni = n - 128no and "
      "0 <= ni < 128 and ki = k - 256*floor(k/256) and ko = (floor(k/256) - 3no) mod 8 }");
  EXPECT_TRUE(c.schedule().is_equal(expected)) << c.ScheduleString();
  EXPECT_EQ(c.loops()[2].rotate_step, 3);
  EXPECT_NE(c.LoopsKey(), Must(Communicate(plain, "A", "ko", {"no"})).LoopsKey());
  EXPECT_TRUE(Communicate(c, "B", "ko", {"no"}, 0, 3).ok());
  absl::StatusOr<Computation> bad = Communicate(c, "B", "ko", {"no"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(AsRejection(bad.status())->code, kConflictingRotation);
  EXPECT_EQ(AsRejection(bad.status())->message,
            "loop ko already rotates by [no] step 3; communicate(B, ko) asks for [no]");
  absl::StatusOr<Computation> no_rotate = Communicate(plain, "A", "ko", {}, 0, 2);
  ASSERT_FALSE(no_rotate.ok());
  EXPECT_EQ(no_rotate.status().message(),
            "step=2 without rotate: a step is that of a rotation (rotate=[...])");
  absl::StatusOr<Computation> zero = Communicate(plain, "A", "ko", {"no"}, 0, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "step=0 is not a rotation step; a step is at least 1");
}

// A computation of `expr` at `extents` on `mesh`.
Computation Make(const std::string& expr, const std::string& extents, const std::string& mesh) {
  absl::StatusOr<Problem> p = ParseProblem(expr, extents);
  absl::StatusOr<Mesh> m = ParseMesh(mesh);
  absl::StatusOr<Computation> c = Computation::Create(*p, *m);
  MT_CHECK(p.ok() && m.ok() && c.ok());
  return *c;
}

// (extent, stride) of each loop, in order.
std::vector<std::pair<int64_t, int64_t>> Shape(const Computation& c) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Loop& l : c.loops()) out.emplace_back(l.extent, l.stride);
  return out;
}

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

TEST(PrimitivesTest, SplitsThatDoNotDivideMakeBlocksOfTheCeiling) {
  Computation c = Make("C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048", "x=8,y=8");
  absl::StatusOr<Computation> d = Divide(c, "k", "ko", "ki", 3);  // 2048 = 683 + 683 + 682
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(Shape(*d), (Pairs{{3, 683}, {683, 1}, {512, 1}, {1024, 1}}));
  EXPECT_EQ(d->Reach("k"), 2049);
  EXPECT_TRUE(d->Ragged("k"));
  EXPECT_FALSE(d->Ragged("m"));
  absl::StatusOr<Computation> s = Split(c, "m", "mo", "mi", 7);  // 512 = 73 x 7 + 1
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Shape(*s), (Pairs{{2048, 1}, {74, 7}, {7, 1}, {1024, 1}}));
  // 1000 over 7 ranks: 143 x 6 + 142; 5 over 4: 2, 2, 1 and an empty part.
  Computation seven = Make("o[i] = a[i] + b[i]", "i=1000", "x=7");
  absl::StatusOr<Computation> on7 = Distribute(seven, {"i"}, {"io"}, {"ii"}, {"x"});
  ASSERT_TRUE(on7.ok()) << on7.status();
  EXPECT_EQ(Shape(*on7), (Pairs{{7, 143}, {143, 1}}));
  Computation five = Make("o[i] = a[i] + b[i]", "i=5", "x=4");
  absl::StatusOr<Computation> on4 = Distribute(five, {"i"}, {"io"}, {"ii"}, {"x"});
  ASSERT_TRUE(on4.ok()) << on4.status();
  EXPECT_EQ(Shape(*on4), (Pairs{{4, 2}, {2, 1}}));
  // The instances of the empty part are not in the schedule's image: rank 3 runs none.
  EXPECT_TRUE(on4->Execution().intersect_range(isl::set(on4->ctx(), "{ Mesh[3] }")).is_empty());
  EXPECT_FALSE(on4->Execution().intersect_range(isl::set(on4->ctx(), "{ Mesh[2] }")).is_empty());
}

TEST(PrimitivesTest, ASplitInsideARaggedBlockGrowsTheStridesOutsideIt) {
  // m = 10 over x=2: blocks of 5; splitting a block by 2 makes blocks of 3 (2 x 3 = 6 > 5),
  // so the distributed loop steps by 6: a mixed radix, the instances past 10 not in the domain.
  Computation c = Make("o[m] = a[m] + b[m]", "m=10", "x=2");
  absl::StatusOr<Computation> d = Distribute(c, {"m"}, {"mo"}, {"mi"}, {"x"});
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<Computation> s = Divide(*d, "mi", "ma", "mb", 2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Shape(*s), (Pairs{{2, 6}, {2, 3}, {3, 1}}));
  EXPECT_EQ(s->Reach("m"), 12);
  // Every element is run once: by rank 0 for 0..5, by rank 1 for 6..9.
  EXPECT_TRUE(s->Execution().is_equal(
      isl::map(s->ctx(), "{ S[m] -> Mesh[0] : 0 <= m < 6; S[m] -> Mesh[1] : 6 <= m < 10 }")));
}

TEST(PrimitivesTest, ShardsThatDoNotDivideMakeBlocksOfTheCeiling) {
  Computation c = Make("C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048", "x=8,y=8");
  absl::StatusOr<Computation> sh =
      Shard(c, "A", {{"k", AxisExpr{{{"x", 1}, {"y", 1}}, 0, 0}}});  // x+y spans 15 values
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_EQ(sh->sharding("A")->local_shape, (std::vector<int64_t>{512, 137}));  // 2048/15
  // 5 over 4 ranks: rank 2 holds element 4 alone, rank 3 nothing.
  Computation five = Make("o[i] = a[i] + b[i]", "i=5", "x=4");
  absl::StatusOr<Computation> s5 = Shard(five, "a", {{"i", AxisExpr{{{"x", 1}}, 0, 0}}});
  ASSERT_TRUE(s5.ok()) << s5.status();
  EXPECT_TRUE(s5->Owners("a").is_equal(
      isl::map(s5->ctx(), "{ a[i] -> Mesh[x] : 0 <= i < 5 and 2x <= i < 2x + 2 and 0 <= x < 4 }")));
  // Nested targets: the inner block is ceil(10 / (2 x 2)) = 3, the outer one 2 x 3 = 6.
  Computation ten = Make("o[i] = a[i] + b[i]", "i=10", "x=2,y=2");
  absl::StatusOr<Computation> s10 =
      Shard(ten, "a", {{"i", AxisExpr{{{"x", 1}}, 0, 0}}, {"i", AxisExpr{{{"y", 1}}, 0, 0}}});
  ASSERT_TRUE(s10.ok()) << s10.status();
  EXPECT_EQ(s10->sharding("a")->local_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(s10->sharding("a")->blocks[0][0].first, 6);
  EXPECT_EQ(s10->sharding("a")->blocks[0][1].first, 3);
}

TEST(PrimitivesTest, MalformedCallsAreInvalidArgument) {
  Computation c = Matmul();
  EXPECT_EQ(Msg(Split(c, "q", "a", "b", 2)), "unknown loop q (loops: k, m, n)");
  EXPECT_EQ(Msg(Shard(c, "Z", {})), "unknown tensor Z (tensors: C, A, B)");
  EXPECT_EQ(Msg(Shard(c, "A", {{"m", AxisExpr{{{"w", 1}}, 0, 0}}})),
            "unknown mesh axis w in shard target w (mesh axes: x, y)");
  EXPECT_EQ(Msg(Shard(c, "A", {{"n", AxisExpr{{{"x", 1}}, 0, 0}}})),
            "tensor A has no dim n (its dims: m, k)");
  Computation d = Must(Distribute(c, {"m"}, {"mo"}, {"mi"}, {"x"}));
  EXPECT_EQ(Msg(Communicate(d, "A", "k", {"mi"})),
            "rotate by loop mi, which is not distributed; rotate names distributed loops");
  EXPECT_EQ(Msg(Communicate(d, "A", "k", {}, 2)),
            "prefetch=2 is not supported; prefetch is 0 (off) or 1 (the next step's transfer "
            "overlaps this step)");
  EXPECT_EQ(Must(Communicate(d, "A", "k", {}, 1)).TransferOf("A")->prefetch, 1);
  EXPECT_EQ(Msg(Distribute(d, {"n"}, {"no"}, {"ni"}, {"x"})),
            "mesh axis x already has a loop distributed over it");
  EXPECT_EQ(Msg(Split(d, "n", "k", "ni", 2)), "loop name k is already in use");
  EXPECT_EQ(
      Msg(Tensorize(d, {"k", "n"}, "matmul")),
      "loop mi lies inside the tensorized loops but is not tensorized; tensorize the innermost "
      "loops (reorder first)");
  EXPECT_EQ(Msg(Tensorize(d, {"k", "mi", "n"}, "matmul_ta")),
            "kernel matmul_ta does not fit: over the tensorized indices the statement is C[m,n] += "
            "A[m,k] * B[k,n], which is matmul");
  EXPECT_EQ(Msg(Tensorize(d, {"k", "mi", "n"}, "gemm")),
            "unknown kernel gemm (kernels: matmul, matmul_ta, matmul_tb, matmul_tab, mul, add, "
            "contraction)");
  EXPECT_EQ(
      Msg(Reorder(d, {"k", "mo"})),
      "reorder puts loop k outside distributed loop mo; distributed loops must stay outermost");
}

}  // namespace
}  // namespace meshtune::ir
