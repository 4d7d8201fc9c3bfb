// Verdicts at the extremes of extents: a schedule is judged and lowered at 2^31, 2^32, 2^40
// and the documented limit (a tensor of 2^48 elements) as it is at a small extent of the
// same divisibility, and splits past the limits are refused as bad input with their own
// reason, never an isl error. Counting in 32 bits once made Megatron's MLP at b=2^31
// "lowering_unsound" and at 2^32 "unowned_element"; a single GEMM at m=2^40 and a divide
// into INT64_MAX parts ended in "internal error: ... NULL input".
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/explain.h"
#include "tests/test_util.h"

namespace meshtune {
namespace {

// What a verdict says, without the numbers that scale with the extents: per statement
// "legal" or the reason codes, and whether it lowered.
std::string Verdict(const v1::ExplainResponse& r) {
  std::vector<std::string> codes;
  for (const v1::Rejection& x : r.reasons()) codes.push_back(x.code());
  std::string out = r.legal() ? "legal" : "illegal " + absl::StrJoin(codes, ",");
  if (r.legal()) {
    out += r.lowering_error().empty() ? " lowered" : " not lowered: " + r.lowering_error();
  }
  return out;
}

std::string Summary(const v1::ExplainResponse& r) {
  if (r.statements().empty()) return Verdict(r);
  std::vector<std::string> parts;
  for (const v1::ExplainResponse& s : r.statements()) parts.push_back(Verdict(s));
  return absl::StrJoin(parts, "; ");
}

absl::StatusOr<v1::ExplainResponse> Explain(const std::string& expr, const std::string& extents,
                                            const std::string& mesh, const std::string& trace) {
  v1::ExplainRequest request;
  request.mutable_problem()->set_expr(expr);
  request.mutable_problem()->set_extents(extents);
  request.mutable_mesh()->set_axes(mesh);
  request.mutable_trace()->set_text(trace);
  return engine::Explain(request);
}

constexpr char kMlp[] = "H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]";
constexpr char kGemm[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr int64_t kSizes[] = {int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 40};

TEST(LargeExtentsTest, MegatronMlpIsJudgedAsAtSmallExtents) {
  const std::string trace = testing::ReadFile("examples/mlp_megatron.trace");
  absl::StatusOr<v1::ExplainResponse> small = Explain(kMlp, "b=8,d=4,f=8,e=4", "x=4", trace);
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_EQ(Summary(*small), "legal lowered; legal lowered");
  for (int64_t b : kSizes) {
    absl::StatusOr<v1::ExplainResponse> big =
        Explain(kMlp, absl::StrCat("b=", b, ",d=4,f=8,e=4"), "x=4", trace);
    ASSERT_TRUE(big.ok()) << "b=" << b << ": " << big.status();
    EXPECT_EQ(Summary(*big), Summary(*small)) << "b=" << b;
  }
}

// A legal and an illegal schedule of one GEMM: the same verdict from m=8 to m=2^48 (the
// most elements a tensor may have, n=k=1 so A and C stay within it).
TEST(LargeExtentsTest, GemmVerdictsHoldUpToTheLimit) {
  const std::string legal =
      "distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, m@x)\n"
      "tensorize([mi, n, k], matmul)\n";
  const std::string unreduced = "distribute([m], [mo], [mi], [x])\ntensorize([mi, n, k], matmul)\n";
  std::vector<int64_t> sizes(std::begin(kSizes), std::end(kSizes));
  sizes.push_back(int64_t{1} << 48);
  for (const std::string& trace : {legal, unreduced}) {
    absl::StatusOr<v1::ExplainResponse> small = Explain(kGemm, "m=8,n=1,k=1", "x=2", trace);
    ASSERT_TRUE(small.ok()) << small.status();
    for (int64_t m : sizes) {
      absl::StatusOr<v1::ExplainResponse> big =
          Explain(kGemm, absl::StrCat("m=", m, ",n=1,k=1"), "x=2", trace);
      ASSERT_TRUE(big.ok()) << "m=" << m << ": " << big.status();
      EXPECT_EQ(Summary(*big), Summary(*small)) << "m=" << m << "\n" << trace;
    }
  }
  absl::StatusOr<v1::ExplainResponse> small = Explain(kGemm, "m=8,n=1,k=1", "x=2", legal);
  EXPECT_EQ(Summary(*small), "legal lowered");
}

TEST(LargeExtentsTest, SplitsPastTheLimitsAreBadInput) {
  const struct {
    std::string extents, trace, message;
  } cases[] = {
      {"m=8,n=4,k=4", "divide(k, ko, ki, 9223372036854775807)\n",
       "instruction 1, divide(k, ko, ki, 9223372036854775807): 9223372036854775807 blocks of 1 "
       "would cover 9223372036854775807 iterations of k (extent 4); at most 2^48 = "
       "281474976710656"},
      {"m=8,n=4,k=4", "split(k, ko, ki, 9223372036854775807)\n",
       "instruction 1, split(k, ko, ki, 9223372036854775807): 1 blocks of 9223372036854775807 "
       "would cover 9223372036854775807 iterations of k (extent 4); at most 2^48 = "
       "281474976710656"},
      {"m=1048576,n=1048576,k=4", "divide(k, ko, ki, 1099511627776)\n",
       "instruction 1, divide(k, ko, ki, 1099511627776): 1099511627776 blocks of 1 of k would "
       "make the loops span over 2^63 iterations; at most 2^62 = 4611686018427387904"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<v1::ExplainResponse> r = Explain(kGemm, c.extents, "x=2", c.trace);
    ASSERT_FALSE(r.ok()) << c.trace;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_EQ(r.status().message(), c.message);
  }
  // At the limits themselves: a divide into 2^48 parts of an extent of 2^48 is judged.
  absl::StatusOr<v1::ExplainResponse> at =
      Explain(kGemm, "m=281474976710656,n=1,k=1", "x=2", "divide(m, mo, mi, 281474976710656)\n");
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_TRUE(at->legal());
}

}  // namespace
}  // namespace meshtune
