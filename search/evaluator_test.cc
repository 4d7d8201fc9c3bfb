// The space and its evaluation: legality by per-tensor tables agrees with replaying and
// judging whole traces, counts add up, candidates are the Programs their traces lower to,
// and the classic algorithms are legal points of the space with their expected patterns.
#include "search/evaluator.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "absl/strings/str_replace.h"
#include "codegen/lower.h"
#include "ir/legality.h"
#include "ir/reason.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "search/explorer.h"
#include "tests/test_util.h"

namespace meshtune::search {
namespace {

using ::meshtune::testing::ReadFile;

ir::Problem MustParse(const std::string& expr, const std::string& extents) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

ir::Mesh MustMesh(const std::string& text) {
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

// Fixed machine numbers for every explorer of these tests.
cost::CostParams TestParams() {
  cost::CostParams params;
  params.alpha = params.alpha_coll = 1e-6;
  params.beta = params.beta_coll = 1e-9;
  params.gamma = 1e-10;
  params.overlap = 1;  // a machine that hides a transfer behind a kernel in full
  return params;
}

std::unique_ptr<Explorer> MustExplore(const ir::Problem& p, const std::vector<ir::Mesh>& meshes,
                                      const SpaceOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<Explorer>> e = Explorer::Create(p, meshes, options, TestParams());
  EXPECT_TRUE(e.ok()) << e.status();
  return *std::move(e);
}

// `trace` judged afresh on `base` and lowered, with or without offsets.
codegen::Program ReplayedProgram(const ir::Computation& base, const ir::Trace& trace,
                                 bool offsets) {
  absl::StatusOr<ir::Verdict> v = ir::Judge(base, trace);
  EXPECT_TRUE(v.ok() && v->legal) << trace.ToString();
  if (!v.ok() || !v->legal) return {};
  codegen::LowerOptions options;
  options.offsets = offsets;
  absl::StatusOr<codegen::Program> p = codegen::Lower(v->computation, options);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : codegen::Program{};
}

// Evaluator::ProgramKey of `trace` judged afresh on `base`.
std::string ReplayedKey(const ir::Computation& base, const ir::Trace& trace) {
  absl::StatusOr<ir::Verdict> v = ir::Judge(base, trace);
  if (!v.ok() || !v->legal) return "";
  // The closed forms give the costing Program (search/closed_form.h), and isl's lowering
  // outside them, as Evaluate does.
  ClosedFormLowering closed;
  absl::StatusOr<codegen::Program> p = closed.Lower(v->computation);
  if (absl::IsUnimplemented(p.status())) {
    codegen::LowerOptions options;
    options.offsets = false;
    p = codegen::Lower(v->computation, options);
  }
  if (!p.ok()) return p.status().ToString();
  return Evaluator::ProgramKey(*p, v->computation);
}

// The spaces the table and closed-form tests run on: the default one on 2x2, with
// all-to-all transfers on 2x2, and on 2x2 and 2x2x2 with distributed indices split further
// (with copies on 2x2x2). `sampled` points the table calls legal are judged whole, and
// `costed` sampled candidates compared with their replayed programs. The split cube judges
// its cells lazily as they are sampled (about 0.6 s a sampled cell on 2 cores): the suite
// samples fewer of its points; //search:evaluator_full_test samples as many as elsewhere.
struct SpaceCase {
  std::string mesh;
  SpaceOptions options;
  int sampled = 60;
  int costed = 25;
};
#ifdef MESHTUNE_WIDE_SWEEP
constexpr bool kWide = true;
#else
constexpr bool kWide = false;
#endif
std::vector<SpaceCase> SpaceCases() {
  SpaceOptions split;
  split.split_distributed = true;
  SpaceOptions split_copies = split;
  split_copies.allow_replication = true;
  SpaceOptions all_to_all;
  all_to_all.all_to_all = true;
  return {{"x=2,y=2", {}},
          {"x=2,y=2", all_to_all},
          {"x=2,y=2", split},
          {"x=2,y=2,z=2", split_copies, kWide ? 60 : 12, kWide ? 25 : 8}};
}

class SpaceCaseTest : public ::testing::TestWithParam<SpaceCase> {};

INSTANTIATE_TEST_SUITE_P(Spaces, SpaceCaseTest, ::testing::ValuesIn(SpaceCases()),
                         [](const ::testing::TestParamInfo<SpaceCase>& info) {
                           return absl::StrCat(info.param.mesh.size() > 7 ? "Cube" : "Square",
                                               info.param.options.split_distributed ? "Split" : "",
                                               info.param.options.all_to_all ? "AllToAll" : "");
                         });

TEST_P(SpaceCaseTest, TableLegalityAgreesWithJudgingWholeTraces) {
  const ir::Problem p = MustParse("C[m,n] += A[m,k] * B[k,n]", "m=16,n=16,k=16");
  std::unique_ptr<Explorer> e = MustExplore(p, {MustMesh(GetParam().mesh)}, GetParam().options);
  Evaluator& ev = e->evaluator(0);
  std::mt19937_64 rng(7);
  int legal = 0, illegal = 0;
  for (int i = 0; i < 400; ++i) {
    // Any point of the space, legal or not.
    Genome g;
    g.nest = std::uniform_int_distribution<int>(0, ev.space().nests().size() - 1)(rng);
    const NestChoices& n = ev.space().nests()[g.nest];
    g.rotation = std::uniform_int_distribution<int>(0, n.rotations.size() - 1)(rng);
    bool admissible = true;
    for (const auto& options : n.options) {
      g.options.push_back(std::uniform_int_distribution<int>(0, options.size() - 1)(rng));
      admissible &= Admissible(options[g.options.back()], n.rotations[g.rotation]);
    }
    if (!admissible || ev.RedundantRotation(g)) continue;
    const ir::Trace trace = ev.space().ToTrace(g);
    absl::StatusOr<ir::Verdict> v = ir::Judge(ev.base(), trace);
    ASSERT_TRUE(v.ok()) << v.status() << "\n" << trace.ToString();
    // A transfer from several ranks' shards is legal, but a point of the space only with
    // all_to_all.
    bool searched = v->legal;
    for (const std::string& t : v->computation.problem().Tensors()) {
      for (const ir::Rejection& r : ir::CheckTensor(v->computation, t, false).access)
        searched =
            searched && (GetParam().options.all_to_all || r.code != ir::kMultiSourceTransfer);
    }
    EXPECT_EQ(ev.Legal(g), searched) << trace.ToString();
    (searched ? legal : illegal)++;
  }
  // Legal points are rare among random ones: also the points the table calls legal.
  for (int i = 0; i < GetParam().sampled; ++i) {
    const std::optional<Point> point = e->Sample(&rng);
    ASSERT_TRUE(point.has_value());
    const ir::Trace trace = ev.space().ToTrace(point->genome);
    absl::StatusOr<ir::Verdict> v = ir::Judge(ev.base(), trace);
    ASSERT_TRUE(v.ok()) << v.status() << "\n" << trace.ToString();
    EXPECT_TRUE(v->legal) << trace.ToString();
    legal += v->legal;
  }
  // The sampled points, all legal, and the random ones that are; most random points of the
  // split cube are inadmissible or redundant (skipped), so fewer are judged illegal there.
  EXPECT_GE(legal, GetParam().sampled);
  EXPECT_GT(illegal, 30);
}

TEST_P(SpaceCaseTest, CountsAddUpAndCandidatesAreTheirTracesPrograms) {
  const ir::Problem p = MustParse("C[m,n] += A[m,k] * B[k,n]", "m=16,n=16,k=16");
  std::unique_ptr<Explorer> e = MustExplore(p, {MustMesh(GetParam().mesh)}, GetParam().options);
  const SearchCounts& k = e->counts();
  // The split spaces are judged lazily: their counts are estimates (not added up here).
  EXPECT_EQ(k.estimated, GetParam().options.split_distributed);
  if (!k.estimated) {
    int64_t pruned = 0;
    for (const auto& [reason, n] : k.pruned) pruned += n;
    EXPECT_EQ(k.enumerated, k.legal + pruned);
    EXPECT_EQ(k.pruned.count("multi_source_transfer"), GetParam().options.all_to_all ? 0u : 1u);
    EXPECT_GT(k.pruned.at("non_local_access"), 0);
    int64_t visited = 0;
    e->ForEachLegal([&](const Point&) { return ++visited > 0; });
    EXPECT_EQ(visited, k.legal);
  }

  std::mt19937_64 rng(3);
  for (int i = 0; i < GetParam().costed; ++i) {
    std::optional<Point> pt = e->Sample(&rng);
    ASSERT_TRUE(pt.has_value());
    absl::StatusOr<Candidate> c = e->evaluator(0).Evaluate(pt->genome);
    ASSERT_TRUE(c.ok()) << c.status();
    const ir::Trace trace = e->evaluator(0).space().ToTrace(pt->genome);
    EXPECT_EQ(c->program_key, ReplayedKey(e->evaluator(0).base(), trace));
    EXPECT_EQ(c->trace, trace.ToString());
    // The costing program without offsets costs what the runnable one does (up to the
    // rounding of sums taken in another order).
    const codegen::Program full = ReplayedProgram(e->evaluator(0).base(), trace, true);
    const double want = cost::EstimateCost(full, TestParams()).seconds;
    EXPECT_NEAR(c->cost.seconds, want, 1e-12 * want) << c->trace;
    EXPECT_EQ(c->cost.transfers.size(), cost::EstimateCost(full, TestParams()).transfers.size())
        << c->trace;
  }
}

TEST(EvaluatorTest, MemoryBudgetPrunesWithItsReason) {
  const ir::Problem p = MustParse("C[m,n] += A[m,k] * B[k,n]", "m=16,n=16,k=16");
  ir::Mesh mesh = MustMesh("x=2,y=2");
  // 3 tensors of 16x16 f32 are 3 KiB; each rank holds a quarter, plus transfer buffers.
  mesh.mem_per_rank_bytes = 1024;
  std::unique_ptr<Explorer> e = MustExplore(p, {mesh});
  EXPECT_GT(e->counts().pruned.at("over_memory_budget"), 0);
  EXPECT_GT(e->counts().legal, 0);
  e->ForEachLegal([&](const Point& pt) {
    absl::StatusOr<ir::Verdict> v =
        ir::Judge(e->evaluator(0).base(), e->evaluator(0).space().ToTrace(pt.genome));
    EXPECT_TRUE(v.ok() && v->legal);
    return true;
  });
}

// A classic schedule: its trace, the mesh, and the patterns it must lower to.
struct Classic {
  std::string name, expr, extents, mesh, trace;
  std::vector<std::string> patterns;
  bool replication = false;
  bool split = false;  // SpaceOptions::split_distributed: not in the space without it
  bool steps = false;  // SpaceOptions::rotation_steps: not in the space without it
};

// The reference traces of examples/ adapted to an s x s mesh.
std::string OnSquare(const std::string& file, int s) {
  return absl::StrReplaceAll(
      ReadFile("examples/" + file),
      {{"divide(k, ko, ki, 8)", "divide(k, ko, ki, " + std::to_string(s) + ")"},
       {"%8", "%" + std::to_string(s)}});
}

// The classic algorithms and the reference traces of examples/, each with its patterns.
std::vector<Classic> Classics() {
  const std::string mm = "C[m,n] += A[m,k] * B[k,n]";
  return {
      {"1D tensor parallel",
       mm,
       "m=32,n=32,k=32",
       "x=4",
       "distribute([n], [no], [ni], [x])\nshard(B, n@x)\nshard(C, n@x)\ntensorize([m, ni, k], "
       "matmul)\n",
       {"A@copies Broadcast(axes=[0])"},  // A on every rank: its copies are broadcast
       true},
      {"AllGather-GEMM",
       "C[m,n] = A[k,m] * B[k,n]",
       "m=32,n=32,k=32",
       "x=4",
       ReadFile("examples/allgather_gemm.trace"),
       {"B@no Broadcast(axes=[0])"}},
      {"SUMMA",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2",
       OnSquare("summa.trace", 2),
       {"A@ko Broadcast(axes=[1])", "B@ko Broadcast(axes=[0])"}},
      {"PUMMA",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2",
       OnSquare("pumma.trace", 2),
       {"A@ko Shift(axis=1, +1)", "B@ko Broadcast(axes=[0])"}},
      {"Cannon",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2",
       OnSquare("cannon.trace", 2),
       {"A@ko Shift(axis=1, +1)", "B@ko Shift(axis=0, +1)"}},
      {"3D",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2,z=2",
       "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\n"
       "shard(C, m@x, n@y)\nshard(A, m@x, k@z)\nshard(B, k@z, n@y)\n"
       "communicate(C, ki)\ntensorize([mi, ni, ki], matmul)\n",
       {"A@copies Broadcast(axes=[1])", "B@copies Broadcast(axes=[0])", "C@ki AllReduce(axes=[2])"},
       true},
      {"3D without copies",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2,z=2",
       "distribute([k,m,n], [ko,mo,no], [ki,mi,ni], [x,y,z])\n"
       "shard(C, m@y, m@x, n@z)\nshard(A, m@y, m@z, k@x)\nshard(B, k@x, k@y, n@z)\n"
       "communicate(C, ki)\ncommunicate(A, ki)\ncommunicate(B, ki)\ntensorize([mi, ni, ki], "
       "matmul)\n",
       {"A@ki AllGather(axes=[2])", "B@ki AllGather(axes=[1])", "C@ki ReduceScatter(axes=[0])"}},
      {"SUMMA prefetched",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2",
       OnSquare("summa_prefetch.trace", 2),
       {"A@ko Broadcast(axes=[1])", "B@ko Broadcast(axes=[0])"}},
      {"AllGather-GEMM, a prefetched ring",
       "C[m,n] = A[k,m] * B[k,n]",
       "m=32,n=32,k=32",
       "x=4",
       ReadFile("examples/allgather_gemm_prefetch.trace"),
       {"B@no Shift(axis=0, +1)"}},
      {"GEMM-ReduceScatter, the output prefetched",
       "C[m,n] = A[m,k] * B[k,n]",
       "m=32,n=32,k=32",
       "x=4",
       ReadFile("examples/gemm_reducescatter.trace"),
       {"C@no ReduceScatter(axes=[0])"}},
      {"GEMM-ReduceScatter as a ring: C's partial sums passed from rank to rank",
       "C[m,n] = A[m,k] * B[k,n]",
       "m=32,n=32,k=32",
       "x=4",
       ReadFile("examples/gemm_ring_reducescatter.trace"),
       {"C@no RingReduce(axis=0, -1, hop)"}},
  };
}

// The families that need split distributed indices or rotation steps (search/space.h).
std::vector<Classic> SplitAndStepFamilies() {
  const std::string mm = "C[m,n] += A[m,k] * B[k,n]";
  return {
      {"Tesseract: rows over x and again over the depth z, SUMMA in each layer",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2,z=2",
       ReadFile("examples/tesseract.trace"),
       {"B@copies Broadcast(axes=[2])", "A@ko Broadcast(axes=[1])", "B@ko Broadcast(axes=[0])"},
       true,
       true},
      {"2.5D with steps: k over the layers, then in steps inside each",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2,z=2",
       ReadFile("examples/summa_25d.trace"),
       {"A@ko2 Broadcast(axes=[1])", "B@ko2 Broadcast(axes=[0])", "C@mi ReduceScatter(axes=[2])"},
       false,
       true},
      {"2.5D with copies: A and B broadcast from one layer, C all-reduced into every copy",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2,z=2",
       ReadFile("examples/summa_25d_copies.trace"),
       {"A@copies Broadcast(axes=[2])", "B@copies Broadcast(axes=[2])", "A@ko2 Broadcast(axes=[1])",
        "B@ko2 Broadcast(axes=[0])", "C@mi AllReduce(axes=[2])"},
       true,
       true},
      {"2.5D Cannon: skewed inside each layer, rotated by the layer's two axes",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2,z=2",
       ReadFile("examples/cannon_25d.trace"),
       {"A@ko2 Shift(axis=1, +1)", "B@ko2 Shift(axis=0, +1)", "C@mi ReduceScatter(axes=[2])"},
       false,
       true},
      {"PUMMA in steps of 2: each rank starts with the k blocks it holds",
       mm,
       "m=32,n=32,k=32",
       "x=2,y=2",
       ReadFile("examples/pumma_steps.trace"),
       {"A@ko SendRecv", "B@ko Broadcast(axes=[0])"},
       false,
       false,
       true},
  };
}

TEST(EvaluatorTest, SpaceHoldsTheClassicAlgorithms) {
  std::vector<Classic> all = Classics();
  for (Classic& c : SplitAndStepFamilies()) all.push_back(std::move(c));
  for (const Classic& c : all) {
    SCOPED_TRACE(c.name);
    const ir::Problem p = MustParse(c.expr, c.extents);
    SpaceOptions options;
    options.allow_replication = c.replication;
    absl::StatusOr<ir::Trace> trace = ir::ParseTrace(c.trace);
    ASSERT_TRUE(trace.ok()) << trace.status();
    if (c.split || c.steps) {
      EXPECT_FALSE(MustExplore(p, {MustMesh(c.mesh)}, options)
                       ->evaluator(0)
                       .space()
                       .Find(*trace)
                       .has_value())
          << "in the space without split_distributed or rotation_steps:\n"
          << c.trace;
      options.split_distributed = c.split;
      options.rotation_steps = c.steps;
    }
    std::unique_ptr<Explorer> e = MustExplore(p, {MustMesh(c.mesh)}, options);
    Evaluator& ev = e->evaluator(0);
    std::optional<Genome> g = ev.space().Find(*trace);
    ASSERT_TRUE(g.has_value()) << "not in the space:\n" << c.trace;
    ASSERT_TRUE(ev.Legal(*g)) << c.trace;
    absl::StatusOr<Candidate> cand = ev.Evaluate(*g);
    ASSERT_TRUE(cand.ok()) << cand.status();
    EXPECT_EQ(cand->patterns, c.patterns);
    EXPECT_EQ(cand->program_key, ReplayedKey(ev.base(), *trace));
    EXPECT_EQ(cand->cost.seconds,
              cost::EstimateCost(ReplayedProgram(ev.base(), *trace, true), TestParams()).seconds);
  }
}

TEST(EvaluatorTest, PrefetchIsAllOrNonePerRotationAndCostsLess) {
  const ir::Problem p = MustParse("C[m,n] += A[m,k] * B[k,n]", "m=32,n=32,k=32");
  std::unique_ptr<Explorer> e = MustExplore(p, {MustMesh("x=2,y=2")});
  Evaluator& ev = e->evaluator(0);
  // A nest with a time loop has each rotation twice, the second time prefetched; a nest
  // without one never prefetches.
  for (const NestChoices& n : ev.space().nests()) {
    const size_t r = n.rotations.size();
    if (n.nest.serial.empty()) {
      EXPECT_EQ(r, 1u);
      EXPECT_FALSE(n.rotations[0].prefetch);
      continue;
    }
    ASSERT_EQ(r % 2, 0u);
    for (size_t i = 0; i < r / 2; ++i) {
      EXPECT_FALSE(n.rotations[i].prefetch);
      EXPECT_TRUE(n.rotations[r / 2 + i].prefetch);
      EXPECT_EQ(n.rotations[r / 2 + i].loop, n.rotations[i].loop);
      EXPECT_EQ(n.rotations[r / 2 + i].by, n.rotations[i].by);
    }
  }
  // SUMMA and its prefetched form: one nest, two rotations, distinct programs, the
  // prefetched one cheaper (gamma > 0).
  absl::StatusOr<ir::Trace> plain = ir::ParseTrace(OnSquare("summa.trace", 2));
  absl::StatusOr<ir::Trace> twin = ir::ParseTrace(OnSquare("summa_prefetch.trace", 2));
  ASSERT_TRUE(plain.ok() && twin.ok());
  std::optional<Genome> gp = ev.space().Find(*plain), gt = ev.space().Find(*twin);
  ASSERT_TRUE(gp.has_value() && gt.has_value());
  EXPECT_EQ(gp->nest, gt->nest);
  EXPECT_EQ(gp->options, gt->options);
  EXPECT_NE(gp->rotation, gt->rotation);
  const std::string text = ev.space().ToTrace(*gt).ToString();
  EXPECT_NE(text.find("communicate(A, ko, prefetch=1)\ncommunicate(B, ko, prefetch=1)\n"),
            std::string::npos)
      << text;
  absl::StatusOr<Candidate> cp = ev.Evaluate(*gp), ct = ev.Evaluate(*gt);
  ASSERT_TRUE(cp.ok() && ct.ok());
  EXPECT_NE(cp->program_key, ct->program_key);
  EXPECT_LT(ct->cost.seconds, cp->cost.seconds);
  EXPECT_GT(ct->cost.overlap_seconds, 0);
  // Measurement tells a schedule and its prefetched twin apart: two families.
  EXPECT_EQ(FamilyOf(*cp, ev.base().mesh()), "x=2,y=2: A Broadcast(y); B Broadcast(x)");
  EXPECT_EQ(FamilyOf(*ct, ev.base().mesh()),
            "x=2,y=2: A Broadcast(y) prefetched; B Broadcast(x) prefetched");
  // Prefetching one of two communicates at a time loop is not a point of the space, nor is
  // a prefetch at the kernel's outermost loop; a prefetched point with nothing at a time
  // loop is the unprefetched one.
  std::string one = OnSquare("summa.trace", 2);
  one.replace(one.find("communicate(A, ko)"), 18, "communicate(A, ko, prefetch=1)");
  absl::StatusOr<ir::Trace> half = ir::ParseTrace(one);
  ASSERT_TRUE(half.ok());
  EXPECT_FALSE(ev.space().Find(*half).has_value());
  Genome redundant = *gt;
  redundant.options.assign(redundant.options.size(), 0);  // nothing communicated
  EXPECT_TRUE(ev.RedundantRotation(redundant));
  EXPECT_FALSE(ev.Legal(redundant));
}

}  // namespace
}  // namespace meshtune::search
