// What the tuner measures: schedule families (FamilyOf) and the choice of the K to measure
// (ChooseToMeasure, Explorer::ToMeasure), on hand-built candidates and on a small real space.
#include "search/explorer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "codegen/program.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "search/schedule_class.h"

namespace meshtune::search {
namespace {

using Kind = codegen::CommPattern::Kind;

cost::TransferCost Comm(const std::string& tensor, const std::string& loop, Kind kind,
                        std::vector<int> axes, int shift = 0) {
  cost::TransferCost t;
  t.tensor = tensor;
  t.loop = loop;
  t.pattern.kind = kind;
  t.pattern.axes = std::move(axes);
  t.pattern.shift = shift;
  return t;
}

Candidate Make(int64_t order, int mesh, double seconds, std::vector<cost::TransferCost> transfers) {
  Candidate c;
  c.order = order;
  c.mesh = mesh;
  c.cost.seconds = seconds;
  c.cost.transfers = std::move(transfers);
  return c;
}

// Families by name: a single transfer of A with the given pattern kind along axis 0.
std::vector<cost::TransferCost> Family(int f) {
  static const Kind kinds[] = {Kind::kBroadcast, Kind::kShift,         Kind::kAllGather,
                               Kind::kSendRecv,  Kind::kReduceScatter, Kind::kReduce};
  return {Comm("A", "ko", kinds[f % 6], {0})};
}

// The orders of ChooseToMeasure's picks among `cs` (passed in reverse, so that the input
// order is not the model's).
std::vector<int64_t> Picks(const std::vector<Candidate>& cs, const std::vector<ir::Mesh>& meshes,
                           size_t k) {
  std::vector<const Candidate*> in;
  for (const Candidate& c : cs) in.push_back(&c);
  std::reverse(in.begin(), in.end());
  std::vector<int64_t> out;
  for (const Candidate* c : ChooseToMeasure(in, meshes, k)) out.push_back(c->order);
  return out;
}

std::vector<ir::Mesh> Meshes(const std::vector<std::string>& texts) {
  std::vector<ir::Mesh> out;
  for (const std::string& t : texts) out.push_back(*ir::ParseMesh(t));
  return out;
}

TEST(FamilyOfTest, TheMeshAndEachTensorsPatternsWithoutLoopsRootsOrDistances) {
  const ir::Mesh square = *ir::ParseMesh("x=2,y=2");
  // Cannon: tensors in name order, axes by name.
  EXPECT_EQ(
      FamilyOf(Make(0, 0, 1,
                    {Comm("B", "ko", Kind::kShift, {0}, 1), Comm("A", "ko", Kind::kShift, {1}, 1),
                     Comm("C", "mi", Kind::kSendRecv, {})}),
               square),
      "x=2,y=2: A Shift(y); B Shift(x); C SendRecv");
  // Other loops and shift distances: the same family.
  EXPECT_EQ(
      FamilyOf(Make(1, 0, 1,
                    {Comm("A", "k", Kind::kShift, {1}, -1), Comm("B", "mi", Kind::kShift, {0}, 1),
                     Comm("C", "ki", Kind::kSendRecv, {})}),
               square),
      "x=2,y=2: A Shift(y); B Shift(x); C SendRecv");
  // A pattern repeated for one tensor counts once; different ones are joined in the order
  // seen; Local transfers and reductions (no message) are left out.
  EXPECT_EQ(
      FamilyOf(Make(2, 0, 1,
                    {Comm("A", "ko", Kind::kBroadcast, {1}), Comm("A", "ki", Kind::kBroadcast, {1}),
                     Comm("A", "ni", Kind::kSendRecv, {}), Comm("B", "ni", Kind::kLocal, {}),
                     Comm("C", "ko", Kind::kReduce, {0, 1})}),
               square),
      "x=2,y=2: A Broadcast(y)+SendRecv; C Reduce(x,y)");
  // The mesh is part of the family.
  EXPECT_EQ(FamilyOf(Make(3, 0, 1, {Comm("B", "k", Kind::kAllGather, {0})}), *ir::ParseMesh("x=4")),
            "x=4: B AllGather(x)");
  EXPECT_EQ(FamilyOf(Make(4, 0, 1, {}), *ir::ParseMesh("p=2")), "p=2: no communication");
  EXPECT_EQ(FamilyOf(Make(5, 0, 1, {Comm("A", "ko", Kind::kLocal, {})}), *ir::ParseMesh("p=2")),
            "p=2: no communication");
  // An input's copies are named as such, not as the broadcast that makes them.
  EXPECT_EQ(FamilyOf(Make(6, 0, 1,
                          {Comm("A", "copies", Kind::kBroadcast, {1}),
                           Comm("A", "ko", Kind::kBroadcast, {1}),
                           Comm("C", "ki", Kind::kAllReduce, {0})}),
                     square),
            "x=2,y=2: A copies(y)+Broadcast(y); C AllReduce(x)");
}

TEST(ChooseToMeasureTest, EachFamilysBestNearTheTopBeforeASecondOfOneFamily) {
  const std::vector<ir::Mesh> one = Meshes({"x=2,y=2"});
  const std::vector<Candidate> cs = {
      Make(0, 0, 1.0, Family(0)), Make(1, 0, 1.0, Family(0)), Make(2, 0, 1.1, Family(0)),
      Make(3, 0, 1.2, Family(1)), Make(4, 0, 1.3, Family(0)), Make(5, 0, 1.4, Family(2)),
      Make(6, 0, 1.5, Family(1)), Make(7, 0, 1.6, Family(3)),  // beyond 1.5 x the best
  };
  EXPECT_EQ(Picks(cs, one, 1), (std::vector<int64_t>{0}));
  EXPECT_EQ(Picks(cs, one, 2), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(Picks(cs, one, 3), (std::vector<int64_t>{0, 3, 5}));
  // Every family within the window is in: the rest go by the model's order, not to family 3.
  EXPECT_EQ(Picks(cs, one, 4), (std::vector<int64_t>{0, 1, 3, 5}));
  EXPECT_EQ(Picks(cs, one, 6), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Picks(cs, one, 8), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ChooseToMeasureTest, TheWindowIsAFactorOfTheBestPrediction) {
  const std::vector<ir::Mesh> one = Meshes({"x=4"});
  // 3.0 is exactly 1.5 x 2.0: inside; 3.01 is not.
  const std::vector<Candidate> cs = {Make(0, 0, 2.0, Family(0)), Make(1, 0, 2.5, Family(0)),
                                     Make(2, 0, 3.0, Family(1)), Make(3, 0, 3.01, Family(2))};
  EXPECT_EQ(kFamilyWindow, 1.5);
  EXPECT_EQ(Picks(cs, one, 2), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(Picks(cs, one, 3), (std::vector<int64_t>{0, 1, 2}));
}

TEST(ChooseToMeasureTest, EachMeshsBestIsKeptWithSeveralMeshes) {
  const std::vector<ir::Mesh> two = Meshes({"x=2,y=2", "x=4"});
  const std::vector<Candidate> cs = {
      Make(0, 0, 1.0, Family(0)), Make(1, 0, 1.05, Family(1)), Make(2, 0, 1.1, Family(2)),
      Make(3, 0, 1.2, Family(3)), Make(4, 1, 2.0, Family(0)),  // x=4's best, far behind
      Make(5, 1, 2.1, Family(4)),
  };
  // Up to half of the slots, at least 2, hold the meshes' best; then the families.
  EXPECT_EQ(Picks(cs, two, 1), (std::vector<int64_t>{0}));
  EXPECT_EQ(Picks(cs, two, 2), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(Picks(cs, two, 3), (std::vector<int64_t>{0, 1, 4}));
  EXPECT_EQ(Picks(cs, two, 4), (std::vector<int64_t>{0, 1, 2, 4}));
  // Family 0 on x=4 is another family than family 0 on x=2,y=2 (the mesh is part of it), but
  // x=4's candidates are all outside the window: after the families, the model's order.
  EXPECT_EQ(Picks(cs, two, 5), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Picks(cs, two, 6), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  // A mesh with no candidate takes no slot.
  EXPECT_EQ(Picks(cs, Meshes({"x=2,y=2", "x=4", "x=2,y=2,z=1"}), 2), (std::vector<int64_t>{0, 4}));
}

TEST(ChooseToMeasureTest, MoreSlotsThanCandidatesAndNoSlots) {
  const std::vector<ir::Mesh> one = Meshes({"x=2"});
  const std::vector<Candidate> cs = {Make(0, 0, 3.0, Family(0)), Make(1, 0, 1.0, Family(0)),
                                     Make(2, 0, 2.0, Family(1))};
  EXPECT_EQ(Picks(cs, one, 10), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(Picks(cs, one, 0), (std::vector<int64_t>{}));
  EXPECT_EQ(Picks({}, one, 4), (std::vector<int64_t>{}));
  EXPECT_EQ(Picks({}, Meshes({"x=2", "y=2"}), 4), (std::vector<int64_t>{}));
}

TEST(ChooseToMeasureTest, TiesGoToFewerTransfersThenEvaluationOrder) {
  const std::vector<ir::Mesh> one = Meshes({"x=2,y=2"});
  std::vector<cost::TransferCost> two_transfers = Family(1);
  two_transfers.push_back(Comm("B", "ko", Kind::kBroadcast, {0}));
  const std::vector<Candidate> cs = {
      Make(0, 0, 1.0, two_transfers),  // tied in time, more transfers: after 1 and 2
      Make(1, 0, 1.0, Family(0)), Make(2, 0, 1.0, Family(0)), Make(3, 0, 1.0, Family(2)),
      Make(4, 0, 1.0, Family(2))};
  EXPECT_EQ(Picks(cs, one, 2), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Picks(cs, one, 3), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(Picks(cs, one, 4), (std::vector<int64_t>{1, 2, 3, 0}));
  // The same picks whatever the input order.
  std::vector<const Candidate*> in;
  for (const Candidate& c : cs) in.push_back(&c);
  std::vector<int64_t> forward;
  for (const Candidate* c : ChooseToMeasure(in, one, 3)) forward.push_back(c->order);
  EXPECT_EQ(forward, (std::vector<int64_t>{1, 3, 0}));
}

TEST(ExplorerTest, ToMeasureOnARealSpaceTakesEachFamilysBestFirst) {
  const ir::Problem problem = *ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8");
  const std::vector<ir::Mesh> meshes = Meshes({"x=2,y=2", "x=4"});
  cost::CostParams params;
  params.alpha = params.alpha_coll = 1e-6;
  params.beta = params.beta_coll = 1e-9;
  params.gamma = 1e-11;
  absl::StatusOr<std::unique_ptr<Explorer>> made = Explorer::Create(problem, meshes, {}, params);
  ASSERT_TRUE(made.ok()) << made.status();
  Explorer& e = **made;
  // 300 random legal points (seeded), over both meshes.
  std::mt19937_64 rng(1);
  for (int i = 0; i < 300; ++i) {
    const std::optional<Point> p = e.Sample(&rng);
    if (p.has_value() && !e.Evaluated(*p)) e.Evaluate(*p);
  }
  const std::vector<const Candidate*> ranked = e.Best(e.candidates().size());
  ASSERT_GE(ranked.size(), 8u);
  // The families near the top, each with its best, in the model's order.
  std::vector<std::string> families;
  std::vector<const Candidate*> family_best;
  for (const Candidate* c : ranked) {
    if (c->cost.seconds > kFamilyWindow * ranked[0]->cost.seconds) break;
    const std::string f = FamilyOf(*c, e.mesh(c->mesh));
    if (std::find(families.begin(), families.end(), f) == families.end()) {
      families.push_back(f);
      family_best.push_back(c);
    }
  }
  ASSERT_GE(families.size(), 4u);
  const size_t k = std::min<size_t>(families.size(), 6);
  const std::vector<const Candidate*> picked = e.ToMeasure(k);
  ASSERT_EQ(picked.size(), k);
  // Distinct families; each mesh's best; every other pick its family's best.
  std::set<std::string> seen;
  std::set<int> meshes_seen;
  for (const Candidate* c : picked) {
    const std::string f = FamilyOf(*c, e.mesh(c->mesh));
    EXPECT_TRUE(seen.insert(f).second) << f;
    meshes_seen.insert(c->mesh);
    const auto at = std::find(families.begin(), families.end(), f);
    if (at != families.end()) {
      EXPECT_EQ(family_best[at - families.begin()], c) << f;
    }
  }
  EXPECT_EQ(meshes_seen.size(), 2u);
  EXPECT_EQ(picked[0], ranked[0]);
  // Two slots hold the meshes' best (the first, the model's best, is the first family's), so
  // the first k-1 families near the top are all measured.
  for (size_t i = 0; i + 1 < k; ++i) EXPECT_EQ(seen.count(families[i]), 1u) << families[i];
  // Deterministic.
  EXPECT_EQ(e.ToMeasure(k), picked);
}

// The whole space of matmul on 2x2 at small extents, judged as `mode` says.
std::unique_ptr<Explorer> SmallSpace(JudgeOptions judge) {
  const absl::StatusOr<ir::Problem> problem =
      ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8");
  const absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh("x=2,y=2");
  MT_CHECK(problem.ok() && mesh.ok());
  absl::StatusOr<std::unique_ptr<Explorer>> e =
      Explorer::Create(*problem, {*mesh}, {}, cost::CostParams{}, nullptr, judge);
  MT_CHECK(e.ok());
  return *std::move(e);
}

JudgeOptions Mode(JudgeOptions::Mode mode) {
  JudgeOptions j;
  j.mode = mode;
  return j;
}

// Every point a lazily judged explorer draws or breeds is legal by the whole tables, and
// the draws reach most of the legal points' cells.
TEST(LazyExplorerTest, DrawsAndMutationsAreLegalByTheWholeTables) {
  std::unique_ptr<Explorer> whole = SmallSpace(Mode(JudgeOptions::Mode::kWhole));
  std::unique_ptr<Explorer> lazy = SmallSpace(Mode(JudgeOptions::Mode::kLazy));
  ASSERT_FALSE(whole->lazy());
  ASSERT_TRUE(lazy->lazy());
  EXPECT_EQ(lazy->counts().enumerated, whole->counts().enumerated);
  std::mt19937_64 rng(7);
  std::set<std::string> cells;
  int drawn = 0;
  for (int i = 0; i < 600; ++i) {
    const std::optional<Point> p = lazy->Sample(&rng);
    if (!p.has_value()) continue;
    ++drawn;
    EXPECT_TRUE(whole->evaluator(0).Legal(p->genome))
        << lazy->evaluator(0).space().ToTrace(p->genome).ToString();
    cells.insert(absl::StrCat(p->genome.nest, ":", p->genome.rotation));
    const std::optional<Point> q = lazy->Mutate(*p, &rng);
    if (q.has_value()) {
      EXPECT_TRUE(whole->evaluator(0).Legal(q->genome))
          << lazy->evaluator(0).space().ToTrace(q->genome).ToString();
    }
  }
  EXPECT_GT(drawn, 500);
  EXPECT_GE(cells.size(), static_cast<size_t>(whole->num_cells()) * 3 / 4);
}

// Once every cell has been judged whole (ForEachLegal does), the lazy counts are the exact
// ones; before, the estimate from the sample is within a factor of three of them.
TEST(LazyExplorerTest, EstimatesBecomeTheCountsWhenEverythingIsJudged) {
  std::unique_ptr<Explorer> whole = SmallSpace(Mode(JudgeOptions::Mode::kWhole));
  std::unique_ptr<Explorer> lazy = SmallSpace(Mode(JudgeOptions::Mode::kLazy));
  const SearchCounts exact = whole->counts();
  ASSERT_GT(exact.legal, 0);
  ASSERT_TRUE(lazy->counts().estimated);
  EXPECT_GT(lazy->counts().legal, exact.legal / 3);
  EXPECT_LT(lazy->counts().legal, exact.legal * 3);
  EXPECT_LT(lazy->counts().judged_cells, lazy->counts().cells);
  int64_t legal = 0;
  lazy->ForEachLegal([&](const Point&) {
    ++legal;
    return true;
  });
  EXPECT_EQ(legal, exact.legal);
  const SearchCounts judged = lazy->counts();
  EXPECT_EQ(judged.legal, exact.legal);
  EXPECT_EQ(judged.pruned, exact.pruned);
  EXPECT_EQ(judged.judged_cells, judged.cells);
}

// A sample that judges every option of every cell gives the exact counts.
TEST(LazyExplorerTest, AWholeSampleEstimatesExactly) {
  JudgeOptions judge = Mode(JudgeOptions::Mode::kLazy);
  judge.sample_cells = 1 << 20;
  judge.sample_options = 1 << 20;
  std::unique_ptr<Explorer> lazy = SmallSpace(judge);
  std::unique_ptr<Explorer> whole = SmallSpace(Mode(JudgeOptions::Mode::kWhole));
  EXPECT_EQ(lazy->counts().legal, whole->counts().legal);
  EXPECT_EQ(lazy->counts().pruned, whole->counts().pruned);
}

// Bounding a long costing walk (BoundRule: window 1, schedule classes as groups within
// kFamilyWindow) loses nothing a model-only tune reports: evaluating the same points with
// and without it gives the same best candidate and the same best of every schedule class
// within kFamilyWindow of it, while some points are bounded rather than costed.
TEST(BoundRuleTest, TheBestAndEveryClassBestAreThoseOfTheUnboundedSearch) {
  const ir::Problem problem = *ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=256,n=256,k=2048");
  const ir::Mesh mesh = *ir::ParseMesh("x=32,y=32");
  cost::CostParams params;
  params.alpha = params.alpha_coll = 1e-6;
  params.beta = params.beta_coll = 1e-9;
  params.gamma = 1e-11;
  auto make = [&] {
    absl::StatusOr<std::unique_ptr<Explorer>> e =
        Explorer::Create(problem, {mesh}, {}, params, nullptr, Mode(JudgeOptions::Mode::kLazy));
    MT_CHECK(e.ok());
    return *std::move(e);
  };
  std::unique_ptr<Explorer> bounded = make(), full = make();
  BoundRule rule;
  rule.window = 1;
  rule.group = [&](int m, int nest) {
    return *ScheduleClassOfCalls(bounded->evaluator(m).space().nests()[nest].nest.calls, problem,
                                 mesh);
  };
  bounded->set_bound_rule(rule);
  BoundRule none;
  none.window = none.group_window = std::numeric_limits<double>::infinity();
  full->set_bound_rule(none);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 400; ++i) {
    const std::optional<Point> p = full->Sample(&rng);
    if (!p.has_value()) continue;
    bounded->Evaluate(*p);
    full->Evaluate(*p);
  }
  EXPECT_GT(bounded->counts().bounded, 0);
  EXPECT_EQ(full->counts().bounded, 0);
  ASSERT_FALSE(full->candidates().empty());
  EXPECT_EQ(bounded->Best(1)[0]->trace, full->Best(1)[0]->trace);
  const std::vector<ClassBest> a = BestPerClass(*bounded, problem),
                               b = BestPerClass(*full, problem);
  const double window = full->Best(1)[0]->cost.seconds * kFamilyWindow;
  int near = 0;
  for (const ClassBest& want : b) {
    if (want.best.cost.seconds > window) continue;
    ++near;
    const auto got = std::find_if(a.begin(), a.end(), [&](const ClassBest& c) {
      return c.schedule_class == want.schedule_class;
    });
    ASSERT_NE(got, a.end()) << want.schedule_class;
    EXPECT_EQ(got->best.trace, want.best.trace) << want.schedule_class;
    EXPECT_EQ(got->best.cost.seconds, want.best.cost.seconds);
  }
  EXPECT_GE(near, 2);
}

}  // namespace
}  // namespace meshtune::search
