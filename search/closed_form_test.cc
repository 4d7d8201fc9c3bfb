// The differential test of the closed forms: on every legal point of whole spaces (matmul,
// batched matmul and MTTKRP on x=2, 2x2, 2x3 and 2x2x2), the closed-form costing
// Program has the tree, boxes, patterns and buffers of the one codegen::Lower derives with
// isl, sources that agree on every rank at every iteration, and the same cost — the
// closed-form Program's costed over rank classes (cost::EstimateCost's default), isl's with every
// rank walked; and the cost model's term scales scale their classes of terms. In the suite, a
// space of more than kMaxPoints legal points has a seeded sample of about kMaxPoints compared
// (each point drawn with the same chance, over the whole space);
// //search:closed_form_full_test compares every point of the suite's spaces, and
// //search:closed_form_wide_test every point of larger ones.
#include "search/closed_form.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/lower.h"
#include "cost/cost_model.h"
#include "gtest/gtest.h"
#include "search/explorer.h"

namespace meshtune::search {
namespace {

using codegen::Expr;
using codegen::Program;
using codegen::StmtPtr;

struct Case {
  std::string expr, extents, mesh;
  bool replication = false;  // SpaceOptions::allow_replication
};

// Compares the statement trees `a` (isl) and `b` (closed form) in step, every For iterated,
// and returns the first difference ("" when none). `env` binds the enclosing loop variables.
class TreeComparer {
 public:
  explicit TreeComparer(const Program& p) : p_(p) {}

  std::string Compare(const StmtPtr& a, const StmtPtr& b) {
    std::string diff;
    Walk(Flatten(a), Flatten(b), &diff);
    return diff;
  }

 private:
  // The statements of `s` with Blocks opened.
  static std::vector<StmtPtr> Flatten(const StmtPtr& s) {
    std::vector<StmtPtr> out;
    if (const auto* b = std::get_if<codegen::Block>(&s->node)) {
      for (const StmtPtr& c : b->body) {
        std::vector<StmtPtr> inner = Flatten(c);
        out.insert(out.end(), inner.begin(), inner.end());
      }
    } else {
      out.push_back(s);
    }
    return out;
  }

  void Walk(const std::vector<StmtPtr>& a, const std::vector<StmtPtr>& b, std::string* diff) {
    if (!diff->empty()) return;
    if (a.size() != b.size()) {
      *diff = absl::StrCat("bodies of ", a.size(), " and ", b.size(), " statements");
      return;
    }
    for (size_t i = 0; i < a.size() && diff->empty(); ++i) One(a[i], b[i], diff);
  }

