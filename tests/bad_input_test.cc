// Malformed problems, meshes and traces: each gets InvalidArgument with a message that
// names the offending token, index or extent, and nothing crashes.
#include <gtest/gtest.h>

#include <string>

#include "engine/explain.h"

namespace meshtune::engine {
namespace {

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kSumma[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\n"
    "divide(k, ko, ki, 2)\n"
    "reorder(mo, no, ko, mi, ni, ki)\n";

// The error message of explaining `trace` for (expr, extents) on `mesh`; "" when it ran.
std::string Error(const std::string& expr, const std::string& extents, const std::string& mesh,
                  const std::string& trace = kSumma) {
  v1::ExplainRequest r;
  r.mutable_problem()->set_expr(expr);
  r.mutable_problem()->set_extents(extents);
  r.mutable_mesh()->set_axes(mesh);
  r.mutable_trace()->set_text(trace);
  absl::StatusOr<v1::ExplainResponse> out = Explain(r);
  if (out.ok()) return "";
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  return std::string(out.status().message());
}

std::string ProblemError(const std::string& expr, const std::string& extents = "m=4,n=4,k=4") {
  return Error(expr, extents, "x=2,y=2");
}

TEST(BadInputTest, EmptyExpression) {
  EXPECT_EQ(ProblemError(""),
            "expression column 1: empty expression (expected e.g. C[m,n] += A[m,k] * B[k,n])");
  EXPECT_EQ(ProblemError("   "),
            "expression column 4: empty expression (expected e.g. C[m,n] += A[m,k] * B[k,n])");
}

TEST(BadInputTest, UnbalancedBrackets) {
  EXPECT_EQ(ProblemError("C[m,n] += A[m,k] * B[k,n"),
            "expression column 21: unbalanced '[' of B: no closing ']'");
  EXPECT_EQ(ProblemError("C[m,n] += A[m,k]] * B[k,n]"),
            "expression column 17: unbalanced ']' with no matching '['");
  EXPECT_EQ(ProblemError("C[m,n] += A[m,k * B[k,n]"),
            "expression column 17: expected ',' or ']' in A[...] but found '*'");
}

TEST(BadInputTest, UnknownIndex) {
  EXPECT_EQ(ProblemError(kMatmul, "m=4,n=4"),
            "index k has no extent (add k=<size> to the extents)");
  EXPECT_EQ(
      ProblemError(kMatmul, "m=4,n=4,k=4,q=8"),
      "extent given for unknown index q (the indices of C[m,n] += A[m,k] * B[k,n] are k, m, n)");
}

TEST(BadInputTest, IndexRepeatedInOneTensor) {
  EXPECT_EQ(ProblemError("C[m,n] += A[m,m] * B[m,n]", "m=4,n=4"),
            "expression column 15: index m is repeated in tensor A (diagonal accesses are not "
            "supported)");
}

TEST(BadInputTest, OutputIndexNothingReads) {
  EXPECT_EQ(ProblemError("C[m,n] += A[m,k] * B[k,j]", "m=4,n=4,k=4,j=4"),
            "expression column 5: index n of the output C[m,n] is read by no operand");
}

TEST(BadInputTest, TensorWithTwoRanks) {
  EXPECT_EQ(ProblemError("C[m,n] += A[m,k] * A[k]"),
            "expression column 20: tensor A is used with 2 indices in A[m,k] but 1 in A[k]");
}

TEST(BadInputTest, ZeroNegativeAndOverflowingExtents) {
  EXPECT_EQ(ProblemError(kMatmul, "m=0,n=4,k=4"),
            "extents column 3: extent of m must be positive, got 0");
  EXPECT_EQ(ProblemError(kMatmul, "m=4,n=-4,k=4"),
            "extents column 7: extent of n must be positive, got -4");
  EXPECT_EQ(ProblemError(kMatmul, "m=4,n=4,k=99999999999999999999"),
            "extents column 11: extent of k '99999999999999999999' overflows a 64-bit integer");
  EXPECT_EQ(ProblemError(kMatmul, "m=16777216,n=33554432,k=4"),
            "tensor C[m,n] is too large: more than 2^48 elements");
}

TEST(BadInputTest, MeshAxisOfSizeZeroAndOtherBadMeshes) {
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "x=2,y=0"),
            "mesh column 7: mesh axis y has size 0; sizes must be at least 1");
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2,z=2,w=2"),
            "mesh column 13: mesh axis w is one too many: a mesh has 1 to 3 axes");
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "x=1000,y=1000"),
            "mesh column 10: mesh axis y=1000 makes the mesh over 65536 ranks");
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", ""),
            "mesh column 1: no mesh axes given (expected e.g. x=8,y=8)");
}

