// The property behind wisdom programs (codegen/program_proto.h): for every checked legal
// point of small schedule spaces (tests/space_sweep.h: the legal points, or a seeded sample
// of --max-points), the lowered Program sent through meshtune.v1.Program's bytes and read
// back is the same program — the same message again field by field, the same dump,
// pseudo-code, standalone C++ and callable kernel — and the program read back runs on the
// caller's memory on every rank of the mesh simulator to the reference's answer
// (tests/bound_run.h). Problems: matmul and its transposed forms, batched matmul, MTTKRP,
// mat-vec, an element-wise sum and a split-k shape; 1D and 2D meshes, with and without
// replication; the spaces hold prefetched schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/emit/emit_cpp.h"
#include "codegen/emit/pseudocode.h"
#include "codegen/program_proto.h"
#include "tests/bound_run.h"
#include "tests/space_sweep.h"

namespace meshtune::testing {

void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.Name(); }

namespace {

// 12 points a space in the suite (38 spaces, 16 s of a core);
// //tests:program_proto_space_full_test checks 25 (--max-points 25).
int64_t g_max_points = 12;

// "" when `p` survives the trip through bytes exactly and the copy computes the answer.
std::string RoundTrip(const ir::Problem& problem, const codegen::Program& p) {
  const std::string bytes = codegen::ToProto(p).SerializeAsString();
  v1::Program parsed;
  if (!parsed.ParseFromString(bytes)) return "the bytes do not parse";
  absl::StatusOr<codegen::Program> back = codegen::FromProto(parsed);
  if (!back.ok()) return absl::StrCat("FromProto: ", back.status().message());
  if (codegen::ToProto(*back).SerializeAsString() != bytes) return "the message differs";
  if (codegen::Dump(*back) != codegen::Dump(p)) return "the dump differs";
  if (codegen::PseudoCode(*back) != codegen::PseudoCode(p)) return "the pseudo-code differs";
  if (codegen::EmitCpp(problem, *back, "t") != codegen::EmitCpp(problem, p, "t"))
    return "the C++ differs";
  const codegen::CallableKernel a = codegen::EmitCallable(*back, "t", "k", "k.h");
  const codegen::CallableKernel b = codegen::EmitCallable(p, "t", "k", "k.h");
  if (a.header != b.header || a.source != b.source) return "the callable kernel differs";
  const std::string run = CheckBoundRun(problem, *back);
  return run.empty() ? "" : "the program read back: " + run;
}

std::vector<SweepCase> Cases() {
  const std::vector<std::pair<std::string, std::string>> small = {
      {"C[m,n] += A[m,k] * B[k,n]", "m=12,n=8,k=12"}, {"C[m,n] += A[k,m] * B[k,n]", "m=8,n=12,k=6"},
      {"C[m,n] = A[m,k] * B[n,k]", "m=6,n=8,k=12"},   {"w[i] += A[i,j] * v[j]", "i=12,j=12"},
      {"C[i,j] = A[i,j] + B[i,j]", "i=12,j=6"},       {"C[m,n] += A[m,k] * B[k,n]", "m=2,n=2,k=24"},
  };
  std::vector<SweepCase> cases;
  for (const auto& [expr, extents] : small) {
    for (const std::string mesh : {"x=2", "x=3", "x=2,y=2"}) {
      for (bool replication : {false, true}) cases.push_back({expr, extents, mesh, replication});
    }
  }
  cases.push_back({"C[b,m,n] += A[b,m,k] * B[b,k,n]", "b=2,m=4,n=6,k=4", "x=2", false});
  cases.push_back({"O[i,l] += B[i,j,k] * C[j,l] * D[k,l]", "i=6,j=4,k=4,l=6", "x=2", true});
  return cases;
}

class ProgramProtoSpaceTest : public ::testing::TestWithParam<SweepCase> {};

TEST_P(ProgramProtoSpaceTest, EveryCheckedProgramRoundTripsAndComputes) {
  const SweepCase& c = GetParam();
  absl::StatusOr<SweepResult> r =
      SweepSpace(c, g_max_points, 1, [](const ir::Computation& comp, const codegen::Program& p) {
        return RoundTrip(comp.problem(), p);
      });
  ASSERT_TRUE(r.ok()) << r.status();
  std::cout << c.Name() << ": " << r->checked << " checked (" << r->prefetched << " prefetched), "
            << r->distinct_programs << " distinct programs, " << r->failures.size()
            << " failures\n";
  EXPECT_EQ(r->checked, std::min(r->legal_points, g_max_points));
  for (size_t i = 0; i < r->failures.size() && i < 5; ++i) {
    ADD_FAILURE() << r->failures[i].error << "\n" << r->failures[i].trace;
  }
}

INSTANTIATE_TEST_SUITE_P(Spaces, ProgramProtoSpaceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<SweepCase>& info) {
                           return absl::StrCat("case", info.index);
                         });

}  // namespace
}  // namespace meshtune::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--max-points") {
      meshtune::testing::g_max_points = std::atoll(argv[i + 1]);
    }
  }
  return RUN_ALL_TESTS();
}