  void One(const StmtPtr& a, const StmtPtr& b, std::string* diff) {
    if (a->node.index() != b->node.index()) {
      *diff = "statements of different kinds";
      return;
    }
    if (const auto* fa = std::get_if<codegen::For>(&a->node)) {
      const auto& fb = std::get<codegen::For>(b->node);
      if (fa->var != fb.var || fa->extent != fb.extent) {
        *diff = absl::StrCat("loops ", fa->var, ":", fa->extent, " and ", fb.var, ":", fb.extent);
        return;
      }
      for (int64_t v = 0; v < fa->extent && diff->empty(); ++v) {
        env_[fa->var] = v;
        Walk(Flatten(fa->body), Flatten(fb.body), diff);
      }
      env_.erase(fa->var);
    } else if (const auto* ta = std::get_if<codegen::Transfer>(&a->node)) {
      const auto& tb = std::get<codegen::Transfer>(b->node);
      if (ta->tensor != tb.tensor || ta->buffer != tb.buffer || ta->loop != tb.loop ||
          ta->time_loop != tb.time_loop || !(ta->pattern == tb.pattern) ||
          ta->src.size != tb.src.size || ta->global.size != tb.global.size ||
          ta->prefetch != tb.prefetch || ta->source.size() != tb.source.size()) {
        *diff = absl::StrCat("transfer of ", ta->tensor, ": ", ta->pattern.ToString(), " vs ",
                             tb.pattern.ToString());
        return;
      }
      CompareSources(ta->tensor, ta->source, tb.source, diff);
    } else if (const auto* ra = std::get_if<codegen::Reduce>(&a->node)) {
      const auto& rb = std::get<codegen::Reduce>(b->node);
      if (ra->tensor != rb.tensor || ra->buffer != rb.buffer || ra->loop != rb.loop ||
          !(ra->pattern == rb.pattern) || ra->global.size != rb.global.size ||
          ra->prefetch != rb.prefetch) {
        *diff = absl::StrCat("reduction of ", ra->tensor, ": ", ra->pattern.ToString(), " vs ",
                             rb.pattern.ToString());
      }
    } else if (const auto* ca = std::get_if<codegen::Compute>(&a->node)) {
      const auto& cb = std::get<codegen::Compute>(b->node);
      bool same = ca->kernel == cb.kernel && ca->sum == cb.sum && ca->tile == cb.tile &&
                  ca->in.size() == cb.in.size();
      auto operand = [&](const codegen::Operand& x, const codegen::Operand& y) {
        return x.tensor == y.tensor && x.buffer == y.buffer && x.dims == y.dims &&
               x.slice.size == y.slice.size;
      };
      same = same && operand(ca->out, cb.out);
      for (size_t i = 0; same && i < ca->in.size(); ++i) same = operand(ca->in[i], cb.in[i]);
      if (!same) *diff = "kernel calls differ";
    } else if (const auto* aa = std::get_if<codegen::Alloc>(&a->node)) {
      const auto& ab = std::get<codegen::Alloc>(b->node);
      if (aa->buffer != ab.buffer || aa->shape != ab.shape || aa->zero != ab.zero)
        *diff = absl::StrCat("allocations of ", aa->buffer, " and ", ab.buffer);
    }
  }

  // Both source expressions on every rank, at the current loop values.
  void CompareSources(const std::string& tensor, const std::vector<Expr>& a,
                      const std::vector<Expr>& b, std::string* diff) {
    const int64_t ranks = p_.Ranks();
    for (int64_t r = 0; r < ranks && diff->empty(); ++r) {
      std::map<std::string, int64_t> vars = env_;
      int64_t rest = r;
      for (size_t x = p_.axis_sizes.size(); x-- > 0;) {
        vars[p_.axis_names[x]] = rest % p_.axis_sizes[x];
        rest /= p_.axis_sizes[x];
      }
      auto lookup = [&](const std::string& n) {
        auto it = vars.find(n);
        return it == vars.end() ? int64_t{0} : it->second;
      };
      for (size_t x = 0; x < a.size(); ++x) {
        if (a[x].Eval(lookup) != b[x].Eval(lookup)) {
          *diff = absl::StrCat("source of ", tensor, " on rank ", r, " along axis ", x, ": ",
                               a[x].ToString(), " vs ", b[x].ToString());
          return;
        }
      }
    }
  }