TEST(BadInputTest, ShardOfUnknownTensorOrOntoUnknownAxis) {
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", std::string(kSumma) + "shard(Z, m@x)\n"),
            "instruction 4, shard(Z, m@x): unknown tensor Z (tensors: C, A, B)");
  EXPECT_EQ(
      Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", std::string(kSumma) + "shard(A, m@w)\n"),
      "instruction 4, shard(A, m@w): unknown mesh axis w in shard target w (mesh axes: x, y)");
}

TEST(BadInputTest, RotateByANonDistributedLoop) {
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2",
                  std::string(kSumma) + "shard(A, m@x, k@y)\ncommunicate(A, ko, rotate=[ki])\n"),
            "instruction 5, communicate(A, ko, rotate=[ki]): rotate by loop ki, which is not "
            "distributed; rotate names distributed loops");
}

TEST(BadInputTest, NonAsciiBytes) {
  EXPECT_EQ(ProblemError("C[m,n] += A[m,k] * B[k,\xC3\xB1]"),
            "expression line 1, column 24: byte 0xC3 is not printable ASCII");
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", "divide(k, ko, ki, 2) # caf\xC3\xA9\n"),
            "trace line 1, column 27: byte 0xC3 is not printable ASCII");
}

TEST(BadInputTest, OneMegabyteOfInput) {
  const std::string big(1 << 20, 'A');
  EXPECT_EQ(ProblemError(big), "expression is 1048576 bytes long; the limit is 4096 bytes");
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", big),
            "trace is 1048576 bytes long; the limit is 65536 bytes");
  EXPECT_EQ(ProblemError(kMatmul, big), "extents is 1048576 bytes long; the limit is 4096 bytes");
}

TEST(BadInputTest, MalformedTraces) {
  auto trace_error = [](const std::string& t) {
    return Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", t);
  };
  EXPECT_EQ(
      trace_error("distrbute([m], [mo], [mi], [x])\n"),
      "trace line 1, column 1: unknown primitive 'distrbute' (primitives: split, divide, reorder, "
      "distribute, shard, communicate, tensorize)");
  EXPECT_EQ(trace_error("divide(k, ko, ki)\n"),
            "trace line 1, column 17: too few arguments to divide; expected divide(loop, outer, "
            "inner, parts)");
  EXPECT_EQ(trace_error("divide(k, ko, ki, 2, 3)\n"),
            "trace line 1, column 20: too many arguments to divide; expected divide(loop, outer, "
            "inner, parts)");
  EXPECT_EQ(trace_error("divide(k, ko, ki, two)\n"),
            "trace line 1, column 19: expected number of parts (an integer) but found 'two'");
  EXPECT_EQ(
      trace_error("distribute([m, [mo], [mi], [x])\n"),
      "trace line 1, column 16: expected a name in the list of loops to distribute but found '['");
  EXPECT_EQ(trace_error("shard(A, m x)\n"),
            "trace line 1, column 12: expected '@' after dim m (as in m@x) but found 'x'");
  EXPECT_EQ(trace_error("shard(A, k@(x+y%2)\n"),
            "trace line 1, column 16: expected ')' in shard target but found '%'");
  EXPECT_EQ(trace_error("shard(A, k@x+y%2)\n"),
            "trace line 1, column 15: '%' applies to the whole shard target: write it as (x+y)%8");
  EXPECT_EQ(trace_error("divide(k, ko, ki, 2) divide(m, mo, mi, 2)\n"),
            "trace line 1, column 22: unexpected 'divide' after a call; write one call a line");
  EXPECT_EQ(
      trace_error("tensorize([k, m, n], gemm)\n"),
      "instruction 1, tensorize([k, m, n], gemm): unknown kernel gemm (kernels: matmul, matmul_ta, "
      "matmul_tb, matmul_tab, mul, add, contraction)");
  EXPECT_EQ(trace_error("divide(k, ko, ki, 2\n"),
            "trace line 1, column 1: unbalanced '(' of divide: no closing ')'");
}

