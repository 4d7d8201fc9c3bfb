// Translation validation of lowered Programs: the reference schedules validate (small
// meshes, and 512^3 on 8 x 8 quickly), and corrupted Programs — and main's two known wrong
// lowerings — are refused with the right tensor, loop and witness; so are Programs whose
// blocks do not divide an extent (ragged, codegen/program.h: clipped kernel calls, padded
// storage), with their clipping removed or off by one. Whole search spaces:
// validate_space_test.cc.
#include "codegen/validate/validate.h"

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
#include "tests/test_util.h"

namespace meshtune::codegen {
namespace {

using ::meshtune::testing::ReadFile;

struct Lowered {
  ir::Computation c;
  Program p;
};

// `trace` judged legal on the problem and mesh, and lowered with offsets.
std::optional<Lowered> LowerText(const std::string& expr, const std::string& extents,
                                 const std::string& mesh, const std::string& trace) {
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

// `trace` judged legal on the problem and mesh (its blocks need not divide the extents),
// and lowered with offsets.
std::optional<Lowered> LowerRagged(const std::string& expr, const std::string& extents,
                                   const std::string& mesh, const std::string& trace) {
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

// `p` with every leaf statement replaced by edit(leaf): return the leaf to keep it, a
// Block of several statements to duplicate it, an empty Block to drop it; and every loop
// changed by `loop`, when given.
Program EditLeaves(const Program& p, const std::function<StmtPtr(const StmtPtr&)>& edit,
                   const std::function<void(For*)>& loop = nullptr) {
  std::function<StmtPtr(const StmtPtr&)> walk = [&](const StmtPtr& s) -> StmtPtr {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      Block out;
      for (const StmtPtr& c : b->body) out.body.push_back(walk(c));
      return MakeStmt(std::move(out));
    }
    if (const auto* f = std::get_if<For>(&s->node)) {
      For out = *f;
      if (loop) loop(&out);
      out.body = walk(f->body);
      return MakeStmt(std::move(out));
    }
    return edit(s);
  };
  Program q = p;
  q.body = walk(p.body);
  return q;
}

// `p` with the transfer of `tensor` changed by `change`.
Program EditTransfer(const Program& p, const std::string& tensor,
                     const std::function<void(Transfer*)>& change) {
  return EditLeaves(p, [&](const StmtPtr& s) {
    const auto* t = std::get_if<Transfer>(&s->node);
    if (t == nullptr || t->tensor != tensor) return s;
    Transfer x = *t;
    change(&x);
    return MakeStmt(std::move(x));
  });
}

// The refusal of `p`: the status and what it names.
struct Refusal {
  absl::Status status;
  Unsoundness why;
};
Refusal Refuse(const Lowered& l, const Program& p) {
  Refusal r;
  r.status = ValidateProgram(l.c, p, &r.why);
  return r;
}

using Point = std::vector<int64_t>;

Expr Mod(const Expr& a, int64_t m) { return Expr::Make(Expr::Op::kMod, {a, Expr::Const(m)}); }

// The reference traces of examples/ adapted to an s x s mesh.
std::string OnSquare(const std::string& file, int s) {
  return absl::StrReplaceAll(
      ReadFile("examples/" + file),
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
        ms = std::min(
            ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
      }
      EXPECT_TRUE(st.ok()) << st << "\n" << Dump(l->p);
      std::printf("%s on %s: %.1f ms\n", file, mesh.c_str(), ms);
    }
  }
}

std::string Text(const Refusal& r) { return std::string(r.status.message()); }

void ExpectRefused(const Refusal& r, const std::string& tensor, const std::string& loop,
                   const Point& rank) {
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status)) << r.status;
  EXPECT_EQ(r.why.code, "lowering_unsound");
  EXPECT_EQ(r.why.tensor, tensor) << r.status;
  EXPECT_EQ(r.why.loop, loop) << r.status;
  EXPECT_EQ(r.why.rank, rank) << r.status;
  EXPECT_EQ(Text(r), r.why.ToString());
}

Program EditReduce(const Program& p, const std::function<void(Reduce*)>& change) {
  return EditLeaves(p, [&](const StmtPtr& s) {
    const auto* r = std::get_if<Reduce>(&s->node);
    if (r == nullptr) return s;
    Reduce x = *r;
    change(&x);
    return MakeStmt(std::move(x));
  });
}

// Each statement `pred` picks twice in a row.
template <typename T>
Program Duplicate(const Program& p) {
  return EditLeaves(p, [](const StmtPtr& s) {
    return std::holds_alternative<T>(s->node) ? MakeStmt(Block{{s, s}}) : s;
  });
}

template <typename T>
Program Drop(const Program& p, const std::function<bool(const T&)>& pred) {
  return EditLeaves(p, [&](const StmtPtr& s) {
    const T* x = std::get_if<T>(&s->node);
    return x != nullptr && pred(*x) ? MakeStmt(Block{}) : s;
  });
}

Lowered Summa2x2() {
  std::optional<Lowered> l =
      LowerText(kMatmul, "m=16,n=16,k=16", "x=2,y=2", OnSquare("summa.trace", 2));
  EXPECT_TRUE(l.has_value());
  return *l;
}

// Split k over y, m over x: the partial results of C are all-reduced along y at C[8x:8x+8].
constexpr char kSplitK[] =
    "distribute([m,k], [mo,ko], [mi,ki], [x,y])\nshard(A, m@x, k@y)\nshard(B, k@y)\nshard(C, m@x)\n"
    "communicate(C, ki)\ntensorize([mi, n, ki], matmul)\n";

constexpr char kAgExpr[] = "C[m,n] = A[k,m] * B[k,n]";

TEST(ValidateTest, AllGatherGemmValidates) {
  for (int s : {4, 2, 3}) {
    const std::string mesh = absl::StrCat("x=", s);
    const std::string trace =
        absl::StrReplaceAll(ReadFile("examples/allgather_gemm.trace"),
                            {{"divide(n, no, ni, 4)", absl::StrCat("divide(n, no, ni, ", s, ")")}});
    std::string rotated = trace;
    rotated.replace(rotated.find("communicate(B, no)"), 18, "communicate(B, no, rotate=[mo])");
    for (const std::string& t : {trace, rotated}) {
      SCOPED_TRACE(absl::StrCat(mesh, "\n", t));
      std::optional<Lowered> l = LowerText(kAgExpr, "m=24,k=16,n=48", mesh, t);
      ASSERT_TRUE(l.has_value());
      const absl::Status st = ValidateProgram(l->c, l->p);
      EXPECT_TRUE(st.ok()) << st << "\n" << Dump(l->p);
    }
  }
}

