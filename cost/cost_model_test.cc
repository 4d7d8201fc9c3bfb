// The alpha-beta-gamma model on the reference schedules, against closed forms worked out by
// hand.
#include "cost/cost_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "absl/strings/str_replace.h"
#include "codegen/lower.h"
#include "cost/collective_costs.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "tests/lower_text.h"
#include "tests/test_util.h"

namespace meshtune::cost {
namespace {

using codegen::CommPattern;
using codegen::Expr;
using codegen::Program;
using Kind = CommPattern::Kind;
using ::meshtune::testing::LowerText;
using ::meshtune::testing::ReadFile;

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";

// An example trace for an s x s mesh: k divided in s, skews taken mod s.
std::string OnSquare(const std::string& file, int s) {
  return absl::StrReplaceAll(
      ReadFile("examples/" + file),
      {{"divide(k, ko, ki, 8)", "divide(k, ko, ki, " + std::to_string(s) + ")"},
       {"%8", "%" + std::to_string(s)}});
}

std::string Square(int s) { return "x=" + std::to_string(s) + ",y=" + std::to_string(s); }

// Latency and bandwidth only, the same for point-to-point and collectives.
CostParams CommOnly() {
  CostParams c;
  c.alpha = c.alpha_coll = 3e-6;
  c.beta = c.beta_coll = 2e-10;
  return c;
}

void ExpectRel(double actual, double expected, double tol = 1e-12) {
  EXPECT_LE(std::abs(actual - expected), tol * std::abs(expected)) << actual << " vs " << expected;
}

TEST(CostModelTest, CannonIsTwoRingShiftsPerStepAfterTheFirst) {
  const CostParams c = CommOnly();
  const int n = 256;
  for (int s : {2, 4, 8}) {
    SCOPED_TRACE(s);
    const Program p =
        LowerText(kMatmul, "m=256,n=256,k=256", Square(s), OnSquare("cannon.trace", s));
    const CostReport r = EstimateCost(p, c);
    const double ranks = s * s;
    const double block = n * n / ranks;  // elements of one block of A or B
    // 2 (sqrt(P) - 1) (alpha + (n^2/P) * 4 * beta): the skewed first fetch is local.
    ExpectRel(r.seconds, 2 * (s - 1) * (c.alpha + block * 4 * c.beta));
    EXPECT_EQ(r.compute_seconds, 0);
    ASSERT_EQ(r.transfers.size(), 2u);
    for (const TransferCost& t : r.transfers) {
      EXPECT_EQ(t.pattern.kind, Kind::kShift);
      EXPECT_EQ(t.messages, s - 1);
      EXPECT_EQ(t.bytes, static_cast<int64_t>((s - 1) * block * 4));
    }
    EXPECT_EQ(r.comm_words_per_rank, static_cast<int64_t>(2 * (s - 1) * block));
  }
}

// A node-and-core hierarchy: with nodes of s ranks (a row of the s x s mesh), Cannon's
// shift along y stays in a node and the one along x crosses nodes, at the inter-node
// numbers; a mesh named node=s,core=s says the same without the profile's node size.
TEST(CostModelTest, TransfersAreChargedAtTheirLevelOfTheHierarchy) {
  CostParams c = CommOnly();
  c.alpha_node = 5e-5;
  c.beta_node = 3e-9;
  const int n = 256;
  for (int s : {2, 4}) {
    SCOPED_TRACE(s);
    const double block = n * n / double(s * s);
    const double within = (s - 1) * (c.alpha + block * 4 * c.beta);
    const double across = (s - 1) * (c.alpha_node + block * 4 * c.beta_node);
    CostParams nodes = c;
    nodes.node_ranks = s;
    const Program p =
        LowerText(kMatmul, "m=256,n=256,k=256", Square(s), OnSquare("cannon.trace", s));
    EXPECT_EQ(OuterAxes(p, nodes), (std::vector<bool>{true, false}));
    ExpectRel(EstimateCost(p, nodes).seconds, within + across);
    ExpectRel(EstimateCost(p, c).seconds, 2 * within);  // one level: as before
    std::string named =
        absl::StrReplaceAll(OnSquare("cannon.trace", s), {{"x", "node"}, {"y", "core"}});
    const Program q = LowerText(kMatmul, "m=256,n=256,k=256",
                                "node=" + std::to_string(s) + ",core=" + std::to_string(s), named);
    EXPECT_EQ(NodeRanks(q, c), s);
    ExpectRel(EstimateCost(q, c).seconds, within + across);
    // SUMMA: B's broadcast along x spans nodes, at least its tree form in those numbers.
    const Program summa =
        LowerText(kMatmul, "m=256,n=256,k=256", Square(s), OnSquare("summa.trace", s));
    const double tree = c.alpha * std::log2(s) + block * 4 * c.beta;
    const double tree_across =
        std::max(tree, c.alpha_node * LatencyTerm(Collective::kBroadcast, s) +
                           c.beta_node * VolumeTerm(Collective::kBroadcast, s) * block * 4);
    ExpectRel(EstimateCost(summa, nodes).seconds, s * (tree + tree_across));
  }
  // Nodes that do not hold whole runs along an axis: both axes may cross (3 ranks a node).
  CostParams odd = c;
  odd.node_ranks = 3;
  const Program p = LowerText(kMatmul, "m=256,n=256,k=256", Square(2), OnSquare("cannon.trace", 2));
  EXPECT_EQ(OuterAxes(p, odd), (std::vector<bool>{true, true}));
  odd.node_ranks = 4;  // the whole mesh on one node
  EXPECT_EQ(OuterAxes(p, odd), (std::vector<bool>{false, false}));
}

TEST(CostModelTest, SummaIsTwoBroadcastsPerStep) {
  const CostParams c = CommOnly();
  const int n = 256;
  for (int s : {2, 4, 8}) {
    SCOPED_TRACE(s);
    const Program p =
        LowerText(kMatmul, "m=256,n=256,k=256", Square(s), OnSquare("summa.trace", s));
    const CostReport r = EstimateCost(p, c);
    const double block = n * n / double(s * s);
    // 2 sqrt(P) (alpha log2 sqrt(P) + (n^2/P) * 4 * beta).
    ExpectRel(r.seconds, 2 * s * (c.alpha * std::log2(s) + block * 4 * c.beta));
    for (double rank : r.rank_seconds) ExpectRel(rank, r.seconds);
    EXPECT_EQ(r.critical_rank, 0);
  }
}

// The walk's work: SUMMA's broadcast roots follow ko, so its two broadcasts are costed at
// every step on every rank (the kernel, which does not vary, once); Cannon's shifts at the
// first step and one more.
TEST(CostModelTest, WorkCountsTheRankStepsTheWalkCosts) {
  for (int s : {2, 4, 8}) {
    SCOPED_TRACE(s);
    const Program summa =
        LowerText(kMatmul, "m=256,n=256,k=256", Square(s), OnSquare("summa.trace", s));
    EXPECT_EQ(EstimateCostWork(summa), 2 * s * s * s);
    const Program cannon =
        LowerText(kMatmul, "m=256,n=256,k=256", Square(s), OnSquare("cannon.trace", s));
    EXPECT_EQ(EstimateCostWork(cannon), 2 * 2 * s * s);
  }
  EXPECT_GT(kMaxCostWork, 2 * 64 * 64 * 64);  // SUMMA on 64 x 64 is costed
}

TEST(CostModelTest, WithinCostsUpToTheWorkLimitAndRefusesBeyond) {
  const Program summa =
      LowerText(kMatmul, "m=256,n=256,k=256", Square(4), OnSquare("summa.trace", 4));
  const CostParams c = CommOnly();
  absl::StatusOr<CostReport> r = EstimateCostWithin(summa, c, 2 * 4 * 4 * 4);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->seconds, EstimateCost(summa, c).seconds);
  r = EstimateCostWithin(summa, c, 2 * 4 * 4 * 4 - 1);
  EXPECT_EQ(r.status(), absl::ResourceExhaustedError(
                            "costing it would take 128 rank-steps (more than 127): sources "
                            "that change with every rank and step of long loops"));
}

TEST(CostModelTest, SummaComputeIsTheLocalShareOfTheFlops) {
  CostParams c;
  c.gamma = 1e-11;
  const Program p =
      LowerText(kMatmul, "m=512,n=1024,k=2048", "x=8,y=8", ReadFile("examples/summa.trace"));
  const CostReport r = EstimateCost(p, c);
  // 2 m n k / P * gamma: a multiply-add per point of the rank's share of the iteration space.
  const double expected = 2.0 * 512 * 1024 * 2048 / 64 * c.gamma;
  ExpectRel(r.compute_seconds, expected);
  ExpectRel(r.seconds, expected);
  EXPECT_EQ(r.comm_seconds, 0);
}

TEST(CostModelTest, SummaWordsOnEveryRankSkipTheStepsItIsRoot) {
  const Program p =
      LowerText(kMatmul, "m=512,n=1024,k=2048", "x=8,y=8", ReadFile("examples/summa.trace"));
  const CostReport r = EstimateCost(p, CommOnly());
  // Blocks: A 64 x 256, B 256 x 128. A rank receives a block of each at every step but the
  // one where it is the root (ko == y for A, ko == x for B): 7 (64*256 + 256*128) words.
  EXPECT_EQ(r.comm_words_per_rank, 7 * (64 * 256 + 256 * 128));
  ASSERT_EQ(r.transfers.size(), 2u);
  EXPECT_EQ(r.transfers[0].tensor, "A");
  EXPECT_EQ(r.transfers[0].messages, 7);
  EXPECT_EQ(r.transfers[0].bytes, 7 * 64 * 256 * 4);
  EXPECT_EQ(r.transfers[1].bytes, 7 * 256 * 128 * 4);

  // Timing of the evaluation, for the log (the target is under 100 us).
  const int reps = 200;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) EstimateCost(p, CommOnly());
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      reps;
  std::printf("EstimateCost(SUMMA on x=8,y=8): %.1f us\n", us);
}

