// The reference schedules of docs/design.md are legal; the illegal examples are rejected with
// the right reason codes and messages that name a witness.
#include "ir/legality.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_replace.h"
#include "ir/legality_closed_form.h"
#include "ir/transfer.h"
#include "ir/verdict.h"
#include "tests/test_util.h"

namespace meshtune::ir {
namespace {

using ::meshtune::testing::ReadFile;

Verdict JudgeText(const std::string& expr, const std::string& extents, const std::string& mesh,
                  const std::string& trace) {
  absl::StatusOr<Problem> p = ParseProblem(expr, extents);
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<Mesh> m = ParseMesh(mesh);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<Computation> c = Computation::Create(*p, *m);
  EXPECT_TRUE(c.ok()) << c.status();
  absl::StatusOr<Trace> t = ParseTrace(trace);
  EXPECT_TRUE(t.ok()) << t.status();
  absl::StatusOr<Verdict> v = Judge(*c, *t);
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

Verdict JudgeFile(const std::string& expr, const std::string& extents, const std::string& mesh,
                  const std::string& trace_file) {
  return JudgeText(expr, extents, mesh, ReadFile("examples/" + trace_file));
}

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kMatmulExtents[] = "m=512,n=1024,k=2048";

std::string Reasons(const Verdict& v) {
  std::string s;
  for (const Rejection& r : v.reasons) s += "[" + r.code + "] " + r.message + "\n";
  return s;
}

// That `v` is illegal for one reason alone: `code`, with `message`.
void ExpectOneReason(const Verdict& v, absl::string_view code, const std::string& message) {
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, code);
  EXPECT_EQ(v.reasons[0].message, message);
}

TEST(LegalityTest, ReferenceSchedulesAreLegal) {
  for (const char* f : {"summa.trace", "pumma.trace", "cannon.trace"}) {
    const Verdict v = JudgeFile(kMatmul, kMatmulExtents, "x=8,y=8", f);
    EXPECT_TRUE(v.legal) << f << "\n" << Reasons(v);
  }
  const Verdict ag =
      JudgeFile("C[m,n] = A[k,m] * B[k,n]", "m=2048,k=1024,n=4096", "x=4", "allgather_gemm.trace");
  EXPECT_TRUE(ag.legal) << Reasons(ag);
}

TEST(LegalityTest, ReferenceSchedulesAreLegalOnSmallMeshes) {
  // The seed notebook's traces (docs/design.md) divide k by 8; on 2x2 the same trace shape with
  // divide 2 is SUMMA.
  absl::StatusOr<Problem> p = ParseProblem(kMatmul, "m=64,n=64,k=64");
  ASSERT_TRUE(p.ok());
  absl::StatusOr<Mesh> m = ParseMesh("x=2,y=2");
  ASSERT_TRUE(m.ok());
  absl::StatusOr<Computation> c = Computation::Create(*p, *m);
  ASSERT_TRUE(c.ok());
  absl::StatusOr<Trace> t = ParseTrace(
      "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 2)\n"
      "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@(x+y)%2)\nshard(B, k@(x+y)%2, n@y)\n"
      "shard(C, m@x, n@y)\ncommunicate(A, ko, rotate=[mo,no])\ncommunicate(B, ko, rotate=[mo,no])\n"
      "tensorize([mi, ni, ki], matmul)\n");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<Verdict> v = Judge(*c, *t);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->legal) << Reasons(*v);
}

// Each fetched block of A spans two ranks along y (and of B two along x): legal, an
// all-to-all exchange; the tensor's own checks still say so, for the search, which takes
// such points only with SpaceOptions::all_to_all.
TEST(LegalityTest, CoarseDivideMakesTheTransferAnAllToAll) {
  const Verdict v = JudgeFile(kMatmul, kMatmulExtents, "x=8,y=8", "summa_straddling.trace");
  EXPECT_TRUE(v.legal) << Reasons(v);
  const LegalityCache::TensorChecks a = CheckTensor(v.computation, "A", /*messages=*/true);
  ASSERT_EQ(a.access.size(), 1u);
  EXPECT_EQ(a.access[0].code, kMultiSourceTransfer);
  EXPECT_EQ(
      a.access[0].message,
      "communicate(A, ko): at ko=0 rank (x=0, y=0) needs A[0:64, 0:512], which lives on several "
      "ranks, e.g. (x=0, y=0) and (x=0, y=1); it takes an all-to-all exchange");
  const LegalityCache::TensorChecks b = CheckTensor(v.computation, "B", /*messages=*/false);
  ASSERT_EQ(b.access.size(), 1u);
  EXPECT_EQ(b.access[0].code, kMultiSourceTransfer);
}

TEST(LegalityTest, MissingCommunicateIsANonLocalAccess) {
  const Verdict v = JudgeFile(kMatmul, kMatmulExtents, "x=8,y=8", "summa_no_comm_a.trace");
  ASSERT_FALSE(v.legal);
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, kNonLocalAccess);
  EXPECT_EQ(
      v.reasons[0].message,
      "rank (x=0, y=0) reads A[0, 256], which rank (x=0, y=1) holds, not it; communicate it, or "
      "shard A to match the computation");
}

