// Schedule classes: the reference traces of examples/, hand-written nests of each class, bad
// names, and every candidate of small real spaces against an independent reading of its
// trace text; the best candidate per class.
#include "search/schedule_class.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "search/explorer.h"
#include "tests/test_util.h"

namespace meshtune::search {
namespace {

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";

// The class of trace text `trace` for `expr` with `extents` on `mesh`, or the error text.
std::string ClassOf(const std::string& expr, const std::string& extents, const std::string& mesh,
                    const std::string& trace) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(trace);
  if (!p.ok() || !m.ok() || !t.ok()) return "bad test input";
  absl::StatusOr<std::string> cls = ScheduleClassOfTrace(*t, *p, *m);
  return cls.ok() ? *cls : std::string(cls.status().message());
}

std::string MatmulClass(const std::string& mesh, const std::string& trace) {
  return ClassOf(kMatmul, "m=64,n=64,k=64", mesh, trace);
}

std::string Example(const std::string& file) {
  return meshtune::testing::ReadFile("examples/" + file);
}

TEST(ScheduleClassTest, ReferenceTracesAreClassifiedByTheirDistribution) {
  for (const char* file : {"summa.trace", "summa_prefetch.trace", "cannon.trace", "pumma.trace"}) {
    ASSERT_FALSE(Example(file).empty()) << file;
    EXPECT_EQ(ClassOf(kMatmul, "m=512,n=1024,k=2048", "x=8,y=8", Example(file)), "2D") << file;
  }
  // m over x alone: a 1D algorithm (A stays, B goes round).
  for (const char* file : {"allgather_gemm.trace", "allgather_gemm_prefetch.trace"}) {
    EXPECT_EQ(ClassOf("C[m,n] = A[k,m] * B[k,n]", "m=2048,k=1024,n=4096", "x=4", Example(file)),
              "1D")
        << file;
  }
  // k over x: every rank sums a part of k, C is reduce-scattered.
  EXPECT_EQ(ClassOf("C[m,n] = A[m,k] * B[k,n]", "m=2048,k=1024,n=4096", "x=4",
                    Example("gemm_reducescatter.trace")),
            "split-k");
}

constexpr char kMNK[] =
    "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\ntensorize([mi, ni, ki], matmul)\n";
constexpr char kKMN[] =
    "distribute([k,m,n], [ko,mo,no], [ki,mi,ni], [x,y,z])\ntensorize([mi, ni, ki], matmul)\n";

TEST(ScheduleClassTest, ThreeAxisNestsAre3DOr25DByTheReductionAxisSize) {
  EXPECT_EQ(MatmulClass("x=4,y=4,z=4", kMNK), "3D");
  EXPECT_EQ(MatmulClass("x=4,y=4,z=2", kMNK), "2.5D");
  EXPECT_EQ(MatmulClass("x=8,y=8,z=4", kMNK), "2.5D");
  EXPECT_EQ(MatmulClass("x=4,y=2,z=2", kMNK), "3D");  // k's 2 against the smaller output 2
  EXPECT_EQ(MatmulClass("x=4,y=2,z=2", kKMN), "3D");
  EXPECT_EQ(MatmulClass("x=2,y=4,z=4", kKMN), "2.5D");
  EXPECT_EQ(MatmulClass("x=4,y=4,z=2", kKMN), "3D");  // k on 4, n on 2
  // k reached through a divide counts as k.
  EXPECT_EQ(MatmulClass("x=4,y=4,z=4",
                        "divide(k, ko, ki, 4)\n"
                        "distribute([m,n,ko], [mo,no,koo], [mi,ni,koi], [x,y,z])\n"),
            "3D");
}

TEST(ScheduleClassTest, AReductionOverFewerThanTwoOutputAxesIsSplitK) {
  EXPECT_EQ(MatmulClass("x=4,y=2", "distribute([m,k], [mo,ko], [mi,ki], [x,y])\n"), "split-k");
  EXPECT_EQ(MatmulClass("x=4,y=2", "distribute([k,n], [ko,no], [ki,ni], [x,y])\n"), "split-k");
  EXPECT_EQ(MatmulClass("x=8", "distribute([k], [ko], [ki], [x])\n"), "split-k");
  EXPECT_EQ(MatmulClass("x=4,y=2", "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"), "2D");
  EXPECT_EQ(MatmulClass("x=8", "distribute([n], [no], [ni], [x])\n"), "1D");
  // Axes of size 1 distribute nothing.
  EXPECT_EQ(MatmulClass("x=4,y=1", "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"), "1D");
  EXPECT_EQ(MatmulClass("x=4,y=4,z=1", kMNK), "2D");
  EXPECT_EQ(MatmulClass("x=4,y=1", "distribute([m,k], [mo,ko], [mi,ki], [x,y])\n"), "1D");
  // Nothing distributed (one rank).
  EXPECT_EQ(MatmulClass("x=1", "divide(k, ko, ki, 4)\n"), "1D");
  // With two reduction indices, their axes' sizes multiply.
  EXPECT_EQ(ClassOf("C[m,n] += A[m,k,l] * B[k,l,n]", "m=64,n=64,k=64,l=64", "x=4,y=4,z=2",
                    "distribute([m,n,k], [mo,no,ko], [mi,ni,ki], [x,y,z])\n"),
            "2.5D");
}

TEST(ScheduleClassTest, UnknownLoopsAndAxesAreErrors) {
  EXPECT_EQ(MatmulClass("x=4", "distribute([q], [qo], [qi], [x])\n"),
            "loop 'q' is neither an index of C[m,n] += A[m,k] * B[k,n] nor made by an earlier "
            "call");
  EXPECT_EQ(MatmulClass("x=4", "divide(ko, a, b, 2)\n"),
            "loop 'ko' is neither an index of C[m,n] += A[m,k] * B[k,n] nor made by an earlier "
            "call");
  EXPECT_EQ(MatmulClass("x=4", "distribute([m], [mo], [mi], [w])\n"),
            "distribute names axis 'w', which mesh x=4 lacks");
}

// The class of a candidate's trace text read with nothing but string handling: the
// distribute line's variable and axis lists (in the tuner's space every distributed
// variable is an index of the problem).
std::string ClassFromText(const std::string& trace, const ir::Problem& p, const ir::Mesh& mesh) {
  std::smatch line;
  if (!std::regex_search(trace, line, std::regex(R"(distribute\(([^\n]*)\))"))) return "1D";
  std::string args = line[1];
  args.erase(std::remove(args.begin(), args.end(), ' '), args.end());
  std::vector<std::vector<std::string>> lists;
  const std::regex bracket(R"(\[([^\]]*)\])");
  for (auto it = std::sregex_iterator(args.begin(), args.end(), bracket);
       it != std::sregex_iterator(); ++it) {
    lists.push_back(absl::StrSplit(std::string((*it)[1]), ','));
  }
  if (lists.size() != 4) return "unreadable: " + trace;
  std::vector<int64_t> out, red;
  for (size_t j = 0; j < lists[0].size(); ++j) {
    const int64_t size = mesh.axes[mesh.AxisIndex(lists[3][j])].size;
    const bool output = std::count(p.output.indices.begin(), p.output.indices.end(), lists[0][j]);
    if (size > 1) (output ? out : red).push_back(size);
  }
  if (red.empty()) return out.size() >= 2 ? "2D" : "1D";
  if (out.size() < 2) return "split-k";
  int64_t reduction = 1;
  for (int64_t s : red) reduction *= s;
  return reduction >= *std::min_element(out.begin(), out.end()) ? "3D" : "2.5D";
}

// matmul 64 cubed on x=4,y=2 (every legal point costed), x=8, x=4,y=4 and x=4,y=4,z=2 (a
// few points of every (mesh, nest, rotation) cell, so every nest is seen); built once.
class RealSpaceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    problem_ = *ir::ParseProblem(kMatmul, "m=64,n=64,k=64");
    for (const char* m : {"x=4,y=2", "x=8", "x=4,y=4", "x=4,y=4,z=2"})
      meshes_.push_back(*ir::ParseMesh(m));
    cost::CostParams params;
    params.alpha = params.alpha_coll = 1e-6;
    params.beta = params.beta_coll = 1e-9;
    params.gamma = 1e-11;
    absl::StatusOr<std::unique_ptr<Explorer>> e =
        Explorer::Create(problem_, meshes_, SpaceOptions{}, params);
    if (!e.ok()) return;
    explorer_ = *std::move(e);
    explorer_->ForEachLegal([&](const Point& p) {
      if (p.mesh != 0) return false;
      ++whole_mesh_points_;
      explorer_->Evaluate(p);
      return true;
    });
    std::mt19937_64 rng(7);
    for (int cell = 0; cell < explorer_->num_cells(); ++cell) {
      for (int i = 0; i < 3; ++i) {
        std::optional<Point> p = explorer_->SampleCell(cell, &rng);
        if (p && !explorer_->Evaluated(*p)) explorer_->Evaluate(*p);
      }
    }
  }
  static void TearDownTestSuite() { explorer_.reset(); }
  void SetUp() override { ASSERT_NE(explorer_, nullptr) << "the explorer failed"; }

  static std::string Class(const Candidate& c) {
    return ScheduleClass(c, explorer_->evaluator(c.mesh).space(), problem_, meshes_[c.mesh]);
  }

  static inline ir::Problem problem_;
  static inline std::vector<ir::Mesh> meshes_;
  static inline std::unique_ptr<Explorer> explorer_;
  static inline int64_t whole_mesh_points_ = 0;  // legal points of x=4,y=2
};