TEST(CostModelTest, AllGatherGemmBroadcastsAndItsRingVariant) {
  const CostParams c = CommOnly();
  const std::string expr = "C[m,n] = A[k,m] * B[k,n]";
  const std::string extents = "m=2048,k=1024,n=4096";
  const std::string trace = ReadFile("examples/allgather_gemm.trace");
  const double w = 1024.0 * 1024 * 4;  // bytes of a B block (k x n/4)
  // Broadcast of B along x=4 at each of 4 steps: 4 (alpha log2 4 + beta w).
  const CostReport b = EstimateCost(LowerText(expr, extents, "x=4", trace), c);
  ASSERT_EQ(b.transfers.size(), 1u);
  EXPECT_EQ(b.transfers[0].pattern.kind, Kind::kBroadcast);
  ExpectRel(b.seconds, 4 * (c.alpha_coll * 2 + c.beta_coll * w));
  EXPECT_EQ(b.comm_words_per_rank, 3 * 1024 * 1024);  // root at one step of four
  // Rotated: the first fetch is the rank's own block, then 3 ring steps: 3 (alpha + beta w).
  const std::string rotated =
      absl::StrReplaceAll(trace, {{"communicate(B, no)", "communicate(B, no, rotate=[mo])"}});
  const CostReport s = EstimateCost(LowerText(expr, extents, "x=4", rotated), c);
  ASSERT_EQ(s.transfers.size(), 1u);
  EXPECT_EQ(s.transfers[0].pattern.kind, Kind::kShift);
  ExpectRel(s.seconds, 3 * (c.alpha + c.beta * w));
}