TEST(LegalityTest, SplitKWithoutReductionIsUnreduced) {
  const std::string trace = "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\n";
  const Verdict v = JudgeText(kMatmul, "m=8,n=8,k=16", "x=4", trace);
  ASSERT_FALSE(v.legal);
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, kUnreducedOutput);
  EXPECT_EQ(
      v.reasons[0].message,
      "C[0, 0] is held by rank (x=0) but its update at (k=4, m=0, n=0) runs on rank (x=1): an "
      "output written by several ranks needs communicate(C, <loop>) to reduce it");
  // With the reduction it is legal.
  const Verdict ok = JudgeText(kMatmul, "m=8,n=8,k=16", "x=4", trace + "communicate(C, m)\n");
  EXPECT_TRUE(ok.legal) << Reasons(ok);
}

TEST(LegalityTest, UnownedElementsAreRejected) {
  const Verdict v = JudgeText(kMatmul, "m=8,n=8,k=16", "x=4", "shard(A, k@(2*x)%8)\n");
  ASSERT_GE(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0].code, kUnownedElement);
  EXPECT_EQ(v.reasons[0].message,
            "A[0, 2] is held by no rank: shard(A, k@(2*x)%8) leaves blocks that no mesh coordinate "
            "maps to");
}

TEST(LegalityTest, OutputWrittenAwayFromItsHolderIsNonLocal) {
  const Verdict v = JudgeText(kMatmul, "m=8,n=8,k=16", "x=4",
                              "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, n@x)\n");
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, kNonLocalAccess);
  EXPECT_EQ(v.reasons[0].message,
            "rank (x=0) writes C[0, 2], which rank (x=1) holds, not it; communicate the output to "
            "reduce it to its holders, or shard C to match the computation");
}

TEST(LegalityTest, ReductionOfDifferentBlocksAcrossItsGroupIsMisaligned) {
  // k over y, and n rotated by mo + ko: at each no the two ranks of a y group hold partial
  // sums of different column blocks of C. (Reducing them hung under MPI: the ranks
  // disagreed on the roots.)
  const Verdict v = JudgeText(kMatmul, "m=64,n=64,k=64", "x=2,y=2",
                              "distribute([m,k], [mo,ko], [mi,ki], [x,y])\n"
                              "divide(n, no, ni, 2)\n"
                              "reorder(mo, ko, no, mi, ni, ki)\n"
                              "shard(C, m@x, n@y)\n"
                              "shard(A, m@(x+y)%2, k@y)\n"
                              "shard(B, k@x, n@y)\n"
                              "communicate(C, no, rotate=[mo,ko])\n"
                              "communicate(A, no, rotate=[mo,ko])\n"
                              "communicate(B, no, rotate=[mo,ko])\n"
                              "tensorize([mi, ni, ki], matmul)\n");
  // The partial sums do pass around a ring along y, but the rows x=0 would end one step
  // before their holders and the rows x=1 on them.
  ExpectOneReason(
      v, kMisalignedReduction,
      "communicate(C, no): the partial sums of C pass around a ring along y (to the "
      "neighbour at +1 each step), but at no=1 rank (x=1, y=0) ends with C[32:64, 0:32], "
      "which it holds, and rank (x=0, y=0) with C[0:32, 32:64], which its neighbour holds; "
      "a ring must end alike on every rank");
}

