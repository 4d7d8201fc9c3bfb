// Every problem form of docs/design.md parses, with its shapes, reduction indices and canonical
// text.
#include "ir/problem.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/mesh.h"

namespace meshtune::ir {
namespace {

Problem Parse(const std::string& expr, const std::string& extents,
              const std::string& dtype = "f32") {
  absl::StatusOr<Problem> p = ParseProblem(expr, extents, dtype);
  EXPECT_TRUE(p.ok()) << expr << ": " << p.status();
  return p.ok() ? *p : Problem{};
}

TEST(ProblemTest, Matmul) {
  const Problem p = Parse("C[m,n] += A[m,k] * B[k,n]", "m=512 n=1024 k=2048");
  EXPECT_EQ(p.indices, (std::vector<std::string>{"k", "m", "n"}));
  EXPECT_EQ(p.assign, Problem::Assign::kAccumulate);
  EXPECT_EQ(p.Tensors(), (std::vector<std::string>{"C", "A", "B"}));
  EXPECT_EQ(p.Shape("A"), (std::vector<int64_t>{512, 2048}));
  EXPECT_TRUE(p.IsReductionIndex("k"));
  EXPECT_FALSE(p.IsReductionIndex("m"));
  EXPECT_EQ(p.ToString(), "C[m,n] += A[m,k] * B[k,n]");
  EXPECT_EQ(p.ExtentsString(), "k=2048,m=512,n=1024");
}

TEST(ProblemTest, AllFormsOfTheDesign) {
  EXPECT_EQ(Parse("C[m,n] += A[k,m] * B[k,n]", "m=4,n=4,k=4").Shape("A"),
            (std::vector<int64_t>{4, 4}));
  const Problem mv = Parse("y[i] += A[i,j] * x[j]", "i=8,j=16");
  EXPECT_EQ(mv.Shape("x"), std::vector<int64_t>{16});
  const Problem bmm = Parse("C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=2,m=4,n=8,k=16");
  EXPECT_EQ(bmm.Shape("B"), (std::vector<int64_t>{2, 16, 8}));
  const Problem mttkrp = Parse("O[i,l] += B[i,j,k] * C[j,l] * D[k,l]", "i=4,j=5,k=6,l=7");
  EXPECT_EQ(mttkrp.operands.size(), 3u);
  EXPECT_TRUE(mttkrp.IsReductionIndex("j"));
  const Problem sum = Parse("C[i,j] = A[i,j] + B[i,j]", "i=4,j=4");
  EXPECT_EQ(sum.combine, Problem::Combine::kSum);
  EXPECT_EQ(sum.assign, Problem::Assign::kSet);
  EXPECT_EQ(sum.ToString(), "C[i,j] = A[i,j] + B[i,j]");
  const Problem scale = Parse("B[i] = A[i]", "i=4", "f64");
  EXPECT_EQ(scale.dtype, DType::kF64);
  const Problem dot = Parse("s[] += x[i] * y[i]", "i=4");
  EXPECT_TRUE(dot.output.indices.empty());
  const Problem syrk = Parse("C[i,j] += A[i,k] * A[j,k]", "i=4,j=4,k=8");
  EXPECT_EQ(syrk.Tensors(), (std::vector<std::string>{"C", "A"}));
}

TEST(ProblemTest, SameTensorWithDifferentShapesIsRejected) {
  absl::StatusOr<Problem> p = ParseProblem("C[i,j] += A[i,k] * A[j,k]", "i=4,j=8,k=8");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "tensor A has different shapes in A[i,k] and A[j,k]");
  EXPECT_EQ(ParseProblem("C[i] = A[i]", "i=4", "bf16").status().message(),
            "unknown dtype 'bf16' (expected f32 or f64)");
}

TEST(MeshTest, ParsesAxesAndByteSizes) {
  absl::StatusOr<Mesh> m = ParseMesh("x=4, y=2 z=2");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->Ranks(), 16);
  EXPECT_EQ(m->ToString(), "x=4,y=2,z=2");
  EXPECT_EQ(m->AxisIndex("z"), 2);
  EXPECT_EQ(*ParseByteSize("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("512M"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("100"), 100);
  EXPECT_EQ(ParseByteSize("2XB").status().message(),
            "unknown unit 'XB' in memory size '2XB' (use B, KiB, MiB, GiB or TiB)");
  EXPECT_EQ(ParseByteSize("0GiB").status().message(), "memory size '0GiB' is zero");
  EXPECT_EQ(ParseMesh("x=2,x=4").status().message(), "mesh column 5: mesh axis x is given twice");
}

// MeshOf (a mesh from values, as a request's dims give it) accepts exactly the axis lists
// whose text ParseMesh accepts, with the same mesh and the same reason, over every list of
// up to 4 axes drawn from a few names and sizes.
TEST(MeshTest, MeshOfAgreesWithParseMeshOverSmallAxisLists) {
  const std::vector<std::string> names = {"x", "y", "z", "w"};
  const std::vector<int64_t> sizes = {0, 1, 3, 300};
  std::vector<std::vector<MeshAxis>> lists = {{}};
  int checked = 0;
  for (int length = 0; length <= 4; ++length) {
    std::vector<std::vector<MeshAxis>> longer;
    for (const std::vector<MeshAxis>& axes : lists) {
      std::string text;
      for (const MeshAxis& a : axes)
        absl::StrAppend(&text, text.empty() ? "" : ",", a.name, "=", a.size);
      const absl::StatusOr<Mesh> parsed = ParseMesh(text);
      const absl::StatusOr<Mesh> built = MeshOf(axes);
      ASSERT_EQ(parsed.ok(), built.ok()) << text;
      ++checked;
      if (parsed.ok()) {
        EXPECT_EQ(built->ToString(), parsed->ToString()) << text;
      } else {
        // ParseMesh says where ("mesh column 5: ..."); MeshOf has no columns.
        absl::string_view why = parsed.status().message();
        why.remove_prefix(why.find(": ") + 2);
        EXPECT_EQ(built.status().message(), why) << text;
      }
      for (const std::string& n : names)
        for (int64_t size : sizes) {
          std::vector<MeshAxis> next = axes;
          next.push_back({n, size});
          longer.push_back(next);
        }
    }
    lists = std::move(longer);
  }
  EXPECT_EQ(checked, 1 + 16 + 16 * 16 + 16 * 16 * 16 + 16 * 16 * 16 * 16);
  EXPECT_EQ(MeshOf({{"2x", 2}}).status().message(),
            "mesh axis name 2x is not an identifier (e.g. x)");
  EXPECT_EQ(MeshOf({{"x", -2}}).status().message(),
            "mesh axis x has size -2; sizes must be at least 1");
}

}  // namespace
}  // namespace meshtune::ir