  const Program& p_;
  std::map<std::string, int64_t> env_;
};

// Relative difference of two costs.
double Rel(double a, double b) {
  const double m = std::max(std::fabs(a), std::fabs(b));
  return m == 0 ? 0 : std::fabs(a - b) / m;
}

// "" when the two reports agree.
std::string CompareCosts(const cost::CostReport& a, const cost::CostReport& b) {
  if (Rel(a.seconds, b.seconds) > 1e-9)
    return absl::StrCat("predicted ", a.seconds, " vs ", b.seconds);
  if (a.critical_rank != b.critical_rank || a.comm_words_per_rank != b.comm_words_per_rank ||
      a.transfers.size() != b.transfers.size() || a.rank_seconds.size() != b.rank_seconds.size())
    return "critical rank, words or transfers differ";
  for (size_t r = 0; r < a.rank_seconds.size(); ++r) {
    if (Rel(a.rank_seconds[r], b.rank_seconds[r]) > 1e-9) return absl::StrCat("rank ", r);
  }
  for (size_t i = 0; i < a.transfers.size(); ++i) {
    const cost::TransferCost &x = a.transfers[i], &y = b.transfers[i];
    if (!(x.pattern == y.pattern) || x.messages != y.messages || x.bytes != y.bytes ||
        Rel(x.seconds, y.seconds) > 1e-9)
      return absl::StrCat("transfer ", x.tensor, "@", x.loop);
  }
  return "";
}

// "" when cost::EstimateCostLowerBound of `p` over 1, 2 and 3 rank classes (a subset: receives
// alone charged for point-to-point fetches) is at most its cost, and over as many classes
// as there are (the whole walk) equal to it.
std::string BoundError(const Program& p, const cost::CostParams& params) {
  const double cost = cost::EstimateCost(p, params).seconds;
  for (int64_t ranks : {1, 2, 3, 1 << 20}) {
    const absl::StatusOr<double> bound = cost::EstimateCostLowerBound(p, params, ranks, INT64_MAX);
    if (!bound.ok()) return bound.status().ToString();
    if (*bound > cost * (1 + 1e-12)) return absl::StrCat("bound ", *bound, " > cost ", cost);
    if (ranks == (1 << 20) && Rel(*bound, cost) > 1e-9)
      return absl::StrCat("whole bound ", *bound, " != cost ", cost);
  }
  return "";
}

// "" when cost::TermScales scale their classes of terms: the classes add up to the communication;
// one scale for all scales every cost by it; with a scale each, the compute is scaled by
// its own, the report is compute + communication - overlap, and where the critical rank
// stays the same each class is scaled by its own.
std::string ScaleError(const Program& p, cost::CostParams params) {
  params.scales = cost::TermScales{};
  const cost::CostReport plain = cost::EstimateCost(p, params);
  auto classes = [](const cost::CostReport& r) {
    return r.point_to_point_seconds + r.collective_seconds + r.reduction_seconds;
  };
  if (Rel(classes(plain), plain.comm_seconds) > 1e-9)
    return absl::StrCat("classes ", classes(plain), " != communication ", plain.comm_seconds);
  params.scales = {2.5, 2.5, 2.5, 2.5};
  const cost::CostReport even = cost::EstimateCost(p, params);
  if (Rel(even.seconds, 2.5 * plain.seconds) > 1e-9 || even.critical_rank != plain.critical_rank)
    return absl::StrCat("all scales 2.5: ", even.seconds, " vs ", plain.seconds);
  params.scales = {2, 3, 5, 7};
  const cost::CostReport odd = cost::EstimateCost(p, params);
  if (Rel(odd.compute_seconds, 2 * plain.compute_seconds) > 1e-9) return "compute not scaled";
  if (Rel(classes(odd), odd.comm_seconds) > 1e-9 ||
      Rel(odd.seconds, odd.compute_seconds + odd.comm_seconds - odd.overlap_seconds) > 1e-9)
    return "scaled report does not add up";
  if (odd.critical_rank == plain.critical_rank &&
      (Rel(odd.point_to_point_seconds, 3 * plain.point_to_point_seconds) > 1e-9 ||
       Rel(odd.collective_seconds, 5 * plain.collective_seconds) > 1e-9 ||
       Rel(odd.reduction_seconds, 7 * plain.reduction_seconds) > 1e-9))
    return "a class not scaled by its own scale";
  return "";
}

// A GEMM table whose rate grows with each size differently (the shape matters).
cost::GemmTable TestGemmTable() {
  std::vector<cost::GemmSample> samples;
  for (int64_t m : {1, 4, 16}) {
    for (int64_t n : {1, 4, 16}) {
      for (int64_t k : {1, 4, 16}) samples.push_back({m, n, k, 1e9 * (1 + m + 2 * n + 3 * k)});
    }
  }
  return *cost::GemmTable::Create(samples);
}

// Lines for every collective at 2 and 4 ranks, the nonblocking forms slower.
cost::CollectiveCosts TestCollectives() {
  std::vector<std::pair<cost::CollectiveForm, cost::CollectiveLine>> lines;
  for (int c = 0; c < cost::kCollectives; ++c) {
    for (bool nonblocking : {false, true}) {
      for (int64_t g : {2, 4}) {
        const double slow = nonblocking ? 2 : 1;
        lines.push_back({{static_cast<cost::Collective>(c), nonblocking},
                         {g, slow * (1 + c) * 1e-6 * g, slow * (1 + c) * 1e-10}});
      }
    }
  }
  return *cost::CollectiveCosts::Create(lines);
}

#if defined(MESHTUNE_WIDE_SWEEP) || defined(MESHTUNE_EVERY_POINT)
constexpr int64_t kMaxPoints = INT64_MAX;
#else
// 0.1 to 2 ms a point on 2 cores; the suite's spaces hold up to 58264 legal points.
constexpr int64_t kMaxPoints = 3000;
#endif

class ClosedFormTest : public ::testing::TestWithParam<Case> {};

TEST_P(ClosedFormTest, EqualsIslOnEveryLegalPoint) {
  const Case& k = GetParam();
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(k.expr, k.extents);
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(k.mesh);
  ASSERT_TRUE(problem.ok() && mesh.ok());
  cost::CostParams params;
  params.alpha = 2e-6;
  params.alpha_coll = 3e-6;
  params.beta = 1e-9;
  params.beta_coll = 1.5e-9;
  params.gamma = 1.0 / 20e9;
  params.overlap = 0.7;
  // Every term of the model, so that classes and bounds are checked with each of them: a
  // GEMM table, memory passes, and collectives measured at 2 and 4 ranks (other group sizes
  // carried by their forms), blocking and nonblocking.
  params.copy = 3e-11;
  params.add = 4e-11;
  params.gemm = TestGemmTable();
  params.collectives = TestCollectives();
  SpaceOptions space;
  space.allow_replication = k.replication;
  absl::StatusOr<std::unique_ptr<Explorer>> explorer =
      Explorer::Create(*problem, {*mesh}, space, params);
  ASSERT_TRUE(explorer.ok()) << explorer.status();
  Evaluator& ev = (*explorer)->evaluator(0);
  ClosedFormLowering closed;
  codegen::LoweringCache cache;  // isl's parts are shared across points: the Program is the same
  int64_t legal = 0, points = 0, outside = 0;
  std::map<std::string, int64_t> patterns;
  // The legal points, counted first (the larger spaces are judged lazily: their counts() are
  // estimates; this judges every cell whole, for the pass below too).
  int64_t space_points = 0;
  (*explorer)->ForEachLegal([&](const Point&) { return ++space_points > 0; });
  std::mt19937_64 rng(13);
  std::bernoulli_distribution sampled(
      std::min(1.0, static_cast<double>(kMaxPoints) / static_cast<double>(space_points)));
  (*explorer)->ForEachLegal([&](const Point& pt) {
    ++legal;
    if (space_points > kMaxPoints && !sampled(rng)) return true;
    ++points;
    const ir::Computation c = ev.Assemble(pt.genome);
    const std::string trace = ev.space().ToTrace(pt.genome).ToString();
    codegen::LowerOptions options;
    options.offsets = false;
    options.cache = &cache;
    absl::StatusOr<Program> isl = codegen::Lower(c, options);
    absl::StatusOr<Program> fast = closed.Lower(c);
    if (!isl.ok()) {
      EXPECT_FALSE(fast.ok()) << trace;
      return true;
    }
    if (absl::IsUnimplemented(fast.status())) {
      ++outside;
      return true;
    }
    EXPECT_TRUE(fast.ok()) << trace << "\n" << fast.status();
    if (!fast.ok()) return false;
    const std::string tree = TreeComparer(*isl).Compare(isl->body, fast->body);
    EXPECT_EQ(tree, "") << trace << "\n" << codegen::Dump(*isl) << "\n" << codegen::Dump(*fast);
    // The closed-form Program costed over rank classes against isl's costed rank by rank.
    const std::string cost = CompareCosts(cost::EstimateCost(*isl, params, /*rank_classes=*/false),
                                          cost::EstimateCost(*fast, params));
    EXPECT_EQ(cost, "") << trace;
    EXPECT_EQ(BoundError(*fast, params), "") << trace;
    EXPECT_EQ(ScaleError(*fast, params), "") << trace;
    for (const codegen::TransferSummary& s : codegen::Summarize(*fast))
      ++patterns[s.pattern.Name()];
    return tree.empty() && cost.empty();
  });
  EXPECT_EQ(legal, space_points);
  // Every point of a space of at most kMaxPoints, else about kMaxPoints of them.
  EXPECT_GT(points, std::min(legal, kMaxPoints) * 9 / 10);
  // Every (compared) legal point of these spaces is inside the closed forms.
  EXPECT_EQ(outside, 0) << "of " << points << " legal points";
  std::string seen;
  for (const auto& [name, n] : patterns) absl::StrAppend(&seen, name, "=", n, " ");
  std::printf("%s on %s: %lld legal points, %lld compared; patterns %s\n", k.expr.c_str(),
              k.mesh.c_str(), static_cast<long long>(legal), static_cast<long long>(points),
              seen.c_str());
}

#ifndef MESHTUNE_WIDE_SWEEP
// The suite's spaces, at extents that keep each space to seconds: a sample of the larger ones
// (every legal point in //search:closed_form_full_test).
INSTANTIATE_TEST_SUITE_P(
    Spaces, ClosedFormTest,
    ::testing::Values(Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=4,k=8", "x=2"},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=2,y=2"},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=12,n=6,k=12", "x=2,y=3"},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=2,y=2,z=2"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=4,n=2,k=4", "x=2"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=2,n=2,k=4", "x=2,y=2"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=6,n=2,k=6", "x=2,y=3"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=2,n=2,k=2", "x=2,y=2,z=2"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=2,j=4,k=2,r=2", "x=2"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=2,j=2,k=2,r=4", "x=2,y=2"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=6,j=2,k=3,r=3", "x=2,y=3"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=2,j=2,k=2,r=4", "x=2,y=2,z=2"},
                      // Tensors replicated along axes, or whole on every rank (no shard).
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=4,k=8", "x=2", true},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=4,n=4,k=4", "x=2,y=2", true},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=4,n=4,k=4", "x=2,y=2,z=2", true}));
#else
// The wider sweep (//search:closed_form_wide_test, run by hand: about 16 minutes on one
// core): the same problems at larger extents, 4 million legal points in the largest space.
INSTANTIATE_TEST_SUITE_P(
    Spaces, ClosedFormTest,
    ::testing::Values(Case{"C[m,n] += A[m,k] * B[k,n]", "m=16,n=8,k=16", "x=2"},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=8,n=16,k=32", "x=2,y=2"},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=12,n=6,k=24", "x=2,y=3"},
                      Case{"C[m,n] += A[m,k] * B[k,n]", "m=16,n=8,k=16", "x=2,y=2,z=2"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=4,n=4,k=4", "x=2"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=4,n=4,k=4", "x=2,y=2"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=6,n=6,k=6", "x=2,y=3"},
                      Case{"C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=4,n=4,k=4", "x=2,y=2,z=2"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=4,j=4,k=4,r=4", "x=2"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=4,j=4,k=4,r=4", "x=2,y=2"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=6,j=6,k=6,r=6", "x=2,y=3"},
                      Case{"A[i,r] = B[i,j,k] * C[j,r] * D[k,r]", "i=4,j=4,k=4,r=4",
                           "x=2,y=2,z=2"}));
#endif

}  // namespace
}  // namespace meshtune::search
