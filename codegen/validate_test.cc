// Translation validation of lowered Programs: the reference schedules validate, corrupted
// Programs are refused with the right tensor, loop and witness, and every legal point of
// small search spaces is lowered and validated.
#include "codegen/validate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "codegen/lower.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "search/explorer.h"
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
      absl::Status st;
      double ms = 1e9;
      for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        st = ValidateProgram(l->c, l->p);
        ms = std::min(ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      EXPECT_TRUE(st.ok()) << st << "\n" << Dump(l->p);
      std::printf("%s on %s: %.1f ms\n", file, mesh.c_str(), ms);
    }
  }
}

}  // namespace
}  // namespace meshtune::codegen
namespace meshtune::codegen {
namespace {
TEST(ValidateTest, DISABLED_Dump) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"x=2,y=2", "distribute([m,k], [mo,ko], [mi,ki], [x,y])\nshard(A, m@x, k@y)\nshard(B, k@y)\nshard(C, m@x)\ncommunicate(C, ki)\ntensorize([mi, n, ki], matmul)\n"},
      {"x=2,y=2", "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\ncommunicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n"},
      {"x=2,y=2", "distribute([m], [mo], [mi], [y])\ndivide(k, ko, ki, 2)\nreorder(mo, ko, mi, n, ki)\nshard(A, m@y)\nshard(B, k@x, n@y)\nshard(C, m@y)\ncommunicate(B, ko)\ntensorize([mi, n, ki], matmul)\n"},
      {"x=2,y=2", "distribute([m,k], [mo,ko], [mi,ki], [x,y])\ndivide(mi, mio, mii, 1)\nreorder(mo, ko, mio, mii, n, ki)\nshard(A, m@x, k@y)\nshard(B, k@y)\nshard(C, m@x)\ncommunicate(C, mio)\ntensorize([mii, n, ki], matmul)\n"},
  };
  for (const auto& [mesh, trace] : cases) {
    std::optional<Lowered> l = LowerText(kMatmul, "m=64,n=64,k=64", mesh, trace);
    if (!l) continue;
    std::printf("----\n%s%s\n%s\n", trace.c_str(), Dump(l->p).c_str(), ValidateProgram(l->c, l->p).ToString().c_str());
  }
}
}  // namespace
}  // namespace meshtune::codegen

namespace meshtune::codegen {
namespace {

// Everything the validator reads of a Program, as text: two Programs with equal keys
// validate alike (Dump() leaves out layouts, tiles, operand dims and Shift time loops).
std::string ValidationKey(const Program& p) {
  std::string key = Dump(p);
  absl::StrAppend(&key, p.accumulate ? "+=" : "=", "\n");
  for (const TensorInfo& t : p.tensors) {
    absl::StrAppend(&key, t.name, ":");
    for (const DimLayout& l : t.layout) {
      absl::StrAppend(&key, "[");
      for (const auto& [block, index] : l.blocks) absl::StrAppend(&key, block, "*", index.ToString(), ";");
      absl::StrAppend(&key, "]");
    }
    absl::StrAppend(&key, "\n");
  }
  for (const Alloc& a : p.buffers) absl::StrAppend(&key, a.buffer, "[", absl::StrJoin(a.shape, ","), "]");
  std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) walk(c);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      walk(f->body);
    } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
      absl::StrAppend(&key, "|time ", t->time_loop);
    } else if (const auto* k = std::get_if<Compute>(&s->node)) {
      for (const auto& [idx, e] : k->tile) absl::StrAppend(&key, "|tile ", idx, "=", e);
      for (const Operand& o : k->in) absl::StrAppend(&key, "|dims ", absl::StrJoin(o.dims, ","));
      absl::StrAppend(&key, "|dims ", absl::StrJoin(k->out.dims, ","));
    }
  };
  walk(p.body);
  return key;
}

struct SpaceResult {
  int64_t legal = 0, lowered = 0, distinct = 0, unlowerable = 0;
  std::vector<std::string> failures;  // trace + message, one per distinct failing Program
  int64_t failing_points = 0;
  double judge_s = 0, lower_s = 0, validate_s = 0;
};

// Every legal point of the space of `expr` on `mesh`: replayed, lowered with offsets and
// validated (once per distinct Program).
SpaceResult ValidateSpace(const std::string& expr, const std::string& extents, const std::string& mesh) {
  SpaceResult out;
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, extents);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(mesh);
  EXPECT_TRUE(p.ok() && m.ok());
  search::CostParams params;
  params.alpha = params.alpha_coll = 1e-6;
  params.beta = params.beta_coll = 1e-9;
  params.gamma = 1e-10;
  absl::StatusOr<std::unique_ptr<search::Explorer>> e = search::Explorer::Create(*p, {*m}, {}, params);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok()) return out;
  LoweringCache cache;
  std::map<std::string, std::string> verdicts;  // validation key -> "" or the message
  auto secs = [](auto t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  (*e)->ForEachLegal([&](const search::Point& pt) {
    ++out.legal;
    search::Evaluator& ev = (*e)->evaluator(pt.mesh);
    const ir::Trace trace = ev.space().ToTrace(pt.genome);
    auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<ir::Verdict> v = ir::Judge(ev.base(), trace);
    out.judge_s += secs(t0);
    EXPECT_TRUE(v.ok() && v->legal) << trace.ToString();
    if (!v.ok() || !v->legal) return true;
    t0 = std::chrono::steady_clock::now();
    LowerOptions options;
    options.cache = &cache;
    absl::StatusOr<Program> prog = Lower(v->computation, options);
    out.lower_s += secs(t0);
    if (!prog.ok()) {
      ++out.unlowerable;
      return true;
    }
    ++out.lowered;
    const std::string key = ValidationKey(*prog);
    auto it = verdicts.find(key);
    if (it == verdicts.end()) {
      ++out.distinct;
      t0 = std::chrono::steady_clock::now();
      const absl::Status st = ValidateProgram(v->computation, *prog);
      out.validate_s += secs(t0);
      EXPECT_TRUE(st.ok() || absl::IsFailedPrecondition(st)) << st << "\n" << trace.ToString();
      it = verdicts.emplace(key, st.ok() ? "" : std::string(st.message())).first;
      if (!st.ok()) out.failures.push_back(trace.ToString() + std::string(st.message()));
    }
    if (!it->second.empty()) ++out.failing_points;
    return true;
  });
  return out;
}

TEST(ValidateTest, DISABLED_Space) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const char* only = std::getenv("VT_SPACE");
  for (auto [expr, ext, mesh] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {kMatmul, "m=8,n=8,k=8", "x=2"}, {"y[i] += A[i,j] * x[j]", "i=8,j=8", "p=2"},
           {"y[i] += A[i,j] * x[j]", "i=8,j=8", "p=2,q=2"}, {kMatmul, "m=8,n=8,k=8", "x=2,y=2"}}) {
    if (only != nullptr && mesh != only) continue;
    const SpaceResult r = ValidateSpace(expr, ext, mesh);
    std::printf("%s on %s: %lld legal, %lld lowered (%lld distinct), %lld unlowerable, %lld failing points (%zu distinct); judge %.1fs lower %.1fs validate %.1fs\n",
                expr.c_str(), mesh.c_str(), (long long)r.legal, (long long)r.lowered, (long long)r.distinct,
                (long long)r.unlowerable, (long long)r.failing_points, r.failures.size(), r.judge_s, r.lower_s, r.validate_s);
    for (const std::string& f : r.failures) std::printf("---\n%s\n", f.c_str());
  }
}

}  // namespace
}  // namespace meshtune::codegen