TEST_F(RealSpaceTest, EveryCandidatesClassAgreesWithItsTraceText) {
  ASSERT_GT(whole_mesh_points_, 1000);
  int64_t evaluated = 0;
  explorer_->ForEachLegal([&](const Point& p) {
    evaluated += p.mesh == 0 && explorer_->Evaluated(p);
    return p.mesh == 0;
  });
  EXPECT_EQ(evaluated, whole_mesh_points_);  // x=4,y=2 whole
  std::map<int, std::set<std::string>> seen;
  for (const Candidate& c : explorer_->candidates()) {
    const std::string cls = Class(c);
    EXPECT_EQ(cls, ClassFromText(c.trace, problem_, meshes_[c.mesh])) << c.trace;
    absl::StatusOr<ir::Trace> t = ir::ParseTrace(c.trace);
    ASSERT_TRUE(t.ok()) << t.status();
    absl::StatusOr<std::string> from_trace = ScheduleClassOfTrace(*t, problem_, meshes_[c.mesh]);
    ASSERT_TRUE(from_trace.ok()) << from_trace.status();
    EXPECT_EQ(cls, *from_trace) << c.trace;
    seen[c.mesh].insert(cls);
  }
  EXPECT_EQ(seen[0], (std::set<std::string>{"2D", "split-k"}));  // x=4,y=2
  EXPECT_EQ(seen[1], (std::set<std::string>{"1D", "split-k"}));  // x=8
  EXPECT_EQ(seen[2], (std::set<std::string>{"2D", "split-k"}));  // x=4,y=4
  EXPECT_EQ(seen[3], (std::set<std::string>{"2.5D", "3D"}));     // x=4,y=4,z=2
}

TEST_F(RealSpaceTest, BestPerClassIsEachClasssBestInClassOrder) {
  const std::vector<ClassBest> bests = BestPerClass(*explorer_, problem_);
  ASSERT_EQ(bests.size(), kScheduleClasses.size());  // every class turns up on these meshes
  for (size_t i = 0; i < bests.size(); ++i) {
    const ClassBest& b = bests[i];
    EXPECT_EQ(b.schedule_class, kScheduleClasses[i]);
    EXPECT_EQ(Class(b.best), b.schedule_class);
    EXPECT_EQ(b.mesh, meshes_[b.best.mesh].ToString());
    ASSERT_TRUE(b.lower_bound_ratio.has_value());
    EXPECT_GT(*b.lower_bound_ratio, 0);
    for (const Candidate& c : explorer_->candidates()) {
      if (Class(c) == b.schedule_class) {
        EXPECT_FALSE(Explorer::Better(c, b.best)) << c.trace;
      }
    }
  }
}

}  // namespace
}  // namespace meshtune::search