TEST(LegalityTest, PartialSumsThatMoveAsNoRingAreMisaligned) {
  // The ring of examples/gemm_ring_reducescatter.trace turned in steps of 2 over 8 column
  // blocks: rank x computes block (no + 2x) % 8, which no neighbour computes next.
  const Verdict v =
      JudgeText(kMatmul, "m=8,n=16,k=8", "x=4",
                absl::StrReplaceAll(ReadFile("examples/gemm_ring_reducescatter.trace"),
                                    {{"divide(n, no, ni, 4)", "divide(n, no, ni, 8)"},
                                     {"rotate=[ko])", "rotate=[ko], step=2)"}}));
  ExpectOneReason(
      v, kMisalignedReduction,
      "communicate(C, no): at no=0 rank (x=0) holds partial sums of C[0:8, 0:2] but rank "
      "(x=1) of its reduction group along x holds C[0:8, 4:6]; a reduction adds up the "
      "same elements across the group");
}

// GEMM-ReduceScatter as a ring (examples/gemm_ring_reducescatter.trace): at step no rank x
// adds the partial sums of column block (x + no) % 4 and passes them to x - 1. In C's block
// layout they end one step before their holder (the last step takes them there); in the
// layout skewed by one they end on it; skewed by two, on neither.
TEST(LegalityTest, OutputPassedAroundARing) {
  const std::string ring = ReadFile("examples/gemm_ring_reducescatter.trace");
  const Verdict block = JudgeText(kMatmul, "m=8,n=16,k=8", "x=4", ring);
  EXPECT_TRUE(block.legal) << Reasons(block);
  const auto skewed = [&](const std::string& target) {
    return JudgeText(kMatmul, "m=8,n=16,k=8", "x=4",
                     absl::StrReplaceAll(ring, {{"shard(C, n@x)", "shard(C, n@" + target + ")"}}));
  };
  const Verdict home = skewed("(x+3)%4");
  EXPECT_TRUE(home.legal) << Reasons(home);
  const Verdict away = skewed("(x+2)%4");
  ExpectOneReason(
      away, kMisalignedReduction,
      "communicate(C, no): the partial sums of C pass around a ring along x (to the "
      "neighbour at -1 each step), but at no=3 rank (x=0) ends with C[0:8, 12:16], whose "
      "element C[0, 12] is held by rank (x=1), neither it nor its neighbour; a ring must "
      "end on the holders");
  // A ring cannot overlap its steps: each adds into what the one before sent.
  const Verdict pf =
      JudgeText(kMatmul, "m=8,n=16,k=8", "x=4",
                absl::StrReplaceAll(ring, {{"rotate=[ko])", "rotate=[ko], prefetch=1)"}}));
  ExpectOneReason(
      pf, kNothingToOverlap,
      "communicate(C, no, prefetch=1): the partial sums of C pass around a ring, and each "
      "step adds into what the step before sent, so there is no next step to overlap the "
      "reduction with; drop prefetch");
  // Copies of C along y (every y computes the same): a ring ends on one holder.
  const Verdict copies = JudgeText(kMatmul, "m=8,n=16,k=8", "x=4,y=2", ring);
  ExpectOneReason(
      copies, kMisalignedReduction,
      "communicate(C, no): the partial sums of C pass around a ring along x (to the "
      "neighbour at -1 each step), but C has copies along y; a ring ends on the one rank "
      "that holds each element");
}

TEST(LegalityTest, ReducedOutputMustReachEveryHolder) {
  // k over y reduces within each row of the mesh, but C's row blocks live on the other
  // axis: rank (x=0, y=1) holds rows that the ranks (x=1, *) compute.
  const Verdict v = JudgeText(kMatmul, "m=8,n=8,k=8", "x=2,y=2",
                              "distribute([m,k], [mo,ko], [mi,ki], [x,y])\nshard(A, m@x, k@y)\n"
                              "shard(B, k@y)\nshard(C, m@y)\ncommunicate(C, mi)\n");
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, kUnreducedOutput);
  EXPECT_EQ(v.reasons[0].message,
            "C[4, 0] is held by rank (x=0, y=1) but its update at (k=0, m=4, n=0) runs on rank "
            "(x=1, y=0), "
            "outside its reduction group along y");
}