TEST(BadInputTest, ContractionWithTooManyOperandsAndBadSums) {
  EXPECT_EQ(ProblemError("C[m] += A[m] * B[m] * D[m] * E[m]", "m=4"),
            "expression column 30: a contraction has at most 3 operands; E is the 4th");
  EXPECT_EQ(ProblemError("C[m] = A[m,k] + B[m]", "m=4,k=4"),
            "expression column 12: index k of A[m,k] is not in the output; an element-wise sum "
            "cannot reduce");
  EXPECT_EQ(ProblemError("C[m,n] += A[m,k] * C[k,n]"),
            "expression column 20: output tensor C also appears on the right-hand side");
}

TEST(BadInputTest, HugeTokensAreQuotedShort) {
  // Every message quotes at most base::kMaxExcerpt characters of a token: the start, "...",
  // the end.
  const std::string name(30000, 'q');
  std::string e = Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", name + "(k, ko, ki, 2)\n");
  EXPECT_EQ(
      e, "trace line 1, column 1: unknown primitive '" + std::string(58, 'q') + "..." +
             std::string(19, 'q') +
             "' (primitives: split, divide, reorder, distribute, shard, communicate, tensorize)");
  e = Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", std::string(kSumma) + "shard(" + name + ", m@x)\n");
  EXPECT_LT(e.size(), 300u) << e;
  EXPECT_EQ(e.rfind("instruction 4, shard(qqq", 0), 0u) << e;
  EXPECT_NE(e.find(": unknown tensor qqq"), std::string::npos) << e;
  e = Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2", "divide(" + name + ", ko, ki, 2)\n");
  EXPECT_LT(e.size(), 400u) << e;
  const std::string long_index(2000, 'i');
  e = ProblemError("C[m," + long_index + "," + long_index + "] += A[m,k] * B[k,n]");
  EXPECT_LT(e.size(), 300u) << e;
  EXPECT_NE(e.find("is repeated in tensor C"), std::string::npos) << e;
  e = Error(kMatmul, "m=4,n=4,k=4", std::string(1000, 'x') + "=2");
  EXPECT_EQ(e,
            "instruction 1, distribute([m,n], [mo,no], [mi,ni], [x,y]): unknown mesh axis x (mesh "
            "axes: " +
                std::string(58, 'x') + "..." + std::string(19, 'x') + ")");
  e = Error(kMatmul, "m=4,n=4,k=4", "x=2,y=2,z=2," + std::string(1000, 'w') + "=2");
  EXPECT_LT(e.size(), 200u) << e;
}

TEST(BadInputTest, IterationSpaceOverflowingInt64) {
  // 2^66 points: every product of extents overflows 64 bits before anything runs.
  EXPECT_EQ(ProblemError(kMatmul, "m=4194304,n=4194304,k=4194304"),
            "the iteration space of C[m,n] += A[m,k] * B[k,n] is too large: the extents of k, m, n "
            "multiply to "
            "more than 2^62 points");
  EXPECT_EQ(ProblemError(kMatmul, "m=16777216,n=16777216,k=16777216"),
            "the iteration space of C[m,n] += A[m,k] * B[k,n] is too large: the extents of k, m, n "
            "multiply to "
            "more than 2^62 points");
  // 2^62 exactly is allowed (each tensor 2^42 elements).
  EXPECT_EQ(ProblemError(kMatmul, "m=2097152,n=2097152,k=1048576"), "");
}

TEST(BadInputTest, MeshAxisNamedLikeAnIndex) {
  EXPECT_EQ(Error(kMatmul, "m=4,n=4,k=4", "k=2"),
            "mesh axis k has the same name as an index of C[m,n] += A[m,k] * B[k,n]; rename one");
}

}  // namespace
}  // namespace meshtune::engine