// Given layouts: A on rank 0 of x=4 goes to the schedule's shards (A[k,m] split over m,
// a quarter each) by one exchange: rank 0 sends three quarters. Without a calibrated
// all-to-all: a message to each of 3 peers and the three quarters at beta on rank 0; with
// one: its line for the larger share's box. A layout that is the schedule's sharding
// (grid(*,x)) costs nothing.
TEST(CostModelTest, GivenLayoutsAreChargedTheirRedistribution) {
  CostParams c = CommOnly();
  const std::string expr = "C[m,n] = A[k,m] * B[k,n]";
  Program p =
      LowerText(expr, "m=2048,k=1024,n=4096", "x=4", ReadFile("examples/allgather_gemm.trace"));
  ir::GivenLayout root;
  root.kind = ir::GivenLayout::Kind::kRoot;
  for (codegen::TensorInfo& t : p.tensors) {
    if (t.name == "A") t.given = root;
  }
  const double quarter = 1024.0 * 512 * 4;  // bytes of A's shard
  auto layout_cost = [&](const CostReport& r) {
    for (const TransferCost& t : r.transfers) {
      if (t.tensor == "A" && t.loop == "layout") return t.seconds;
    }
    return -1.0;
  };
  ExpectRel(layout_cost(EstimateCost(p, c)), 3 * c.alpha + c.beta * 3 * quarter);
  c.collectives = *CollectiveCosts::Create({{{Collective::kAllToAll, false}, {4, 7e-6, 9e-10}}});
  ExpectRel(layout_cost(EstimateCost(p, c)), 7e-6 + 9e-10 * (3 * quarter) * 4 / 3);
  ir::GivenLayout grid;
  grid.kind = ir::GivenLayout::Kind::kGrid;
  grid.axes = {"*", "x"};
  for (codegen::TensorInfo& t : p.tensors) {
    if (t.name == "A") t.given = grid;
  }
  EXPECT_EQ(layout_cost(EstimateCost(p, c)), -1.0);  // in place: not even listed
  // From block-cyclic (column-major local matrices): every piece is strided there, so the
  // strided copy rate prices what is packed and copied; the root layout's rows are not.
  ir::GivenLayout cyclic;
  cyclic.kind = ir::GivenLayout::Kind::kCyclic;
  cyclic.mb = cyclic.nb = 64;
  for (codegen::TensorInfo& t : p.tensors) {
    if (t.name == "A") t.given = cyclic;
  }
  c.copy = 1e-10;
  c.gather = 1e-10;
  const double even = layout_cost(EstimateCost(p, c));
  c.gather = 1e-9;
  // Each rank reads its whole local matrix (a quarter of A) with a stride: 9e-10 s/B more.
  ExpectRel(layout_cost(EstimateCost(p, c)), even + 9e-10 * quarter, 1e-9);
  for (codegen::TensorInfo& t : p.tensors) {
    if (t.name == "A") t.given = root;
  }
  const double rows = layout_cost(EstimateCost(p, c));
  c.gather = 1e-10;
  EXPECT_EQ(layout_cost(EstimateCost(p, c)), rows);
}

TEST(CostModelTest, AllGatherIsARing) {
  const CostParams c = CommOnly();
  const Program p =
      LowerText(kMatmul, "m=16,n=12,k=8", "x=2,y=2",
                "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
                "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
                "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n");
  const CostReport r = EstimateCost(p, c);
  ASSERT_EQ(r.transfers.size(), 2u);
  EXPECT_EQ(r.transfers[0].pattern.kind, Kind::kAllGather);
  EXPECT_EQ(r.transfers[1].pattern.kind, Kind::kAllGather);
  // (g-1)(alpha + beta w/g) with g = 2: A's box is 8 x 8 (w = 256 B), B's 8 x 6 (w = 192 B).
  const double a = c.alpha_coll + c.beta_coll * 256 / 2;
  const double b = c.alpha_coll + c.beta_coll * 192 / 2;
  ExpectRel(r.seconds, a + b);
  EXPECT_EQ(r.comm_words_per_rank, 64 / 2 + 48 / 2);
}

// 3D on 2x2x2 at m=16, n=8, k=12: k over z, C's partial blocks all-reduced along z (every
// copy holds the result); with `result_on_layer` reduced along z onto the layer z=0, unless
// `layouts` {"C=grid(x,y)"} (the application keeps C's copies on every layer, in place).
Program ThreeD(const std::vector<std::string>& layouts = {}, bool result_on_layer = false) {
  return LowerText(kMatmul, "m=16,n=8,k=12", "x=2,y=2,z=2",
                   "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\nshard(A, m@x, k@z)\n"
                   "shard(B, k@z, n@y)\nshard(C, m@x, n@y)\ncommunicate(C, ki)\n"
                   "tensorize([ki, mi, ni], contraction)\n",
                   layouts, result_on_layer);
}
const std::vector<std::string> kCopiesKept = {"C=grid(x,y)"};