TEST(LegalityTest, CommunicatedOutputWithoutReductionStaysLocal) {
  // No reduction index is distributed, so the buffer only stages the rank's own writes.
  const Verdict v = JudgeText(kMatmul, "m=8,n=8,k=16", "x=4",
                              "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, n@x)\n"
                              "communicate(C, mi)\n");
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, kNonLocalAccess);
  EXPECT_EQ(v.reasons[0].message,
            "rank (x=0) writes C[0, 2], which rank (x=1) holds, not it; communicate the output to "
            "reduce it to its holders, or shard C to match the computation");
}

TEST(LegalityTest, GatherOfADimSplitOverTwoAxes) {
  // A's rows are split over x then y; each rank needs the 32 rows of its x block, held by
  // the two ranks along y: an all-gather, though the holders' x and y are tied together.
  const Verdict v =
      JudgeText(kMatmul, "m=64,n=64,k=64", "x=2,y=2,z=2",
                "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\n"
                "shard(C, m@x, n@y, n@z)\nshard(A, m@x, m@y, k@z)\nshard(B, k@z, k@x, n@y)\n"
                "communicate(C, ki)\ncommunicate(A, ki)\ncommunicate(B, ki)\n"
                "tensorize([mi, ni, ki], matmul)\n");
  EXPECT_TRUE(v.legal) << Reasons(v);
  const Communication* a = v.computation.TransferOf("A");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(GatherAxes(v.computation, *a), std::vector<int>{1});
  const Communication* b = v.computation.TransferOf("B");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(GatherAxes(v.computation, *b), std::vector<int>{0});
}

TEST(LegalityTest, MemoryBudgetCountsShardsAndBuffers) {
  absl::StatusOr<Problem> p = ParseProblem(kMatmul, kMatmulExtents);
  ASSERT_TRUE(p.ok());
  absl::StatusOr<Mesh> m = ParseMesh("x=8,y=8");
  ASSERT_TRUE(m.ok());
  absl::StatusOr<Computation> c = Computation::Create(*p, *m);
  ASSERT_TRUE(c.ok());
  absl::StatusOr<Trace> t = ParseTrace(ReadFile("examples/summa.trace"));
  ASSERT_TRUE(t.ok());
  absl::StatusOr<Verdict> v = Judge(*c, *t);
  ASSERT_TRUE(v.ok());
  // f32 shards A 64x256, B 256x128, C 64x128 (224 KiB); buffers A 64x256, B 256x128 (192 KiB).
  const Footprint f = ComputeFootprint(v->computation);
  EXPECT_EQ(f.shard_bytes, 4 * (64 * 256 + 256 * 128 + 64 * 128));
  EXPECT_EQ(f.buffer_bytes, 4 * (64 * 256 + 256 * 128));
  m->mem_per_rank_bytes = 300 * 1024;
  c = Computation::Create(*p, *m);
  v = Judge(*c, *t);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->reasons.size(), 1u);
  EXPECT_EQ(v->reasons[0].code, kOverMemoryBudget);
  EXPECT_EQ(v->reasons[0].message,
            "per-rank footprint 416 KiB (shards 224 KiB, transfer buffers 192 KiB) exceeds the "
            "memory budget of 300 KiB");
}

TEST(LegalityTest, PrefetchedReferenceSchedulesAreLegal) {
  const Verdict summa = JudgeFile(kMatmul, kMatmulExtents, "x=8,y=8", "summa_prefetch.trace");
  EXPECT_TRUE(summa.legal) << Reasons(summa);
  const Verdict ring = JudgeFile("C[m,n] = A[k,m] * B[k,n]", "m=2048,k=1024,n=4096", "x=4",
                                 "allgather_gemm_prefetch.trace");
  EXPECT_TRUE(ring.legal) << Reasons(ring);
  const Verdict rs = JudgeFile("C[m,n] = A[m,k] * B[k,n]", "m=2048,k=1024,n=4096", "x=4",
                               "gemm_reducescatter.trace");
  EXPECT_TRUE(rs.legal) << Reasons(rs);
  ASSERT_NE(rs.computation.TransferOf("C"), nullptr);
  EXPECT_EQ(rs.computation.TransferOf("C")->prefetch, 1);
}

