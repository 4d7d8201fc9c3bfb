// Given layouts: specs and --layout flags parse or are refused with exact messages; NUMROC
// and the fixed layouts' placements agree with brute-force references over whole spaces of
// small matrices, block sizes and meshes: every element held once (cyclic, root) or
// everywhere (replicated), at a distinct offset inside its holder's local storage, where
// ScaLAPACK's column-major local matrix puts it.
#include "ir/layout.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace meshtune::ir {
namespace {

TEST(LayoutTest, SpecsRoundTrip) {
  for (const char* spec : {"block", "cyclic(64,64)", "cyclic(1,7)", "replicated", "root"}) {
    absl::StatusOr<GivenLayout> l = ParseLayout(spec);
    ASSERT_TRUE(l.ok()) << spec << ": " << l.status();
    EXPECT_EQ(l->ToString(), spec);
  }
  EXPECT_EQ(ParseLayout("cyclic(64,32)")->mb, 64);
  EXPECT_EQ(ParseLayout("cyclic(64,32)")->nb, 32);
  EXPECT_EQ(ParseLayout("root")->kind, GivenLayout::Kind::kRoot);
}

TEST(LayoutTest, BadSpecsAreRefusedWithTheSpecQuoted) {
  for (const char* spec : {"cyclic(64)", "cyclic(0,4)", "cyclic(a,b)", "Block", "cyclic(64,64",
                           "cyclic(2147483648,1)", "cyclic(-1,2)", "", "cyclic(1,2,3)"}) {
    EXPECT_EQ(ParseLayout(spec).status().message(),
              std::string("layout '") + spec +
                  "' is not block, cyclic(MB,NB) (MB, NB from 1 to 2147483647), replicated, "
                  "root or grid(AXIS or *,...)")
        << spec;
  }
  const std::string long_spec(200, 'z');
  const std::string message(ParseLayout(long_spec).status().message());
  EXPECT_LT(message.size(), 200u);
  EXPECT_EQ(message.find(long_spec), std::string::npos);
}

TEST(LayoutTest, FlagsNameTensorsOfTheProblem) {
  const Problem mm = *ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8");
  absl::StatusOr<std::map<std::string, GivenLayout>> l =
      ParseLayoutFlags({"A=cyclic(4,2)", "C=root"}, mm);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->size(), 2u);
  EXPECT_EQ(l->at("A").ToString(), "cyclic(4,2)");
  EXPECT_EQ(l->at("C").ToString(), "root");
  EXPECT_EQ(ParseLayoutFlags({"A"}, mm).status().message(),
            "--layout 'A' is not TENSOR=SPEC (e.g. A=cyclic(64,64))");
  EXPECT_EQ(ParseLayoutFlags({"D=root"}, mm).status().message(),
            "--layout names tensor 'D', which C[m,n] += A[m,k] * B[k,n] does not have (it has "
            "C, A, B)");
  EXPECT_EQ(ParseLayoutFlags({"A=root", "A=block"}, mm).status().message(),
            "--layout gives tensor A twice");
  EXPECT_EQ(ParseLayoutFlags({"B=cyclic(0,1)"}, mm).status().message(),
            "--layout B: layout 'cyclic(0,1)' is not block, cyclic(MB,NB) (MB, NB from 1 to "
            "2147483647), replicated, root or grid(AXIS or *,...)");
  const Problem bmm = *ParseProblem("C[b,m,n] = A[b,m,k] * B[b,k,n]", "b=2,m=4,n=4,k=4");
  EXPECT_EQ(ParseLayoutFlags({"A=cyclic(2,2)"}, bmm).status().message(),
            "--layout A=cyclic(2,2): cyclic lays out a matrix, and A has 3 dims");
  EXPECT_TRUE(ParseLayoutFlags({"A=replicated", "B=root", "C=block"}, bmm).ok());
}

TEST(LayoutTest, NumrocCountsWhatEachProcessHolds) {
  for (int64_t n = 0; n <= 40; ++n) {
    for (int64_t nb = 1; nb <= 6; ++nb) {
      for (int64_t procs = 1; procs <= 5; ++procs) {
        int64_t total = 0;
        for (int64_t p = 0; p < procs; ++p) {
          int64_t brute = 0;
          for (int64_t i = 0; i < n; ++i) brute += (i / nb) % procs == p ? 1 : 0;
          EXPECT_EQ(Numroc(n, nb, p, procs), brute) << n << " " << nb << " " << p << " " << procs;
          total += Numroc(n, nb, p, procs);
        }
        EXPECT_EQ(total, n);
      }
    }
  }
}