TEST(CostModelTest, SplitKReduceScattersAndThreeDReducesOntoALayer) {
  const CostParams c = CommOnly();
  // k over x=4; C's 16 x 8 partial sums (w = 512 B) go to their owners by 4 reduces of
  // w/4: g alpha log2 g + beta w.
  const CostReport split = EstimateCost(
      LowerText(kMatmul, "m=16,n=8,k=32", "x=4",
                "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
                "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n"),
      c);
  ASSERT_EQ(split.transfers.size(), 1u);
  EXPECT_EQ(split.transfers[0].pattern.kind, Kind::kReduceScatter);
  ExpectRel(split.seconds, 4 * c.alpha_coll * 2 + c.beta_coll * 512);
  EXPECT_EQ(split.comm_words_per_rank, 16 * 8);
  // 3D on 2x2x2: the copies first, each rank's 8 x 6 block of A (192 B) broadcast along
  // y and its 6 x 4 block of B (96 B) along x, the axes their layouts leave out (alpha
  // log2 2 + beta w each); then each rank's 8 x 4 block of C (w = 128 B) reduced along z
  // (g = 2) onto the layer z=0: alpha log2 2 + beta w.
  const CostReport onto = EstimateCost(ThreeD({}, true), c);
  ASSERT_EQ(onto.transfers.size(), 3u);
  EXPECT_EQ(onto.transfers[2].pattern.kind, Kind::kReduce);
  ExpectRel(onto.seconds,
            c.alpha_coll + c.beta_coll * 128 + 2 * c.alpha_coll + c.beta_coll * (192 + 96));
  // Where every layer keeps its copy of C, all-reduced: 2 (alpha log2 2 + beta w): by
  // default, and where the application keeps them with the result on one layer.
  const CostReport every = EstimateCost(ThreeD(), c);
  ASSERT_EQ(every.transfers.size(), 3u);
  EXPECT_EQ(every.transfers[2].pattern.kind, Kind::kAllReduce);
  ExpectRel(every.seconds,
            2 * (c.alpha_coll + c.beta_coll * 128) + 2 * c.alpha_coll + c.beta_coll * (192 + 96));
  const CostReport three = EstimateCost(ThreeD(kCopiesKept, true), c);
  ASSERT_EQ(three.transfers.size(), 3u);
  EXPECT_EQ(three.transfers[0].tensor, "A");
  EXPECT_EQ(three.transfers[0].loop, "copies");
  EXPECT_EQ(three.transfers[0].pattern.kind, Kind::kBroadcast);
  EXPECT_EQ(three.transfers[0].pattern.axes, std::vector<int>{1});
  EXPECT_EQ(three.transfers[0].bytes, 192);
  ExpectRel(three.transfers[0].seconds, c.alpha_coll + c.beta_coll * 192);
  EXPECT_EQ(three.transfers[1].pattern.axes, std::vector<int>{0});
  ExpectRel(three.transfers[1].seconds, c.alpha_coll + c.beta_coll * 96);
  EXPECT_EQ(three.transfers[2].pattern.kind, Kind::kAllReduce);
  ExpectRel(three.seconds,
            2 * (c.alpha_coll + c.beta_coll * 128) + 2 * c.alpha_coll + c.beta_coll * (192 + 96));
}

// GEMM-ReduceScatter as a ring on x=4 (examples/gemm_ring_reducescatter.trace): each pass of
// the 4 steps sends a 16 x 8 block of partial sums (w = 512 B) 3 times and, in C's block
// layout, once more to its holder: (3 + 1) (alpha + beta w); skewed by one, 3 (...).
TEST(CostModelTest, RingReduceSendsItsBlockAtEachStep) {
  const CostParams c = CommOnly();
  const std::string ring = ReadFile("examples/gemm_ring_reducescatter.trace");
  for (const auto& [layout, messages] :
       std::vector<std::pair<std::string, int>>{{"n@x", 4}, {"n@(x+3)%4", 3}}) {
    SCOPED_TRACE(layout);
    const CostReport r = EstimateCost(
        LowerText(kMatmul, "m=16,n=32,k=16", "x=4",
                  absl::StrReplaceAll(ring, {{"shard(C, n@x)", "shard(C, " + layout + ")"}})),
        c);
    ASSERT_EQ(r.transfers.size(), 1u);
    EXPECT_EQ(r.transfers[0].pattern.kind, Kind::kRingReduce);
    EXPECT_EQ(r.transfers[0].messages, messages);
    EXPECT_EQ(r.transfers[0].bytes, messages * 512);
    ExpectRel(r.seconds, messages * (c.alpha + c.beta * 512));
    EXPECT_EQ(r.comm_words_per_rank, messages * 16 * 8);
  }
}

// TermScales::message adds its wait to every message a rank receives: each transfer costs
// the critical rank its seconds plus wait times its messages, and the total grows by wait
// times all of them (no prefetch here to hide any) — for rings, broadcasts, all-gathers,
// fetches, reduce-scatters and all-reduces alike.
TEST(CostModelTest, MessageWaitIsChargedPerMessageReceived) {
  std::vector<Program> programs = {ThreeD(), ThreeD(kCopiesKept)};
  for (const char* file : {"cannon.trace", "summa.trace", "pumma.trace"})
    programs.push_back(LowerText(kMatmul, "m=64,n=64,k=64", Square(2), OnSquare(file, 2)));
  programs.push_back(
      LowerText(kMatmul, "m=16,n=8,k=32", "x=4",
                "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
                "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n"));
  CostParams waiting = CommOnly();
  waiting.scales.message = 1e-5;
  for (size_t i = 0; i < programs.size(); ++i) {
    SCOPED_TRACE(i);
    const CostReport plain = EstimateCost(programs[i], CommOnly());
    const CostReport waited = EstimateCost(programs[i], waiting);
    ASSERT_EQ(waited.transfers.size(), plain.transfers.size());
    int64_t messages = 0;
    for (size_t t = 0; t < plain.transfers.size(); ++t) {
      EXPECT_EQ(waited.transfers[t].messages, plain.transfers[t].messages);
      ExpectRel(waited.transfers[t].seconds,
                plain.transfers[t].seconds + 1e-5 * plain.transfers[t].messages);
      messages += plain.transfers[t].messages;
    }
    EXPECT_GT(messages, 0);
    ExpectRel(waited.seconds, plain.seconds + 1e-5 * messages);
  }
}