TEST(LegalityTest, PrefetchAtALoopOfOneIterationHasNothingToOverlap) {
  std::string trace = ReadFile("examples/summa_prefetch.trace");
  trace.replace(trace.find("divide(k, ko, ki, 8)"), 20, "divide(k, ko, ki, 1)");
  trace.replace(trace.find("communicate(B, ko, prefetch=1)"), 30, "communicate(B, ko)");
  const Verdict v = JudgeText(kMatmul, kMatmulExtents, "x=8,y=8", trace);
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, kNothingToOverlap);
  EXPECT_EQ(v.reasons[0].message,
            "communicate(A, ko, prefetch=1): loop ko has one iteration, so there is no next step "
            "to overlap the transfer with; prefetch at a loop of several iterations");
  // The output's reduction alike.
  const Verdict out = JudgeText(kMatmul, "m=8,n=8,k=16", "x=4",
                                "distribute([k], [ko], [ki], [x])\ndivide(n, no, ni, 1)\n"
                                "reorder(ko, no, m, ni, ki)\nshard(A, k@x)\nshard(B, k@x)\n"
                                "shard(C, m@x)\ncommunicate(C, no, prefetch=1)\n"
                                "tensorize([m, ni, ki], matmul)\n");
  ASSERT_EQ(out.reasons.size(), 1u) << Reasons(out);
  EXPECT_EQ(out.reasons[0].code, kNothingToOverlap);
  EXPECT_EQ(out.reasons[0].message,
            "communicate(C, no, prefetch=1): loop no has one iteration, so there is no next step "
            "to overlap the reduction with; prefetch at a loop of several iterations");
}

TEST(LegalityTest, PrefetchAtTheKernelsOutermostLoopHasNothingToOverlap) {
  // A transfer at the kernel's outermost loop serves one kernel call: no loop of its own.
  const Verdict v =
      JudgeText(kMatmul, "m=16,n=12,k=8", "x=2,y=2",
                "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
                "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
                "communicate(A, mi, prefetch=1)\ncommunicate(B, mi)\n"
                "tensorize([mi, ni, k], matmul)\n");
  ASSERT_EQ(v.reasons.size(), 1u) << Reasons(v);
  EXPECT_EQ(v.reasons[0].code, kNothingToOverlap);
  EXPECT_EQ(v.reasons[0].message,
            "communicate(A, mi, prefetch=1): loop mi is the kernel's outermost loop, so one "
            "transfer serves the whole kernel call and there is no next step to overlap it with; "
            "prefetch at a serial loop of several iterations");
}

TEST(LegalityTest, APrefetchedBufferCountsTwiceInTheMemoryBudget) {
  absl::StatusOr<Problem> p = ParseProblem(kMatmul, kMatmulExtents);
  ASSERT_TRUE(p.ok());
  absl::StatusOr<Mesh> m = ParseMesh("x=8,y=8");
  ASSERT_TRUE(m.ok());
  absl::StatusOr<Trace> t = ParseTrace(ReadFile("examples/summa_prefetch.trace"));
  ASSERT_TRUE(t.ok());
  // Shards 224 KiB as in SUMMA; the buffers' two halves 2 * 192 KiB.
  m->mem_per_rank_bytes = 500 * 1024;  // SUMMA's 416 KiB fit, 608 KiB do not
  absl::StatusOr<Computation> c = Computation::Create(*p, *m);
  ASSERT_TRUE(c.ok());
  absl::StatusOr<Verdict> v = Judge(*c, *t);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(ComputeFootprint(v->computation).buffer_bytes, 2 * 4 * (64 * 256 + 256 * 128));
  ASSERT_EQ(v->reasons.size(), 1u);
  EXPECT_EQ(v->reasons[0].code, kOverMemoryBudget);
  EXPECT_EQ(v->reasons[0].message,
            "per-rank footprint 608 KiB (shards 224 KiB, transfer buffers 384 KiB) exceeds the "
            "memory budget of 500 KiB");
  // The same through a cache: the prefetched transfer's checks derive from the plain ones.
  LegalityCache cache;
  EXPECT_EQ(CheckLegality(v->computation, &cache), v->reasons);
  absl::StatusOr<Trace> plain = ParseTrace(ReadFile("examples/summa.trace"));
  ASSERT_TRUE(plain.ok());
  v = Judge(*c, *plain);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->legal) << Reasons(*v);
  EXPECT_TRUE(CheckLegality(v->computation, &cache).empty());
}