// Every rank's coordinates on `mesh`, row-major.
std::vector<std::vector<int64_t>> AllCoords(const Mesh& mesh) {
  std::vector<std::vector<int64_t>> out = {{}};
  for (const MeshAxis& a : mesh.axes) {
    std::vector<std::vector<int64_t>> next;
    for (const std::vector<int64_t>& c : out) {
      for (int64_t i = 0; i < a.size; ++i) {
        next.push_back(c);
        next.back().push_back(i);
      }
    }
    out = next;
  }
  return out;
}

// The reference for cyclic: element (i, j)'s holder row p and column q are those of its
// blocks; its local row is how many rows before i p holds, its local column how many
// columns before j q holds; column-major with leading dimension max(1, rows p holds).
TEST(LayoutTest, CyclicPlacesEveryElementOnceWhereScalapackDoes) {
  int64_t checked = 0;
  for (const char* mesh_text : {"x=1", "x=3", "x=2,y=2", "x=2,y=3", "x=3,y=1", "x=2,y=2,z=2"}) {
    const Mesh mesh = *ParseMesh(mesh_text);
    const std::vector<std::vector<int64_t>> ranks = AllCoords(mesh);
    for (int64_t m = 1; m <= 9; ++m) {
      for (int64_t n = 1; n <= 9; ++n) {
        for (int64_t mb = 1; mb <= 4; ++mb) {
          for (int64_t nb = 1; nb <= 4; ++nb) {
            const Placement pl({GivenLayout::Kind::kCyclic, mb, nb}, {m, n}, mesh);
            const int64_t prow = pl.grid_rows(), pcol = pl.grid_cols();
            std::map<std::vector<int64_t>, std::set<int64_t>> used;
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                const int64_t p = (i / mb) % prow, q = (j / nb) % pcol;
                int64_t lrow = 0, lcol = 0, rows_of_p = 0;
                for (int64_t r = 0; r < m; ++r) {
                  if ((r / mb) % prow != p) continue;
                  ++rows_of_p;
                  if (r < i) ++lrow;
                }
                for (int64_t c = 0; c < j; ++c) lcol += (c / nb) % pcol == q ? 1 : 0;
                int holders = 0;
                for (const std::vector<int64_t>& c : ranks) {
                  if (!pl.Holds(c, {i, j})) continue;
                  ++holders;
                  std::vector<int64_t> expected(c.size(), 0);
                  expected[0] = p;
                  if (c.size() > 1) expected[1] = q;
                  EXPECT_EQ(c, expected);
                  const int64_t offset = pl.LocalOffset({i, j});
                  EXPECT_EQ(offset, lrow + lcol * std::max<int64_t>(1, rows_of_p));
                  EXPECT_LT(offset, pl.LocalElements(c));
                  EXPECT_TRUE(used[c].insert(offset).second) << "offset used twice";
                }
                ASSERT_EQ(holders, 1) << mesh_text << " " << m << "x" << n << " " << mb << "," << nb
                                      << " element " << i << "," << j;
                ++checked;
              }
            }
            // Each rank's local storage is exactly what it holds.
            for (const std::vector<int64_t>& c : ranks)
              EXPECT_EQ(pl.LocalElements(c), static_cast<int64_t>(used[c].size()));
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

// The reference for grid: element (i, j, k) is on every rank whose coordinate along each
// named axis is the element's block there (ceil(extent / size) per block), at its row-major
// offset within the block's extents; ranks along unnamed axes hold copies.
TEST(LayoutTest, GridPlacesEveryElementInItsBlockRowMajor) {
  int64_t checked = 0;
  for (const char* mesh_text : {"x=1", "x=3", "x=2,y=2", "x=2,y=3", "x=4,y=1,z=2"}) {
    const Mesh mesh = *ParseMesh(mesh_text);
    std::vector<std::string> names = {"*"};
    for (const MeshAxis& a : mesh.axes) names.push_back(a.name);
    for (int64_t m = 1; m <= 7; ++m) {
      for (int64_t n = 1; n <= 5; ++n) {
        for (const std::string& a0 : names) {
          for (const std::string& a1 : names) {
            if (a0 == a1 && a0 != "*") continue;
            const std::vector<int64_t> shape = {m, 2, n};
            const GivenLayout layout{GivenLayout::Kind::kGrid, 0, 0, {a0, "*", a1}};
            const Placement pl(layout, shape, mesh);
            auto part = [&](const std::string& axis, const std::vector<int64_t>& c, int64_t extent,
                            int64_t index) {
              if (axis == "*") return true;
              for (size_t a = 0; a < mesh.axes.size(); ++a) {
                if (mesh.axes[a].name != axis) continue;
                const int64_t block = (extent + mesh.axes[a].size - 1) / mesh.axes[a].size;
                return index / block == c[a];
              }
              return false;
            };
            std::map<std::vector<int64_t>, std::set<int64_t>> used;
            for (const std::vector<int64_t>& c : AllCoords(mesh)) {
              for (int64_t i = 0; i < m; ++i) {
                for (int64_t j = 0; j < 2; ++j) {
                  for (int64_t k = 0; k < n; ++k) {
                    const bool holds = part(a0, c, m, i) && part(a1, c, n, k);
                    ASSERT_EQ(pl.Holds(c, {i, j, k}), holds)
                        << mesh_text << " " << layout.ToString();
                    if (!holds) continue;
                    const int64_t offset = pl.LocalOffset({i, j, k});
                    EXPECT_LT(offset, pl.LocalElements(c));
                    EXPECT_TRUE(used[c].insert(offset).second) << "offset used twice";
                    ++checked;
                  }
                }
              }
              EXPECT_EQ(pl.LocalElements(c), static_cast<int64_t>(used[c].size()));
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(LayoutTest, GridSpecsParseAndBadOnesAreRefused) {
  EXPECT_EQ(ParseLayout("grid(y,x)")->ToString(), "grid(y,x)");
  EXPECT_EQ(ParseLayout("grid(*,x)")->axes, (std::vector<std::string>{"*", "x"}));
  for (const char* bad : {"grid(x,x)", "grid()", "grid(x,)", "grid(1x)", "grid(x", "grid(x y)"}) {
    EXPECT_EQ(ParseLayout(bad).status().message(),
              std::string("layout '") + bad +
                  "' is not block, cyclic(MB,NB) (MB, NB from 1 to 2147483647), replicated, "
                  "root or grid(AXIS or *,...)")
        << bad;
  }
  const Problem p = *ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=4,n=4,k=4");
  EXPECT_EQ(ParseLayoutFlags({"A=grid(x)"}, p).status().message(),
            "--layout A=grid(x): names 1 axes for the 2 dims of A");
  Problem q = p;
  ASSERT_TRUE(SetLayouts({"A=grid(x,q)"}, &q).ok());
  EXPECT_EQ(CheckLayoutAxes(q, *ParseMesh("x=2,y=2")).message(),
            "--layout A=grid(x,q): the mesh x=2,y=2 has no axis q");
  EXPECT_TRUE(CheckLayoutAxes(q, *ParseMesh("x=2,q=2")).ok());
}

// The in-place form: each access reversed (matmul keeps its form), every tensor grid(y,x);
// exact refusals for each obstacle.
TEST(LayoutTest, InPlaceFormTransposesAndRefusesWhatItCannotPermute) {
  const Mesh mesh = *ParseMesh("x=2,y=2");
  auto with = [](const char* expr, const char* extents, std::vector<std::string> layouts) {
    Problem p = *ParseProblem(expr, extents);
    EXPECT_TRUE(SetLayouts(layouts, &p).ok());
    return p;
  };
  const std::vector<std::string> all64 = {"A=cyclic(64,64)", "B=cyclic(64,64)", "C=cyclic(64,64)"};
  absl::StatusOr<Problem> f =
      InPlaceForm(with("C[m,n] += A[m,k] * B[k,n]", "m=256,n=512,k=128", all64), mesh);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->ToString(), "C[n,m] += B[n,k] * A[k,m]");
  EXPECT_EQ(f->LayoutFlags(),
            (std::vector<std::string>{"A=grid(y,x)", "B=grid(y,x)", "C=grid(y,x)"}));
  EXPECT_EQ(f->ExtentsString(), "k=128,m=256,n=512");
  // One axis: Q = 1, the columns kept whole (in any block size). A matmul's k is then A's
  // columns, kept in order, and B's rows, permuted: no form.
  f = InPlaceForm(with("C[m,n] = A[m,k] * B[k,n]", "m=8,n=4,k=4",
                       {"A=cyclic(2,3)", "B=cyclic(2,4)", "C=cyclic(2,4)"}),
                  *ParseMesh("x=2"));
  EXPECT_EQ(f.status().message(),
            "no in-place form: index k is dealt differently in A=cyclic(2,3) (k in blocks of 4 "
            "over 1) and B=cyclic(2,4) (k in blocks of 2 over 2)");
  f = InPlaceForm(with("C[i,j] = A[i,j] + B[i,j]", "i=8,j=6",
                       {"A=cyclic(2,3)", "B=cyclic(2,5)", "C=cyclic(4,1)"}),
                  *ParseMesh("x=2"));
  EXPECT_EQ(f.status().message(),
            "no in-place form: index i is dealt differently in C=cyclic(4,1) (i in blocks of 4 "
            "over 2) and A=cyclic(2,3) (i in blocks of 2 over 2)");
  f = InPlaceForm(with("C[i,j] = A[i,j] + B[i,j]", "i=8,j=6",
                       {"A=cyclic(2,3)", "B=cyclic(2,5)", "C=cyclic(2,1)"}),
                  *ParseMesh("x=2"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->ToString(), "C[j,i] = A[j,i] + B[j,i]");
  EXPECT_EQ(f->LayoutFlags(),
            (std::vector<std::string>{"A=grid(*,x)", "B=grid(*,x)", "C=grid(*,x)"}));
  EXPECT_EQ(InPlaceForm(with("C[m,n] += A[m,k] * B[k,n]", "m=256,n=512,k=128",
                             {"A=cyclic(64,64)", "B=cyclic(64,64)"}),
                        mesh)
                .status()
                .message(),
            "no in-place form: C is not given in a cyclic layout");
  EXPECT_EQ(InPlaceForm(with("C[m,n] += A[m,k] * B[k,n]", "m=200,n=512,k=128", all64), mesh)
                .status()
                .message(),
            "no in-place form: m=200 is not a multiple of 128 in C=cyclic(64,64) (m in blocks of "
            "64 over 2)");
  EXPECT_EQ(InPlaceForm(with("C[m,n] += A[m,k] * B[k,n]", "m=256,n=512,k=128", all64),
                        *ParseMesh("x=2,y=2,z=2"))
                .status()
                .message(),
            "no in-place form: the mesh x=2,y=2,z=2 has more than two axes (cyclic uses the first "
            "two)");
}

TEST(LayoutTest, RootAndReplicatedHoldTheWholeTensorRowMajor) {
  const Mesh mesh = *ParseMesh("x=2,y=3");
  const std::vector<int64_t> shape = {3, 4, 2};
  const Placement root({GivenLayout::Kind::kRoot, 0, 0}, shape, mesh);
  const Placement everywhere({GivenLayout::Kind::kReplicated, 0, 0}, shape, mesh);
  for (const std::vector<int64_t>& c : AllCoords(mesh)) {
    const bool zero = c[0] == 0 && c[1] == 0;
    EXPECT_EQ(root.LocalElements(c), zero ? 24 : 0);
    EXPECT_EQ(everywhere.LocalElements(c), 24);
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 4; ++j) {
        for (int64_t k = 0; k < 2; ++k) {
          EXPECT_EQ(root.Holds(c, {i, j, k}), zero);
          EXPECT_TRUE(everywhere.Holds(c, {i, j, k}));
          EXPECT_EQ(root.LocalOffset({i, j, k}), (i * 4 + j) * 2 + k);
          EXPECT_EQ(everywhere.LocalOffset({i, j, k}), (i * 4 + j) * 2 + k);
        }
      }
    }
  }
}

}  // namespace
}  // namespace meshtune::ir