// An all-to-all on x=4: A and B sharded k@x in blocks of 3, k fetched in 2 steps of 6, so
// each step's box meets two blocks. At the step whose blocks include its own, a rank copies
// its piece and receives the other (1 message); at the other step it receives both (2
// messages). A's box is 1 x 6 (pieces of 3 elements), B's 6 x 4 (pieces of 12):
//   A: (alpha + 12 B beta) + (2 alpha + 24 B beta),  B: (alpha + 48 B beta) + (2 alpha + 96 B
//   beta).
TEST(CostModelTest, AllToAllReceivesEachPieceItDoesNotHold) {
  const CostParams c = CommOnly();
  const CostReport r = EstimateCost(
      LowerText(kMatmul, "m=4,n=4,k=12", "x=4",
                "distribute([m], [mo], [mi], [x])\ndivide(k, ko, ki, 2)\n"
                "reorder(mo, ko, mi, n, ki)\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
                "communicate(A, ko)\ncommunicate(B, ko)\ntensorize([mi, n, ki], matmul)\n"),
      c);
  ASSERT_EQ(r.transfers.size(), 2u);
  for (const TransferCost& t : r.transfers) EXPECT_EQ(t.pattern.kind, Kind::kAllToAll);
  EXPECT_EQ(r.transfers[0].messages, 3);
  EXPECT_EQ(r.transfers[0].bytes, 36);
  ExpectRel(r.transfers[0].seconds, 3 * c.alpha + 36 * c.beta);
  EXPECT_EQ(r.transfers[1].messages, 3);
  EXPECT_EQ(r.transfers[1].bytes, 144);
  ExpectRel(r.transfers[1].seconds, 3 * c.alpha + 144 * c.beta);
  ExpectRel(r.seconds, 6 * c.alpha + 180 * c.beta);
}

// A program with one transfer of an 8 x 8 f32 box (256 B) on a mesh x=1,y=4.
Program OneTransfer(CommPattern pattern, std::vector<Expr> source) {
  Program p;
  p.axis_names = {"x", "y"};
  p.axis_sizes = {1, 4};
  codegen::Transfer t;
  t.tensor = "A";
  t.buffer = "TransA";
  t.pattern = std::move(pattern);
  t.source = std::move(source);
  t.global.offset = {Expr::Const(0), Expr::Const(0)};
  t.global.size = {8, 8};
  t.src = t.global;
  p.body = codegen::MakeStmt(codegen::Block{{codegen::MakeStmt(t)}});
  return p;
}

TEST(CostModelTest, BroadcastOverAnAxisOfSizeOneIsFree) {
  const CostParams c = CommOnly();
  CommPattern along_x{Kind::kBroadcast, {0}, 0};
  const CostReport free = EstimateCost(OneTransfer(along_x, {Expr::Const(0), Expr::Var("y")}), c);
  EXPECT_EQ(free.seconds, 0);
  EXPECT_EQ(free.comm_words_per_rank, 0);
  // The same along y (g = 4): alpha log2 4 + beta w on every rank, root included.
  CommPattern along_y{Kind::kBroadcast, {1}, 0};
  const CostReport paid = EstimateCost(OneTransfer(along_y, {Expr::Var("x"), Expr::Const(0)}), c);
  for (double s : paid.rank_seconds) ExpectRel(s, 2 * c.alpha_coll + 256 * c.beta_coll);
  EXPECT_EQ(paid.comm_words_per_rank, 64);
}

TEST(CostModelTest, SendRecvCostsTheBusiestEndpoint) {
  const CostParams c = CommOnly();
  // Every rank fetches from (0, 0): rank 0 sends 3 messages, the others receive one.
  const CostReport r = EstimateCost(
      OneTransfer(CommPattern{Kind::kSendRecv, {}, 0}, {Expr::Const(0), Expr::Const(0)}), c);
  const double message = c.alpha + 256 * c.beta;
  EXPECT_EQ(r.critical_rank, 0);
  ExpectRel(r.seconds, 3 * message);
  ExpectRel(r.rank_seconds[1], message);
  EXPECT_EQ(r.transfers[0].messages, 0);  // the root receives nothing
  EXPECT_EQ(r.comm_words_per_rank, 64);
}

// Overlap (cost_model.h, "Prefetch"), worked by hand. SUMMA, n = 256 on 4 x 4: E = 4 steps;
// a step broadcasts a 64 x 64 block of A and one of B (16384 bytes each):
//   one broadcast  b = 3 us * log2(4) + 16384 B * 0.2 ns/B = 9.2768 us,
//   both           P = 2b = 18.5536 us,
//   a step's GEMM  K = 2 * 64^3 flops * gamma.
TEST(CostModelTest, PrefetchedSummaOverlapsEachStepsBroadcastsWithTheKernel) {
  CostParams c = CommOnly();
  c.overlap = 1;
  const std::string plain = OnSquare("summa.trace", 4);
  const std::string both = OnSquare("summa_prefetch.trace", 4);
  std::string a_only = plain;
  a_only.replace(a_only.find("communicate(A, ko)"), 18, "communicate(A, ko, prefetch=1)");
  const Program p_plain = LowerText(kMatmul, "m=256,n=256,k=256", Square(4), plain);
  const Program p_both = LowerText(kMatmul, "m=256,n=256,k=256", Square(4), both);
  const Program p_a = LowerText(kMatmul, "m=256,n=256,k=256", Square(4), a_only);
  // Compute-bound, gamma = 0.1 ns: K = 52.4288 us > P. P + (E-1) max(K, P) + K = P + 4K.
  c.gamma = 1e-10;
  CostReport r = EstimateCost(p_both, c);
  ExpectRel(r.seconds, 228.2688e-6, 1e-9);
  ExpectRel(r.compute_seconds, 4 * 52.4288e-6, 1e-9);
  ExpectRel(r.comm_seconds, 4 * 18.5536e-6, 1e-9);
  ExpectRel(r.overlap_seconds, r.compute_seconds + r.comm_seconds - r.seconds, 1e-9);
  for (double rank : r.rank_seconds) ExpectRel(rank, r.seconds, 1e-9);
  // Without prefetch: E (P + K) = 283.9296 us, nothing hidden.
  const CostReport serial = EstimateCost(p_plain, c);
  ExpectRel(serial.seconds, 283.9296e-6, 1e-9);
  EXPECT_EQ(serial.overlap_seconds, 0);
  // Only A prefetched: B's broadcast stays serial, E b + b + (E-1) max(K, b) + K
  // = 37.1072 + 9.2768 + 3 * 52.4288 + 52.4288 = 256.0992 us.
  ExpectRel(EstimateCost(p_a, c).seconds, 256.0992e-6, 1e-9);
  // Communication-bound, gamma = 0.01 ns: K = 5.24288 us < P. P + 3P + K = 79.45728 us.
  c.gamma = 1e-11;
  r = EstimateCost(p_both, c);
  ExpectRel(r.seconds, 79.45728e-6, 1e-9);
  ExpectRel(r.overlap_seconds, 3 * 5.24288e-6, 1e-9);  // each step but the last hides K
}