TEST(LegalityTest, ADivideThatDoesNotDivideIsLegal) {
  const Verdict v = JudgeText(kMatmul, "m=8,n=8,k=16", "x=4", "divide(k, ko, ki, 3)\n");
  EXPECT_TRUE(v.legal) << Reasons(v);
}

TEST(LegalityTest, LoopsReachingPastAShardsBlocksAreAnOverhang) {
  // m = 10: the loops over x = 4 make blocks of 3 (reaching 12), A's blocks over y = 2 end at
  // 10, so the box of the last block would lie past A's storage there.
  const Verdict v = JudgeText(kMatmul, "m=10,n=4,k=4", "x=4,y=2",
                              "distribute([m], [mo], [mi], [x])\nshard(A, m@y)\n");
  ASSERT_FALSE(v.legal);
  EXPECT_EQ(v.reasons[0].code, kOverhang);
  EXPECT_EQ(v.reasons[0].message,
            "the loops over m reach 12, past the 10 elements the blocks of A's dim m cover");
}

// The codes of `rejections`, in order.
std::vector<std::string> Codes(const std::vector<Rejection>& rejections) {
  std::vector<std::string> out;
  for (const Rejection& r : rejections) out.push_back(r.code);
  return out;
}

// Ownership by enumerating ranks agrees with isl for layouts the search never generates:
// (2*x) numbers blocks 0 and 2 of 3, leaving block 1 to no rank; (x+y) numbers all 3, but
// not every pair with y (x+y = 0 only where y = 0).
TEST(LegalityClosedFormTest, OwnershipOfAnyLayoutAsIsl) {
  for (const auto& [layout, owned] :
       std::vector<std::pair<std::string, bool>>{{"m@(2*x), k@y", false},
                                                 {"m@(x+y), k@y", false},
                                                 {"m@(x+y)", true},
                                                 {"m@x, m@y", true},
                                                 {"k@(x+y)%2", true},
                                                 {"m@(x+1)", true}}) {
    const Verdict v = JudgeText(kMatmul, "m=12,n=4,k=4", "x=2,y=2", "shard(A, " + layout + ")\n");
    const std::optional<std::vector<Rejection>> fast = ClosedFormOwnership(v.computation, "A");
    ASSERT_TRUE(fast.has_value()) << layout;
    const LegalityCache::TensorChecks isl = CheckTensor(v.computation, "A", /*messages=*/false);
    EXPECT_EQ(Codes(*fast), Codes(isl.ownership)) << layout;
    EXPECT_EQ(fast->empty(), owned) << layout;
  }
}

// Outside the forms the closed forms answer nothing and isl decides: a tensor read twice, a
// mesh with a memory budget (isl measures the transfer buffers), a layout numbered by
// (x+y) without a modulus.
TEST(LegalityClosedFormTest, OutsideTheFormsIslDecides) {
  const Verdict twice = JudgeText("C[m,n] += A[m,k] * A[k,n]", "m=4,n=4,k=4", "x=2",
                                  "shard(A, m@x)\nshard(C, m@x)\n");
  EXPECT_FALSE(ClosedFormAccess(twice.computation, "A").has_value());
  EXPECT_TRUE(ClosedFormAccess(twice.computation, "C").has_value());
  const Verdict sum = JudgeText(kMatmul, "m=12,n=4,k=4", "x=2,y=2", "shard(A, m@(x+y), k@y)\n");
  EXPECT_FALSE(ClosedFormAccess(sum.computation, "A").has_value());
  absl::StatusOr<Problem> p = ParseProblem(kMatmul, "m=8,n=8,k=8");
  absl::StatusOr<Mesh> m = ParseMesh("x=2");
  ASSERT_TRUE(p.ok() && m.ok());
  m->mem_per_rank_bytes = 1 << 20;
  absl::StatusOr<Computation> c = Computation::Create(*p, *m);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(ClosedFormAccess(*c, "A").has_value());
  EXPECT_TRUE(ClosedFormOwnership(*c, "A").has_value());
}

}  // namespace
}  // namespace meshtune::ir