// The symbolic check does not grow with the problem or the mesh: 512^3 on 8 x 8.
TEST(ValidateTest, LargeProblemsValidateQuickly) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"summa.trace", OnSquare("summa.trace", 8)},
      {"pumma.trace", OnSquare("pumma.trace", 8)},
      {"cannon.trace", OnSquare("cannon.trace", 8)},
  };
  for (const auto& [name, trace] : cases) {
    std::optional<Lowered> l = LowerText(kMatmul, "m=512,n=512,k=512", "x=8,y=8", trace);
    ASSERT_TRUE(l.has_value());
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status st = ValidateProgram(l->c, l->p);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(st.ok()) << name << ": " << st;
    EXPECT_LT(ms, 2000) << name;  // generous: the machine may be loaded
    std::printf("%s 512^3 on 8x8: %.1f ms\n", name.c_str(), ms);
  }
  std::optional<Lowered> ag =
      LowerText(kAgExpr, "m=512,k=512,n=512", "x=8",
                absl::StrReplaceAll(ReadFile("examples/allgather_gemm.trace"),
                                    {{"divide(n, no, ni, 4)", "divide(n, no, ni, 8)"}}));
  ASSERT_TRUE(ag.has_value());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(ValidateProgram(ag->c, ag->p).ok());
  std::printf(
      "allgather_gemm.trace 512^3 on x=8: %.1f ms\n",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

TEST(ValidateTest, RefusesAWrongBroadcastRoot) {
  const Lowered l = Summa2x2();
  // SUMMA's B comes from rank (ko, y); take it from (ko + 1) % 2 instead.
  const Refusal r = Refuse(l, EditTransfer(l.p, "B", [](Transfer* t) {
                             t->source[0] = Mod(t->source[0] + Expr::Const(1), 2);
                           }));
  ExpectRefused(r, "B", "ko", {0, 0});
  EXPECT_EQ(
      Text(r),
      "lowering_unsound: B at ko: rank (x=0, y=0) at ko=0 reads B[8, 0] from rank (x=1, y=0) for "
      "C[0, 0] += A[0, 0] * B[8, 0], which needs B[0, 0]");
}

// A pattern's own form (codegen/pattern.h, CheckForm) is checked before what it moves.
TEST(ValidateTest, RefusesAMalformedPattern) {
  const Lowered l = Summa2x2();
  Refusal r = Refuse(l, EditTransfer(l.p, "B", [](Transfer* t) { t->pattern.axes.clear(); }));
  ExpectRefused(r, "B", "ko", {});
  EXPECT_EQ(Text(r),
            "lowering_unsound: B at ko: the transfer has a malformed pattern: a Broadcast is "
            "over at least one mesh axis");
  r = Refuse(l, EditTransfer(l.p, "B", [](Transfer* t) { t->pattern.shift = 1; }));
  EXPECT_EQ(Text(r),
            "lowering_unsound: B at ko: the transfer has a malformed pattern: shift 1 on a "
            "pattern that is not a Shift");
}

TEST(ValidateTest, RefusesRootsThatDisagreeWithinAGroup) {
  const Lowered l = Summa2x2();
  // Every rank names itself as root along x: the ranks of one group disagree.
  const Refusal r =
      Refuse(l, EditTransfer(l.p, "B", [](Transfer* t) { t->source[0] = Expr::Var("x"); }));
  ExpectRefused(r, "B", "ko", {0, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: B at ko: rank (x=0, y=0) at ko=0 takes root rank (x=0, y=0) but "
            "rank (x=1, y=0) "
            "of its group takes rank (x=1, y=0)");
}

TEST(ValidateTest, RefusesAWrongSendRecvSource) {
  // A is sharded along k, so rank x needs rows 8x.. of column block ko from rank ko: a
  // point-to-point fetch. Take it from rank (ko + 1) % 2 instead.
  std::optional<Lowered> l = LowerText(
      kMatmul, "m=16,n=16,k=16", "x=2",
      "distribute([m], [mo], [mi], [x])\ndivide(k, ko, ki, 2)\nreorder(mo, ko, mi, n, ki)\n"
      "shard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\ncommunicate(A, ko)\n"
      "communicate(B, ko)\ntensorize([mi, n, ki], matmul)\n");
  ASSERT_TRUE(l.has_value());
  ASSERT_NE(Dump(l->p).find("transfer SendRecv A"), std::string::npos) << Dump(l->p);
  EXPECT_TRUE(ValidateProgram(l->c, l->p).ok());
  const Refusal r = Refuse(*l, EditTransfer(l->p, "A", [](Transfer* t) {
    t->source[0] = Mod(t->source[0] + Expr::Const(1), 2);
  }));
  ExpectRefused(r, "A", "ko", {0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: A at ko: rank (x=0) at ko=0 reads A[0, 8] from rank (x=1) for "
            "C[0, 0] += A[0, 8] * B[0, 0], which needs A[0, 0]");
}

TEST(ValidateTest, RefusesAShiftTheWrongWayRound) {
  std::optional<Lowered> l =
      LowerText(kMatmul, "m=24,n=24,k=24", "x=3,y=3", OnSquare("cannon.trace", 3));
  ASSERT_TRUE(l.has_value());
  ASSERT_TRUE(ValidateProgram(l->c, l->p).ok());
  const Refusal r = Refuse(
      *l, EditTransfer(l->p, "A", [](Transfer* t) { t->pattern.shift = -t->pattern.shift; }));
  ExpectRefused(r, "A", "ko", {0, 0});
  EXPECT_EQ(
      Text(r),
      "lowering_unsound: A at ko: rank (x=0, y=0) at ko=1 reads A[0, 16] from rank (x=0, y=2) for "
      "C[0, 0] += A[0, 16] * B[8, 0], which needs A[0, 8]");
}

TEST(ValidateTest, RefusesABoxOutsideTheSourceShard) {
  const Lowered l = Summa2x2();
  const Refusal r = Refuse(l, EditTransfer(l.p, "A", [](Transfer* t) {
                             t->src.offset[1] = t->src.offset[1] + Expr::Const(1);
                           }));
  ExpectRefused(r, "A", "ko", {0, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: A at ko: rank (x=0, y=0) at ko=0 reads A[0, 8] from rank (x=0, "
            "y=0), which does "
            "not hold it (Broadcast(axes=[1]) into TransA)");
}

TEST(ValidateTest, RefusesADroppedReduceOffset) {
  std::optional<Lowered> l = LowerText(kMatmul, "m=16,n=16,k=16", "x=2,y=2", kSplitK);
  ASSERT_TRUE(l.has_value());
  ASSERT_TRUE(ValidateProgram(l->c, l->p).ok());
  const Refusal r = Refuse(*l, EditReduce(l->p, [](Reduce* x) {
    for (Expr& e : x->global.offset) e = Expr::Const(0);
  }));
  ExpectRefused(r, "C", "ki", {1, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C at ki: rank (x=1, y=0) holds C[8, 0] but never receives C[8, 0] "
            "+= A[8, 0] * B[0, 0]");
}

TEST(ValidateTest, RefusesADroppedGatherOffset) {
  std::optional<Lowered> l =
      LowerText(kMatmul, "m=16,n=12,k=8", "x=2,y=2",
                "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
                "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
                "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n");
  ASSERT_TRUE(l.has_value());
  ASSERT_TRUE(ValidateProgram(l->c, l->p).ok());
  const Refusal r = Refuse(*l, EditTransfer(l->p, "A", [](Transfer* t) {
    for (Expr& e : t->global.offset) e = Expr::Const(0);
  }));
  ExpectRefused(r, "A", "mi", {1, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: A at mi: rank (x=1, y=0) has the kernel read TransA[0, 0], which is "
            "meant to hold "
            "A[0, 0] but no rank of its AllGather(axes=[1]) group holds A[0, 0]");
}

TEST(ValidateTest, RefusesADroppedKernelOffset) {
  // Rank x reads its own rows of A at column 8 * ko; reading column 0 every time is wrong
  // at ko = 1, and the local read cannot be told from B's fetch: both are named.
  std::optional<Lowered> l = LowerText(
      kMatmul, "m=16,n=16,k=16", "x=2",
      "distribute([m], [mo], [mi], [x])\ndivide(k, ko, ki, 2)\nreorder(mo, ko, mi, n, ki)\n"
      "shard(A, m@x)\nshard(B, n@x)\nshard(C, m@x)\ncommunicate(B, ko)\n"
      "tensorize([mi, n, ki], matmul)\n");
  ASSERT_TRUE(l.has_value());
  ASSERT_TRUE(ValidateProgram(l->c, l->p).ok()) << Dump(l->p);
  const Refusal r = Refuse(*l, EditLeaves(l->p, [](const StmtPtr& s) {
    const auto* k = std::get_if<Compute>(&s->node);
    if (k == nullptr) return s;
    Compute x = *k;
    for (Expr& e : x.in[0].slice.offset) e = Expr::Const(0);
    return MakeStmt(std::move(x));
  }));
  ExpectRefused(r, "C", "", {0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=0) at ko=1 computes C[0, 0] += A[0, 0] * B[8, 0], which "
            "is no instance "
            "of the statement: either A[0, 0] should be A[0, 8] or B[8, 0] should be B[0, 0]");
}

TEST(ValidateTest, RefusesAWrongShardLayout) {
  const Lowered l = Summa2x2();
  Program p = l.p;
  for (TensorInfo& t : p.tensors) {
    if (t.name == "C")
      t.layout[0].blocks[0].second = Mod(t.layout[0].blocks[0].second + Expr::Const(1), 2);
  }
  const Refusal r = Refuse(l, p);
  ExpectRefused(r, "C", "", {0, 0});
  EXPECT_EQ(
      Text(r),
      "lowering_unsound: C: rank (x=0, y=0) at ko=0 computes C[8, 0] += A[0, 0] * B[0, 0], which "
      "is no "
      "instance of the statement: either C[8, 0] should be C[0, 0] or A[0, 0] should be A[8, 0]");
}

TEST(ValidateTest, RefusesElementsOutsideTheTensors) {
  // Every rank holds everything and computes all of C. Give A and C a block along x of
  // their whole size: rank 0 still holds them, rank 1 holds rows 16..31, past the tensors,
  // and computes products there that are no instances of the statement (every element of
  // C still has a holder and gets each of its products exactly once).
  std::optional<Lowered> l =
      LowerText(kMatmul, "m=16,n=16,k=16", "x=2", "tensorize([m, n, k], matmul)\n");
  ASSERT_TRUE(l.has_value());
  ASSERT_TRUE(ValidateProgram(l->c, l->p).ok()) << Dump(l->p);
  Program p = l->p;
  for (TensorInfo& t : p.tensors) {
    if (t.name != "B") t.layout[0].blocks = {{16, Expr::Var("x")}};
  }
  const Refusal r = Refuse(*l, p);
  ExpectRefused(r, "C", "", {1});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=1) computes C[16, 0] += A[16, 0] * B[0, 0], which is no "
            "instance of "
            "the statement");
}

TEST(ValidateTest, RefusesAMissingReduce) {
  std::optional<Lowered> l = LowerText(kMatmul, "m=16,n=16,k=16", "x=2,y=2", kSplitK);
  ASSERT_TRUE(l.has_value());
  const Refusal r = Refuse(*l, Drop<Reduce>(l->p, [](const Reduce&) { return true; }));
  ExpectRefused(r, "C", "", {0, 0});
  EXPECT_EQ(
      Text(r),
      "lowering_unsound: C: rank (x=0, y=0) accumulates into PartC, which no reduction reads");
}

TEST(ValidateTest, RefusesAMissingZero) {
  std::optional<Lowered> l = LowerText(kMatmul, "m=16,n=16,k=16", "x=2,y=2", kSplitK);
  ASSERT_TRUE(l.has_value());
  const Refusal r = Refuse(*l, Drop<Alloc>(l->p, [](const Alloc& a) { return a.zero; }));
  ExpectRefused(r, "C", "", {0, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=0, y=0) accumulates into PartC before it is ever zeroed");
}

// An output copied along x (split k on x=4, C on every rank) ends on the layer x=0: its
// Reduce onto rank 0 is sound, and a local add leaves rank 0 without the others' sums.
// Where the application keeps every copy (given replicated), the runtime's Reduce sums
// into every holder of the group, as an AllReduce does: both are sound.
TEST(ValidateTest, AnOutputCopiedAlongAnAxisEndsOnOneLayer) {
  std::optional<Lowered> l =
      LowerText(kMatmul, "m=8,n=8,k=16", "x=4",
                "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\n"
                "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n");
  ASSERT_TRUE(l.has_value());
  const auto with_kind = [](const Program& p, CommPattern::Kind kind) {
    return EditLeaves(p, [kind](const StmtPtr& s) {
      const auto* red = std::get_if<Reduce>(&s->node);
      if (red == nullptr) return s;
      Reduce x = *red;
      x.pattern.kind = kind;
      if (kind == CommPattern::Kind::kLocal) x.pattern.axes.clear();
      return MakeStmt(std::move(x));
    });
  };
  EXPECT_EQ(Text(Refuse(*l, l->p)), "");
  EXPECT_EQ(Text(Refuse(*l, with_kind(l->p, CommPattern::Kind::kLocal))),
            "lowering_unsound: C at ki: rank (x=0) holds C[0, 0] but never receives C[0, 0] += "
            "A[0, 4] * B[4, 0]");
  Program kept = l->p;
  for (TensorInfo& t : kept.tensors) {
    if (t.is_output) t.given.kind = ir::GivenLayout::Kind::kReplicated;
  }
  EXPECT_EQ(Text(Refuse(*l, kept)), "");
  EXPECT_EQ(Text(Refuse(*l, with_kind(kept, CommPattern::Kind::kAllReduce))), "");
}

// GEMM-ReduceScatter as a ring (examples/gemm_ring_reducescatter.trace): sound as lowered,
// ending one step before the holders (hop) or, skewed, on them; refused when the ring turns
// the wrong way, when the last step is left out, and when its buffer is zeroed at each step
// (a plain reduce-scatter's placement) so that the sums do not ride the ring.
TEST(ValidateTest, RingReductions) {
  const std::string ring = ReadFile("examples/gemm_ring_reducescatter.trace");
  std::optional<Lowered> hop = LowerText(kMatmul, "m=8,n=16,k=8", "x=4", ring);
  ASSERT_TRUE(hop.has_value());
  EXPECT_TRUE(ValidateProgram(hop->c, hop->p).ok());
  std::optional<Lowered> home =
      LowerText(kMatmul, "m=8,n=16,k=8", "x=4",
                absl::StrReplaceAll(ring, {{"shard(C, n@x)", "shard(C, n@(x+3)%4)"}}));
  ASSERT_TRUE(home.has_value());
  EXPECT_TRUE(ValidateProgram(home->c, home->p).ok());

  const Refusal turned =
      Refuse(*hop, EditReduce(hop->p, [](Reduce* x) { x->pattern.shift = -x->pattern.shift; }));
  ExpectRefused(turned, "C", "", {0});
  EXPECT_EQ(Text(turned),
            "lowering_unsound: C: rank (x=0) at no=1 computes C[0, 12] += A[0, 0] * B[0, 4], "
            "which is no instance of the statement: either C[0, 12] should be C[0, 4] or "
            "B[0, 4] should be B[0, 12]");
  const Refusal short_of =
      Refuse(*hop, EditReduce(hop->p, [](Reduce* x) { x->pattern.hop = false; }));
  ExpectRefused(short_of, "C", "", {0});
  EXPECT_EQ(Text(short_of),
            "lowering_unsound: C: rank (x=0) at no=0 computes C[0, 4] += A[0, 0] * B[0, 0], "
            "which is no instance of the statement: either C[0, 4] should be C[0, 0] or "
            "B[0, 0] should be B[0, 4]");

  std::optional<Lowered> plain =
      LowerText("C[m,n] = A[m,k] * B[k,n]", "m=8,n=16,k=8", "x=4",
                absl::StrReplaceAll(ReadFile("examples/gemm_reducescatter.trace"),
                                    {{"communicate(C, no, prefetch=1)", "communicate(C, no)"}}));
  ASSERT_TRUE(plain.has_value());
  const Refusal zeroed = Refuse(*plain, EditReduce(plain->p, [](Reduce* x) {
    x->pattern = CommPattern{CommPattern::Kind::kRingReduce, {0}, -1, true};
  }));
  ExpectRefused(zeroed, "C", "no", {});
  EXPECT_EQ(Text(zeroed),
            "lowering_unsound: C at no: the ring reduction needs PartC zeroed once, just before "
            "loop no; the sums ride the ring through all its steps");
}

TEST(ValidateTest, RefusesDuplicatedContributions) {
  const Lowered l = Summa2x2();
  const Refusal kernel = Refuse(l, Duplicate<Compute>(l.p));
  ExpectRefused(kernel, "C", "", {0, 0});
  EXPECT_EQ(
      Text(kernel),
      "lowering_unsound: C: rank (x=0, y=0) receives C[0, 0] += A[0, 0] * B[0, 0] twice: from rank "
      "(x=0, y=0) at ko=0 (kernel call 1 of 2) and from rank (x=0, y=0) at ko=0 (kernel call 2 of "
      "2)");
  std::optional<Lowered> split = LowerText(kMatmul, "m=16,n=16,k=16", "x=2,y=2", kSplitK);
  ASSERT_TRUE(split.has_value());
  const Refusal reduce = Refuse(*split, Duplicate<Reduce>(split->p));
  ExpectRefused(reduce, "C", "ki", {0, 0});
  EXPECT_EQ(
      Text(reduce),
      "lowering_unsound: C at ki: rank (x=0, y=0) receives C[0, 0] += A[0, 0] * B[0, 0] twice: "
      "from rank (x=0, y=0) through AllReduce(axes=[1]) of PartC (reduction 1 of 2) and from rank "
      "(x=0, y=0) through AllReduce(axes=[1]) of PartC (reduction 2 of 2)");
}

constexpr char kRsExpr[] = "C[m,n] = A[m,k] * B[k,n]";

// The prefetched examples on small meshes: SUMMA (both operands), the all-gather ring and
// GEMM-ReduceScatter (the output).
std::vector<std::pair<std::string, std::optional<Lowered>>> PrefetchedExamples() {
  std::vector<std::pair<std::string, std::optional<Lowered>>> out;
  for (int s : {2, 3}) {
    out.emplace_back(absl::StrCat("summa_prefetch on ", s, "x", s),
                     LowerText(kMatmul, "m=24,n=12,k=36", absl::StrCat("x=", s, ",y=", s),
                               OnSquare("summa_prefetch.trace", s)));
  }
  for (int s : {4, 2, 3}) {
    const std::string divide = absl::StrCat("divide(n, no, ni, ", s, ")");
    out.emplace_back(
        absl::StrCat("allgather_gemm_prefetch on x=", s),
        LowerText(kAgExpr, "m=24,k=16,n=48", absl::StrCat("x=", s),
                  absl::StrReplaceAll(ReadFile("examples/allgather_gemm_prefetch.trace"),
                                      {{"divide(n, no, ni, 4)", divide}})));
    out.emplace_back(absl::StrCat("gemm_reducescatter on x=", s),
                     LowerText(kRsExpr, "m=24,k=48,n=48", absl::StrCat("x=", s),
                               absl::StrReplaceAll(ReadFile("examples/gemm_reducescatter.trace"),
                                                   {{"divide(n, no, ni, 4)", divide}})));
  }
  return out;
}

TEST(ValidateTest, PrefetchedSchedulesValidate) {
  for (const auto& [name, l] : PrefetchedExamples()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(l.has_value());
    ASSERT_NE(Dump(l->p).find("prefetch=1"), std::string::npos) << Dump(l->p);
    const absl::Status st = ValidateProgram(l->c, l->p);
    EXPECT_TRUE(st.ok()) << st << "\n" << Dump(l->p);
  }
}

Lowered SummaPrefetch2x2() {
  std::optional<Lowered> l =
      LowerText(kMatmul, "m=16,n=16,k=16", "x=2,y=2", OnSquare("summa_prefetch.trace", 2));
  EXPECT_TRUE(l.has_value());
  return *l;
}

TEST(ValidateTest, RefusesAWrongRootOfAPrefetchedBroadcast) {
  // Prefetch changes when a transfer runs, not what it brings: a wrong root is still found.
  const Lowered l = SummaPrefetch2x2();
  const Refusal r = Refuse(l, EditTransfer(l.p, "B", [](Transfer* t) {
                             t->source[0] = Mod(t->source[0] + Expr::Const(1), 2);
                           }));
  ExpectRefused(r, "B", "ko", {0, 0});
  EXPECT_EQ(
      Text(r),
      "lowering_unsound: B at ko: rank (x=0, y=0) at ko=0 reads B[8, 0] from rank (x=1, y=0) for "
      "C[0, 0] += A[0, 0] * B[8, 0], which needs B[0, 0]");
}

TEST(ValidateTest, RefusesAPrefetchedTransferOutsideItsLoop) {
  // A's prefetched fetch hoisted out of the loop over ko: no step drives its two halves.
  const Lowered l = SummaPrefetch2x2();
  StmtPtr hoisted;
  Program q = EditLeaves(l.p, [&](const StmtPtr& s) {
    const auto* t = std::get_if<Transfer>(&s->node);
    if (t == nullptr || t->tensor != "A") return s;
    hoisted = s;
    return MakeStmt(Block{});
  });
  ASSERT_NE(hoisted, nullptr);
  q.body = MakeStmt(Block{{hoisted, q.body}});
  const Refusal r = Refuse(l, q);
  ExpectRefused(r, "A", "ko", {});
  EXPECT_EQ(Text(r),
            "lowering_unsound: A at ko: the prefetched transfer is not in the body of loop ko's "
            "For (it is outside every loop): no step of its loop drives its two halves");
  // Named after another loop than the one around it.
  const Refusal other = Refuse(l, EditTransfer(l.p, "A", [](Transfer* t) { t->loop = "mi"; }));
  ExpectRefused(other, "A", "mi", {});
  EXPECT_EQ(Text(other),
            "lowering_unsound: A at mi: the prefetched transfer is not in the body of loop mi's "
            "For (its innermost loop is ko): no step of its loop drives its two halves");
}

TEST(ValidateTest, RefusesTwoTransfersIntoOnePrefetchedBuffer) {
  const Lowered l = SummaPrefetch2x2();
  const Refusal r = Refuse(l, EditLeaves(l.p, [](const StmtPtr& s) {
                             const auto* t = std::get_if<Transfer>(&s->node);
                             return t != nullptr && t->tensor == "A" ? MakeStmt(Block{{s, s}}) : s;
                           }));
  ExpectRefused(r, "A", "ko", {});
  EXPECT_EQ(Text(r),
            "lowering_unsound: A at ko: the prefetched transfer shares TransA with another "
            "transfer or reduction; a double-buffered buffer has one");
  const Refusal deep = Refuse(l, EditTransfer(l.p, "A", [](Transfer* t) { t->prefetch = 2; }));
  EXPECT_EQ(Text(deep),
            "lowering_unsound: A at ko: the prefetched transfer has prefetch=2; a buffer has two "
            "halves (prefetch=1)");
}

TEST(ValidateTest, RefusesAPrefetchedReductionWhoseHalvesAreNotZeroed) {
  std::optional<Lowered> l =
      LowerText(kRsExpr, "m=16,k=32,n=16", "x=4", ReadFile("examples/gemm_reducescatter.trace"));
  ASSERT_TRUE(l.has_value());
  ASSERT_TRUE(ValidateProgram(l->c, l->p).ok());
  const Refusal r = Refuse(*l, Drop<Alloc>(l->p, [](const Alloc& a) { return a.zero; }));
  ExpectRefused(r, "C", "no", {});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C at no: the prefetched reduction reads PartC, which is not zeroed "
            "in the body of loop no: each step's half must start from zero");
  // A duplicated prefetched reduction adds twice, as without prefetch; it is refused first
  // for sharing its buffer.
  const Refusal twice = Refuse(*l, Duplicate<Reduce>(l->p));
  ExpectRefused(twice, "C", "no", {});
  EXPECT_EQ(Text(twice),
            "lowering_unsound: C at no: the prefetched reduction shares PartC with another "
            "transfer or reduction; a double-buffered buffer has one");
}

// The two schedules meshtune 0.4 called legal and lowered to wrong Programs. Both lower
// right now and their old faults are refused: the first's B lies on the ranks with x = ko,
// not along the reader's own y group, so it is an all-to-all, and the all-gather among the
// reader's group it once was is refused; the second's reduced block was written at the
// offset of rank x=0 on every rank.
TEST(ValidateTest, TheKnownWrongLoweringsAreRightAndTheirOldFaultsAreRefused) {
  std::optional<Lowered> gather =
      LowerText(kMatmul, "m=64,n=64,k=64", "x=2,y=2",
                "distribute([m], [mo], [mi], [y])\ndivide(k, ko, ki, 2)\nreorder(mo, ko, mi, n, "
                "ki)\nshard(A, m@y)\nshard(B, k@x, n@y)\nshard(C, m@y)\ncommunicate(B, ko)\n"
                "tensorize([mi, n, ki], matmul)\n");
  ASSERT_TRUE(gather.has_value());
  EXPECT_TRUE(ValidateProgram(gather->c, gather->p).ok());
  const Refusal old = Refuse(*gather, EditTransfer(gather->p, "B", [](Transfer* t) {
    ASSERT_EQ(t->pattern.kind, CommPattern::Kind::kAllToAll);
    t->pattern.kind = CommPattern::Kind::kAllGather;
    t->pattern.axes = {1};
  }));
  EXPECT_TRUE(absl::IsFailedPrecondition(old.status)) << old.status;
  EXPECT_EQ(old.why.tensor, "B");
  std::optional<Lowered> reduce =
      LowerText(kMatmul, "m=64,n=64,k=64", "x=2,y=2",
                "distribute([m,k], [mo,ko], [mi,ki], [x,y])\ndivide(mi, mio, mii, 1)\nreorder(mo, "
                "ko, mio, mii, n, ki)\n"
                "shard(A, m@x, k@y)\nshard(B, k@y)\nshard(C, m@x)\ncommunicate(C, "
                "mio)\ntensorize([mii, n, ki], matmul)\n");
  ASSERT_TRUE(reduce.has_value());
  EXPECT_TRUE(ValidateProgram(reduce->c, reduce->p).ok());
  const Refusal r = Refuse(*reduce, EditReduce(reduce->p, [](Reduce* x) {
    for (Expr& e : x->global.offset) e = Expr::Const(0);
  }));
  ExpectRefused(r, "C", "mio", {1, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C at mio: rank (x=1, y=0) holds C[32, 0] but never receives "
            "C[32, 0] += A[32, 0] * B[0, 0]");
}

TEST(ValidateTest, NeedsOffsets) {
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(kMatmul, "m=16,n=16,k=16");
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh("x=2,y=2");
  absl::StatusOr<ir::Computation> c = ir::Computation::Create(*p, *m);
  absl::StatusOr<ir::Verdict> v = ir::Judge(*c, *ir::ParseTrace(OnSquare("summa.trace", 2)));
  ASSERT_TRUE(v.ok() && v->legal);
  LowerOptions options;
  options.offsets = false;
  absl::StatusOr<Program> costing = Lower(v->computation, options);
  ASSERT_TRUE(costing.ok());
  const absl::Status st = ValidateProgram(v->computation, *costing);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_NE(st.message().find("offsets"), std::string::npos) << st;
}

// What the validator cannot decide is a refusal with its own reason, never a pass: SUMMA
// with its k loop made to start at the rank's x coordinate (a bound the validator does not
// model) is "unvalidated", with the loop and its bound as the witness.
TEST(ValidateTest, WhatValidationCannotDecideIsRefusedAsUnvalidated) {
  const Lowered l = Summa2x2();
  EXPECT_TRUE(AdmitProgram(l.c, l.p).ok());
  const Program moved = EditLeaves(
      l.p, [](const StmtPtr& s) { return s; },
      [](For* f) {
        if (f->var == "ko") f->lo = Expr::Var("x");
      });
  EXPECT_TRUE(absl::IsUnimplemented(ValidateProgram(l.c, moved)));
  const absl::Status admitted = AdmitProgram(l.c, moved);
  EXPECT_TRUE(absl::IsFailedPrecondition(admitted));
  EXPECT_EQ(admitted.message(),
            "unvalidated: validation needs constant loop bounds; loop ko starts at x");
}

// ---- Blocks that do not divide an extent (ragged, codegen/program.h) ----------------------

// `p` with its kernel call changed by `change`.
Program EditKernel(const Program& p, const std::function<void(Compute*)>& change) {
  return EditLeaves(p, [&](const StmtPtr& s) {
    const auto* k = std::get_if<Compute>(&s->node);
    if (k == nullptr) return s;
    Compute x = *k;
    change(&x);
    return MakeStmt(std::move(x));
  });
}

// The clipped extent of the kernel call's index `index`, moved by `by`.
Program MoveExtent(const Program& p, const std::string& index, int64_t by) {
  return EditKernel(p, [&](Compute* k) {
    for (size_t j = 0; j < k->tile.size(); ++j) {
      if (k->tile[j].first == index) k->extent[j] += by;
    }
  });
}

// The kernel call with no clipping: it runs every point of its full tile.
Program Unclipped(const Program& p) {
  return EditKernel(p, [](Compute* k) {
    k->start.clear();
    k->extent.clear();
  });
}

// C[m,n] += A[m,k] * B[k,n] with m=7, n=5, k=3 (or 5): rows over x in blocks of ceil(7/P).
constexpr char kRows[] =
    "distribute([m], [mo], [mi], [x])\nshard(C, m@x)\nshard(A, m@x)\ntensorize([mi, n, k], "
    "matmul)\n";
// SUMMA with k in two steps of 2 (3 = 2 + 1) on a 2 x 2 or 2 x 3 mesh.
constexpr char kRaggedSumma[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 2)\nreorder(mo, no, ko, mi, "
    "ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\ncommunicate(A, ko)\n"
    "communicate(B, ko)\ntensorize([mi, ni, ki], matmul)\n";
// Both operands all-gathered along the reader's group.
constexpr char kRaggedGather[] =
    "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
    "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
    "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n";

struct RaggedCase {
  std::string name, expr, extents, mesh, trace;
};

std::vector<RaggedCase> RaggedCases() {
  const std::string cannon =
      "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 3)\nreorder(mo, no, ko, mi, "
      "ni, ki)\nshard(A, m@x, k@(x+y)%3)\nshard(B, k@(x+y)%3, n@y)\nshard(C, m@x, n@y)\n"
      "communicate(A, ko, rotate=[mo,no])\ncommunicate(B, ko, rotate=[mo,no])\n"
      "tensorize([mi, ni, ki], matmul)\n";
  const std::string summa3 =
      absl::StrReplaceAll(kRaggedSumma, {{"divide(k, ko, ki, 2)", "divide(k, ko, ki, 3)"}});
  const std::string ag = absl::StrReplaceAll(ReadFile("examples/allgather_gemm.trace"),
                                             {{"divide(n, no, ni, 4)", "divide(n, no, ni, 3)"}});
  std::string ag_ring = ag;
  ag_ring.replace(ag_ring.find("communicate(B, no)"), 18, "communicate(B, no, rotate=[mo])");
  const std::string rs = absl::StrReplaceAll(ReadFile("examples/gemm_reducescatter.trace"),
                                             {{"divide(n, no, ni, 4)", "divide(n, no, ni, 3)"}});
  const std::string ring = absl::StrReplaceAll(ReadFile("examples/gemm_ring_reducescatter.trace"),
                                               {{"divide(n, no, ni, 4)", "divide(n, no, ni, 3)"}});
  const std::string a2a = ReadFile("examples/all_to_all_steps.trace");
  return {
      {"rows on x=2", kMatmul, "m=7,n=5,k=3", "x=2", kRows},
      {"rows on x=3", kMatmul, "m=7,n=5,k=3", "x=3", kRows},
      {"rows on x=4, the last block empty", kMatmul, "m=5,n=5,k=3", "x=4", kRows},
      {"SUMMA on 2x2", kMatmul, "m=7,n=5,k=3", "x=2,y=2", kRaggedSumma},
      {"SUMMA on 2x3 (B all-to-all)", kMatmul, "m=7,n=5,k=5", "x=2,y=3", summa3},
      {"SUMMA on 2x3 prefetched", kMatmul, "m=7,n=5,k=5", "x=2,y=3",
       absl::StrReplaceAll(summa3, {{"communicate(A, ko)", "communicate(A, ko, prefetch=1)"},
                                    {"communicate(B, ko)", "communicate(B, ko, prefetch=1)"}})},
      {"PUMMA on 2x3 (A shifted)", kMatmul, "m=7,n=5,k=5", "x=2,y=3",
       absl::StrReplaceAll(summa3, {{"communicate(A, ko)", "communicate(A, ko, rotate=[no])"}})},
      {"Cannon on 3x3", kMatmul, "m=7,n=5,k=5", "x=3,y=3", cannon},
      {"all-gathers on 2x2", kMatmul, "m=7,n=5,k=3", "x=2,y=2", kRaggedGather},
      {"split k on 2x2 (AllReduce)", kMatmul, "m=7,n=5,k=3", "x=2,y=2", kSplitK},
      {"split k on 2x3 (AllReduce)", kMatmul, "m=7,n=5,k=5", "x=2,y=3", kSplitK},
      {"all-to-all steps on x=3 (A stored past its shape)", kMatmul, "m=7,n=5,k=5", "x=3", a2a},
      {"all-gather GEMM on x=3", kAgExpr, "m=7,k=5,n=11", "x=3", ag},
      {"all-gather GEMM ring on x=3", kAgExpr, "m=7,k=5,n=11", "x=3", ag_ring},
      {"GEMM-ReduceScatter on x=3", kRsExpr, "m=7,k=5,n=10", "x=3", rs},
      {"GEMM ring ReduceScatter on x=3", kMatmul, "m=7,k=5,n=10", "x=3", ring},
      {"SUMMA on 2x2, k in 4 steps (the last one empty)", kMatmul, "m=7,n=5,k=3", "x=2,y=2",
       absl::StrReplaceAll(kRaggedSumma, {{"divide(k, ko, ki, 2)", "divide(k, ko, ki, 4)"}})},
      {"all-gather GEMM on x=4, n in 4 steps (the last one empty)", kAgExpr, "m=7,k=5,n=5", "x=4",
       absl::StrReplaceAll(ag, {{"divide(n, no, ni, 3)", "divide(n, no, ni, 4)"}})},
      {"a ragged block split again (A replicated, stored past its shape)", kMatmul, "m=11,n=5,k=3",
       "x=2",
       "distribute([m], [mo], [mi], [x])\ndivide(mi, ma, mb, 2)\nreorder(mo, ma, mb, n, k)\n"
       "communicate(A, ma)\nshard(C, m@x)\ntensorize([mb, n, k], matmul)\n"},
      {"tesseract on 2x2x2", kMatmul, "m=7,n=5,k=5", "x=2,y=2,z=2",
       "distribute([m, n], [mo, no], [mi, ni], [x, y])\ndistribute([mi], [mo2], [mi2], [z])\n"
       "divide(k, ko, ki, 2)\nreorder(mo, no, mo2, ko, mi2, ni, ki)\n"
       "shard(A, m@x, m@z, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, m@z, n@y)\n"
       "communicate(A, ko)\ncommunicate(B, ko)\ntensorize([mi2, ni, ki], matmul)\n"},
      {"2.5D on 2x2x2", kMatmul, "m=7,n=6,k=7", "x=2,y=2,z=2",
       ReadFile("examples/summa_25d.trace")},
      {"element-wise sum, 1000 on x=7", "o[i] = a[i] + b[i]", "i=1000", "x=7",
       "distribute([i], [io], [ii], [x])\nshard(o, i@x)\nshard(a, i@x)\nshard(b, i@x)\n"
       "tensorize([ii], add)\n"},
  };
}

TEST(ValidateTest, RaggedSchedulesValidate) {
  for (const RaggedCase& rc : RaggedCases()) {
    SCOPED_TRACE(rc.name);
    std::optional<Lowered> l = LowerRagged(rc.expr, rc.extents, rc.mesh, rc.trace);
    ASSERT_TRUE(l.has_value());
    ASSERT_FALSE(KernelCall(l->p)->start.empty()) << Dump(l->p);  // some index is ragged
    const absl::Status st = ValidateProgram(l->c, l->p);
    EXPECT_TRUE(st.ok()) << st << "\n" << Dump(l->p);
    EXPECT_TRUE(AdmitProgram(l->c, l->p).ok());
  }
}

// The cases above with the kernel unclipped are refused: every one has a rank whose call
// runs past an extent (reading padding, or positions a gather never fills).
TEST(ValidateTest, RaggedSchedulesUnclippedAreRefused) {
  for (const RaggedCase& rc : RaggedCases()) {
    SCOPED_TRACE(rc.name);
    std::optional<Lowered> l = LowerRagged(rc.expr, rc.extents, rc.mesh, rc.trace);
    ASSERT_TRUE(l.has_value());
    const Refusal r = Refuse(*l, Unclipped(l->p));
    EXPECT_TRUE(absl::IsFailedPrecondition(r.status)) << r.status;
    EXPECT_EQ(r.why.code, "lowering_unsound");
    const Refusal over = Refuse(*l, EditKernel(l->p, [](Compute* k) {
      for (int64_t& e : k->extent) e += e != 0 ? 1 : 0;
    }));
    EXPECT_TRUE(absl::IsFailedPrecondition(over.status)) << over.status;
    const Refusal under = Refuse(*l, EditKernel(l->p, [](Compute* k) {
      for (int64_t& e : k->extent) e -= e != 0 ? 1 : 0;
    }));
    EXPECT_TRUE(absl::IsFailedPrecondition(under.status)) << under.status;
  }
}

TEST(ValidateTest, RefusesARaggedKernelRunPastTheExtent) {
  // m = 7 on x = 2: blocks of 4, rank 1's holds rows 4..6 and a row of padding. Unclipped,
  // its call computes row 7, which is no row of C.
  std::optional<Lowered> rows = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2", kRows);
  ASSERT_TRUE(rows.has_value());
  const Compute& k = *KernelCall(rows->p);
  ASSERT_EQ(k.tile.size(), 3u);
  ASSERT_EQ(k.start.size(), 3u);
  EXPECT_EQ(k.extent, (std::vector<int64_t>{0, 7, 0}));  // tile k, m, n: m is clipped at 7
  ASSERT_TRUE(ValidateProgram(rows->c, rows->p).ok());
  Refusal r = Refuse(*rows, Unclipped(rows->p));
  ExpectRefused(r, "C", "", {1});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=1) computes C[7, 0] += A[7, 0] * B[0, 0], which is no "
            "instance of the statement");
  // On x = 4 the last block is empty: rank 3's call must be skipped, rank 2's clipped at 1.
  std::optional<Lowered> empty = LowerRagged(kMatmul, "m=5,n=5,k=3", "x=4", kRows);
  ASSERT_TRUE(empty.has_value());
  r = Refuse(*empty, Unclipped(empty->p));
  ExpectRefused(r, "C", "", {2});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=2) computes C[5, 0] += A[5, 0] * B[0, 0], which is no "
            "instance of the statement");
  // SUMMA: k = 3 in steps of 2, the second step has one value of k; the broadcast boxes
  // carry padding, which the unclipped kernel multiplies.
  std::optional<Lowered> summa = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2,y=2", kRaggedSumma);
  ASSERT_TRUE(summa.has_value());
  r = Refuse(*summa, Unclipped(summa->p));
  ExpectRefused(r, "C", "", {0, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=0, y=0) at ko=1 computes C[0, 0] += A[0, 3] * B[3, 0], "
            "which is no instance of the statement");
  // All-gathers take only elements: the gathered buffer's rows past m are never filled.
  std::optional<Lowered> gather = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2,y=2", kRaggedGather);
  ASSERT_TRUE(gather.has_value());
  ASSERT_TRUE(ValidateProgram(gather->c, gather->p).ok());
  r = Refuse(*gather, Unclipped(gather->p));
  ExpectRefused(r, "A", "mi", {1, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: A at mi: rank (x=1, y=0) has the kernel read TransA[3, 0], which is "
            "meant to hold A[7, 0], past A's shape [7, 3]: its AllGather(axes=[1]) takes only "
            "elements, so nothing fills it");
}

TEST(ValidateTest, RefusesARaggedExtentOffByOne) {
  std::optional<Lowered> rows = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=3", kRows);
  ASSERT_TRUE(rows.has_value());
  ASSERT_TRUE(ValidateProgram(rows->c, rows->p).ok());
  Refusal r = Refuse(*rows, MoveExtent(rows->p, "m", 1));
  ExpectRefused(r, "C", "", {2});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=2) computes C[7, 0] += A[7, 0] * B[0, 0], which is no "
            "instance of the statement");
  r = Refuse(*rows, MoveExtent(rows->p, "m", -1));
  ExpectRefused(r, "C", "", {2});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=2) holds C[6, 0] but never receives C[6, 0] += "
            "A[6, 0] * B[0, 0]");
  // Split k on 2 x 2: rank y=1 adds k = 2 alone into the partial sums.
  std::optional<Lowered> split = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2,y=2", kSplitK);
  ASSERT_TRUE(split.has_value());
  ASSERT_TRUE(ValidateProgram(split->c, split->p).ok());
  r = Refuse(*split, MoveExtent(split->p, "k", -1));
  ExpectRefused(r, "C", "ki", {0, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C at ki: rank (x=0, y=0) holds C[0, 0] but never receives C[0, 0] "
            "+= A[0, 2] * B[2, 0]");
  r = Refuse(*split, MoveExtent(split->p, "k", 1));
  ExpectRefused(r, "C", "", {0, 1});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=0, y=1) computes C[0, 0] += A[0, 3] * B[3, 0], which is "
            "no instance of the statement");
  // A start one too far: rank 1's call covers one value fewer (rows 4 and 5 of 4..6).
  std::optional<Lowered> two = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2", kRows);
  ASSERT_TRUE(two.has_value());
  r = Refuse(*two, EditKernel(two->p, [](Compute* k) {
    for (Expr& e : k->start) e = e + Expr::Const(1);
  }));
  ExpectRefused(r, "C", "", {1});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: rank (x=1) holds C[6, 0] but never receives C[6, 0] += "
            "A[6, 0] * B[0, 0]");
}