// GEMM-ReduceScatter, m = n = k = 64 on x = 4, n in E = 4 steps of 16: a step reduce-scatters
// a 64 x 16 partial block (4096 bytes) over 4 ranks and multiplies 64 x 16 x 16 locally:
//   R = 4 * 3 us * log2(4) + 4096 B * 0.2 ns/B = 24.8192 us,  K = 2 * 64 * 16 * 16 * gamma.
// The first kernel, then per later step max(K, the previous reduction), then the last
// reduction: K + (E-1) max(K, R) + R.
TEST(CostModelTest, PrefetchedReduceScatterOverlapsTheNextStepsKernel) {
  CostParams c = CommOnly();
  c.overlap = 1;
  const Program p = LowerText("C[m,n] = A[m,k] * B[k,n]", "m=64,k=64,n=64", "x=4",
                              ReadFile("examples/gemm_reducescatter.trace"));
  ASSERT_EQ(p.buffers.size(), 1u);
  c.gamma = 1e-9;  // K = 32.768 us > R: 4K + R = 155.8912 us
  CostReport r = EstimateCost(p, c);
  ASSERT_EQ(r.transfers.size(), 1u);
  EXPECT_EQ(r.transfers[0].pattern.kind, Kind::kReduceScatter);
  ExpectRel(r.transfers[0].seconds, 4 * 24.8192e-6, 1e-9);
  ExpectRel(r.seconds, 155.8912e-6, 1e-9);
  c.gamma = 1e-10;  // K = 3.2768 us < R: K + 4R = 102.5536 us
  r = EstimateCost(p, c);
  ExpectRel(r.seconds, 102.5536e-6, 1e-9);
  ExpectRel(r.overlap_seconds, 3 * 3.2768e-6, 1e-9);
}

// A prefetched ring: the first step's fetch is a point-to-point message, later ones ring
// steps (cost_model.h, Shift), each overlapping the kernel before it.
TEST(CostModelTest, PrefetchedRingHidesEveryStepButTheFirst) {
  CostParams c = CommOnly();
  c.overlap = 1;
  c.gamma = 1e-9;
  const Program plain =
      LowerText("C[m,n] = A[k,m] * B[k,n]", "m=64,k=64,n=64", "x=4",
                absl::StrReplaceAll(ReadFile("examples/allgather_gemm_prefetch.trace"),
                                    {{", prefetch=1", ""}}));
  const Program ring = LowerText("C[m,n] = A[k,m] * B[k,n]", "m=64,k=64,n=64", "x=4",
                                 ReadFile("examples/allgather_gemm_prefetch.trace"));
  const CostReport a = EstimateCost(plain, c), b = EstimateCost(ring, c);
  // B's block 64 x 16 (4096 bytes): a ring step 3 us + 0.8192 us = 3.8192 us; the kernel
  // 2 * 16 * 16 * 64 * 1 ns = 32.768 us hides each of the three ring steps.
  ExpectRel(a.seconds - b.seconds, 3 * 3.8192e-6, 1e-9);
  ExpectRel(b.overlap_seconds, 3 * 3.8192e-6, 1e-9);
}

// The machine's overlap scales what prefetch hides: each step costs K + C - overlap *
// min(K, C). SUMMA as above, compute-bound (K = 52.4288 us > P = 18.5536 us): the three
// steps that overlap hide overlap * 3P.
TEST(CostModelTest, OverlapFractionScalesWhatPrefetchHides) {
  CostParams c = CommOnly();
  c.gamma = 1e-10;
  const Program plain =
      LowerText(kMatmul, "m=256,n=256,k=256", Square(4), OnSquare("summa.trace", 4));
  const Program both =
      LowerText(kMatmul, "m=256,n=256,k=256", Square(4), OnSquare("summa_prefetch.trace", 4));
  const double serial = EstimateCost(plain, c).seconds;
  for (double overlap : {0.0, 0.25, 0.5, 1.0}) {
    SCOPED_TRACE(overlap);
    c.overlap = overlap;
    const CostReport r = EstimateCost(both, c);
    EXPECT_NEAR(r.overlap_seconds, overlap * 3 * 18.5536e-6, 1e-15);
    ExpectRel(r.seconds, serial - overlap * 3 * 18.5536e-6, 1e-9);
  }
}