TEST(ValidateTest, RefusesRaggedClippingOfTheWrongForm) {
  std::optional<Lowered> l = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2", kRows);
  ASSERT_TRUE(l.has_value());
  Refusal r = Refuse(*l, EditKernel(l->p, [](Compute* k) { k->start.pop_back(); }));
  ExpectRefused(r, "C", "", {});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C: the kernel call clips 2 starts and 3 extents for a tile of 3 "
            "indices");
  r = Refuse(*l, MoveExtent(l->p, "m", -8));
  ExpectRefused(r, "C", "", {});
  EXPECT_EQ(Text(r), "lowering_unsound: C: the kernel call clips m at a negative extent -1");
}

// A box copied whole may carry padding but must lie in the source's storage: SUMMA's A
// (stored [4, 2] per rank, column 1 of the ranks at y = 1 padding) moved one column on.
TEST(ValidateTest, RefusesARaggedBoxPastTheSourceStorage) {
  std::optional<Lowered> l = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2,y=2", kRaggedSumma);
  ASSERT_TRUE(l.has_value());
  const Refusal r = Refuse(*l, EditTransfer(l->p, "A", [](Transfer* t) {
    t->src.offset[1] = t->src.offset[1] + Expr::Const(1);
  }));
  ExpectRefused(r, "A", "ko", {0, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: A at ko: rank (x=0, y=0) at ko=0 reads A[0, 2] from rank (x=0, "
            "y=0), which does not hold it (Broadcast(axes=[1]) into TransA)");
}

TEST(ValidateTest, RefusesADroppedRaggedReduceOffset) {
  std::optional<Lowered> l = LowerRagged(kMatmul, "m=7,n=5,k=3", "x=2,y=2", kSplitK);
  ASSERT_TRUE(l.has_value());
  const Refusal r = Refuse(*l, EditReduce(l->p, [](Reduce* x) {
    for (Expr& e : x->global.offset) e = Expr::Const(0);
  }));
  ExpectRefused(r, "C", "ki", {1, 0});
  EXPECT_EQ(Text(r),
            "lowering_unsound: C at ki: rank (x=1, y=0) holds C[4, 0] but never receives C[4, 0] "
            "+= A[4, 0] * B[0, 0]");
}

// Ragged blocks cost no more to prove: 509^3 on 8 x 8 (blocks of 64, the last of 61).
TEST(ValidateTest, LargeRaggedProblemsValidateQuickly) {
  std::optional<Lowered> l =
      LowerRagged(kMatmul, "m=509,n=509,k=509", "x=8,y=8", OnSquare("summa.trace", 8));
  ASSERT_TRUE(l.has_value());
  ASSERT_FALSE(KernelCall(l->p)->start.empty());
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status st = ValidateProgram(l->c, l->p);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_LT(ms, 2000);
  std::printf("summa.trace 509^3 on 8x8: %.1f ms\n", ms);
  EXPECT_FALSE(ValidateProgram(l->c, Unclipped(l->p)).ok());
}

}  // namespace
}  // namespace meshtune::codegen