// ForRanks: gamma follows how many ranks share a node's cores, against the calibration.
TEST(ForRanksTest, GammaScalesWithTheRanksSharingANodesCores) {
  CostParams p;
  p.gamma = 4e-11;
  p.alpha = 1e-6;
  EXPECT_EQ(ForRanks(p, 2).gamma, 4e-11);  // cores unknown: unchanged
  p.cores = 2;
  p.ranks_per_node = 4;  // calibrated with 4 ranks on 2 cores: each had half a core
  EXPECT_EQ(ForRanks(p, 4).gamma, 4e-11);
  EXPECT_EQ(ForRanks(p, 3).gamma, 3e-11);  // 3 on 2 cores: 1.5 / 2
  EXPECT_EQ(ForRanks(p, 2).gamma, 2e-11);  // a core each
  EXPECT_EQ(ForRanks(p, 1).gamma, 2e-11);
  EXPECT_EQ(ForRanks(p, 64).gamma, 4e-11);  // more nodes, each as full as in calibration
  EXPECT_EQ(ForRanks(p, 2).alpha, 1e-6);
  p.cores = 8;  // 4 ranks on 8 cores: never shared, never scaled
  EXPECT_EQ(ForRanks(p, 2).gamma, 4e-11);
}

// A GEMM table over {16, 64, 256} per dim whose rate grows with every size differently, so
// that the tile's shape, not only its flops, decides the time.
GemmTable ShapedTable() {
  std::vector<GemmSample> samples;
  for (int64_t m : {16, 64, 256}) {
    for (int64_t n : {16, 64, 256}) {
      for (int64_t k : {16, 64, 256})
        samples.push_back(
            {m, n, k, 1e9 * (1 + std::log2(m) + 2 * std::log2(n) + 4 * std::log2(k))});
    }
  }
  absl::StatusOr<GemmTable> t = GemmTable::Create(samples);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// SUMMA on 2x2 at 256 cubed with k in 8 steps: each rank runs 8 kernels of 128 x 128 x 32,
// each the table's time for that shape; gamma no longer applies to them.
TEST(CostModelTest, GemmTableTimesEachKernelByItsTileShape) {
  CostParams c;
  c.gamma = 1;  // would dwarf everything if it were used
  c.gemm = ShapedTable();
  const Program p =
      LowerText(kMatmul, "m=256,n=256,k=256", "x=2,y=2", ReadFile("examples/summa.trace"));
  const CostReport r = EstimateCost(p, c);
  ExpectRel(r.compute_seconds, 8 * c.gemm.Seconds(128, 128, 32));
  ExpectRel(r.seconds, r.compute_seconds);
  // The same flops in another shape take another time: a batched matmul's batch index loops
  // around GEMM calls, here 2 calls of 4 x 4 x 8 per rank on x=2.
  const Program batched =
      LowerText("C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=4,m=4,n=4,k=8", "x=2",
                "distribute([b], [bo], [bi], [x])\nshard(A, b@x)\nshard(B, b@x)\n"
                "shard(C, b@x)\ntensorize([bi, m, n, k], contraction)\n");
  ExpectRel(EstimateCost(batched, c).compute_seconds, 2 * c.gemm.Seconds(4, 4, 8));
  // Element-wise sums and products of three operands keep gamma.
  c.gamma = 1e-9;
  const Program sum = LowerText("C[m,n] = A[m,n] + B[m,n]", "m=8,n=8", "x=2",
                                "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\n"
                                "shard(B, m@x)\nshard(C, m@x)\ntensorize([mi, n], add)\n");
  ExpectRel(EstimateCost(sum, c).compute_seconds, 4 * 8 * 1e-9);
}

// Inside a loop that drives prefetched transfers the runtime runs each kernel in row
// chunks (at least 64 rows, at most 8 chunks) so that MPI progresses between them, while a
// transfer is in flight: SUMMA prefetched on 2x2, 128-row tiles, 2 chunks of 64 rows per
// kernel in steps 0 to 6; the last step (7) fetches nothing, so its kernel runs whole.
TEST(CostModelTest, PrefetchedKernelsRunInRowChunks) {
  CostParams c;
  c.gemm = ShapedTable();
  const Program plain =
      LowerText(kMatmul, "m=256,n=256,k=256", "x=2,y=2", ReadFile("examples/summa.trace"));
  const Program prefetched =
      LowerText(kMatmul, "m=256,n=256,k=256", "x=2,y=2", ReadFile("examples/summa_prefetch.trace"));
  ExpectRel(EstimateCost(plain, c).compute_seconds, 8 * c.gemm.Seconds(128, 128, 32));
  ExpectRel(EstimateCost(prefetched, c).compute_seconds,
            7 * 2 * c.gemm.Seconds(64, 128, 32) + c.gemm.Seconds(128, 128, 32));
  // With the output's reduce-scatter prefetched, step no-1's reduction is in flight at step
  // no, the last one included: all 4 kernels (256 x 64 x 64) run in 4 chunks of 64 rows.
  const Program reduced = LowerText("C[m,n] = A[m,k] * B[k,n]", "m=256,k=256,n=256", "x=4",
                                    ReadFile("examples/gemm_reducescatter.trace"));
  ExpectRel(EstimateCost(reduced, c).compute_seconds, 4 * 4 * c.gemm.Seconds(64, 64, 64));
  // Without a table there are no calls to split: gamma per flop either way.
  c.gemm = GemmTable();
  c.gamma = 1e-11;
  ExpectRel(EstimateCost(prefetched, c).compute_seconds, EstimateCost(plain, c).compute_seconds);
}

// Collectives with lines of their own: the split-k reduce-scatter and the 3D all-reduce of
// SplitKReduceScattersAndThreeDReducesOntoALayer, each its collective's line; adds land the sums.
TEST(CostModelTest, CollectivesCostTheirOwnLinesAndTheAddsThatLandThem) {
  CostParams c = CommOnly();
  absl::StatusOr<CollectiveCosts> lines =
      CollectiveCosts::Create({{{Collective::kReduceScatter, false}, {4, 7e-6, 3e-9}},
                               {{Collective::kAllReduce, false}, {2, 5e-6, 4e-9}},
                               {{Collective::kReduceScatter, true}, {4, 9e-6, 6e-9}}});
  ASSERT_TRUE(lines.ok()) << lines.status();
  c.collectives = *lines;
  c.add = 1e-10;
  const std::string split_k =
      "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
      "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n";
  const CostReport split = EstimateCost(LowerText(kMatmul, "m=16,n=8,k=32", "x=4", split_k), c);
  ASSERT_EQ(split.transfers.size(), 1u);
  // One reduce-scatter of the 512-byte box, then each rank adds its quarter.
  ExpectRel(split.transfers[0].seconds, 7e-6 + 3e-9 * 512 + 1e-10 * 512 / 4);
  const CostReport three = EstimateCost(ThreeD(kCopiesKept), c);
  ASSERT_EQ(three.transfers.size(), 3u);  // A's and B's copies, then C's all-reduce
  ExpectRel(three.transfers[2].seconds, 5e-6 + 4e-9 * 128 + 1e-10 * 128);
  // Prefetched, the reduce-scatter is the nonblocking one: 4 steps of a 4096-byte box.
  const CostReport prefetched =
      EstimateCost(LowerText("C[m,n] = A[m,k] * B[k,n]", "m=64,k=64,n=64", "x=4",
                             ReadFile("examples/gemm_reducescatter.trace")),
                   c);
  ASSERT_EQ(prefetched.transfers.size(), 1u);
  ExpectRel(prefetched.transfers[0].seconds, 4 * (9e-6 + 6e-9 * 4096 + 1e-10 * 4096 / 4));
}

// Packing: SUMMA on 2x2 with k in 8 steps broadcasts A's 128 x 32 boxes, not contiguous in
// its 128 x 128 shard, so their root packs each first (4 of the 8 steps on every rank);
// B's 32 x 128 boxes are whole rows, sent in place.
TEST(CostModelTest, BroadcastRootsPackBoxesThatAreNotContiguous) {
  CostParams c = CommOnly();
  const Program p =
      LowerText(kMatmul, "m=256,n=256,k=256", "x=2,y=2", ReadFile("examples/summa.trace"));
  const CostReport plain = EstimateCost(p, c);
  c.copy = 1e-10;
  const CostReport packed = EstimateCost(p, c);
  for (size_t r = 0; r < plain.rank_seconds.size(); ++r)
    ExpectRel(packed.rank_seconds[r] - plain.rank_seconds[r], 4 * 1e-10 * 128 * 32 * 4, 1e-9);
  ASSERT_EQ(packed.transfers.size(), 2u);
  for (const TransferCost& t : packed.transfers) {
    SCOPED_TRACE(t.tensor);
    const TransferCost& before = plain.transfers[&t - &packed.transfers[0]];
    ExpectRel(t.seconds - before.seconds, t.tensor == "A" ? 4 * 1e-10 * 16384 : 0.0, 1e-9);
  }
}

// A ring over y (size 4) turned by a loop of 4 steps, of an 8 x 4 box of A's 8 x 8 shard:
// not contiguous there, so the data the first fetch leaves in place is packed before the
// first ring step, once for the ring, not at every step.
TEST(CostModelTest, ARingPacksANonContiguousBoxOnce) {
  Program p =
      OneTransfer({Kind::kShift, {1}, 1},
                  {Expr::Var("x"),
                   Expr::Make(Expr::Op::kMod, {Expr::Var("y") + Expr::Var("ko"), Expr::Const(4)})});
  codegen::TensorInfo a;
  a.name = "A";
  a.shape = {8, 32};
  a.local_shape = {8, 8};
  p.tensors = {a};
  codegen::Transfer t =
      std::get<codegen::Transfer>(std::get<codegen::Block>(p.body->node).body[0]->node);
  t.time_loop = "ko";
  t.global.size = t.src.size = {8, 4};
  p.body = codegen::MakeStmt(codegen::For{"ko", Expr::Const(0), 4, codegen::MakeStmt(t)});
  CostParams c = CommOnly();
  const double plain = EstimateCost(p, c).seconds;
  c.copy = 1e-9;
  ExpectRel(EstimateCost(p, c).seconds - plain, 1e-9 * 8 * 4 * 4, 1e-9);
  // A whole row block is contiguous: nothing to pack.
  t.global.size = t.src.size = {4, 8};
  p.body = codegen::MakeStmt(codegen::For{"ko", Expr::Const(0), 4, codegen::MakeStmt(t)});
  c.copy = 0;
  const double rows = EstimateCost(p, c).seconds;
  c.copy = 1e-9;
  ExpectRel(EstimateCost(p, c).seconds, rows);
}

// ForRanks scales the memory passes as it scales gamma (against the calibration's load);
// the GEMM rates, measured with a core to each rank, by the run's own load.
TEST(ForRanksTest, MemoryPassesScaleLikeGammaAndGemmRatesShareTheCores) {
  CostParams p;
  p.gamma = 4e-11;
  p.copy = 2e-10;
  p.add = 3e-10;
  p.gemm = ShapedTable();
  p.cores = 2;
  p.ranks_per_node = 4;
  const CostParams two = ForRanks(p, 2);  // a core each instead of half a core
  EXPECT_EQ(two.copy, 1e-10);
  EXPECT_EQ(two.add, 1.5e-10);
  ExpectRel(two.gemm.Rate(100, 30, 20), p.gemm.Rate(100, 30, 20));
  ExpectRel(ForRanks(p, 3).gemm.Rate(100, 30, 20), p.gemm.Rate(100, 30, 20) / 1.5);
  ExpectRel(ForRanks(p, 4).gemm.Rate(100, 30, 20), p.gemm.Rate(100, 30, 20) / 2);
  ExpectRel(ForRanks(p, 64).gemm.Rate(100, 30, 20), p.gemm.Rate(100, 30, 20) / 2);
  p.cores = 8;  // never shared
  ExpectRel(ForRanks(p, 4).gemm.Rate(100, 30, 20), p.gemm.Rate(100, 30, 20));
}

}  // namespace
}  // namespace meshtune::cost
