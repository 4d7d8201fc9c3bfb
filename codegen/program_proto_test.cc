// codegen/program_proto.h: the reference schedules round-trip through meshtune.v1.Program
// exactly (and through its bytes), and malformed messages are refused with a message that
// names the part, never a crash. The whole-space property is tests/program_proto_space_test.
#include "codegen/program_proto.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/emit/emit_cpp.h"
#include "codegen/emit/pseudocode.h"
#include "tests/lower_text.h"
#include "tests/test_util.h"

namespace meshtune::codegen {
namespace {

using PExpr = v1::Program::Expr;

Program Lowered(const std::string& file) {
  return testing::LowerText("C[m,n] += A[m,k] * B[k,n]", "m=16,n=16,k=16", "x=2,y=2",
                            testing::ReadFile("examples/" + file));
}

// The first statement of kind `kind` in `s` (depth first) and its path; nullptr if none.
v1::Program::Stmt* First(v1::Program::Stmt* s, v1::Program::Stmt::NodeCase kind,
                         const std::string& path, std::string* at) {
  if (s->node_case() == kind) {
    *at = path;
    return s;
  }
  if (s->has_block()) {
    for (int i = 0; i < s->block().body_size(); ++i) {
      if (v1::Program::Stmt* f = First(s->mutable_block()->mutable_body(i), kind,
                                       absl::StrCat(path, ".block.body[", i, "]"), at)) {
        return f;
      }
    }
  }
  if (s->has_for_loop()) {
    return First(s->mutable_for_loop()->mutable_body(), kind, path + ".for_loop.body", at);
  }
  return nullptr;
}

TEST(ProgramProtoTest, TheReferenceSchedulesRoundTripExactly) {
  struct Case {
    std::string expr, extents, mesh, file;
  };
  const std::string mm = "C[m,n] += A[m,k] * B[k,n]", mm_extents = "m=512,n=1024,k=2048";
  const std::string ag = "C[m,n] = A[k,m] * B[k,n]", ag_extents = "m=2048,k=1024,n=4096";
  for (const Case& c : std::vector<Case>{
           {mm, mm_extents, "x=8,y=8", "summa.trace"},
           {mm, mm_extents, "x=8,y=8", "summa_prefetch.trace"},
           {mm, mm_extents, "x=8,y=8", "pumma.trace"},
           {mm, mm_extents, "x=8,y=8", "cannon.trace"},
           {ag, ag_extents, "x=4", "allgather_gemm.trace"},
           {ag, ag_extents, "x=4", "allgather_gemm_prefetch.trace"},
           {"C[m,n] = A[m,k] * B[k,n]", "m=2048,k=1024,n=4096", "x=4", "gemm_reducescatter.trace"},
           {mm, "m=64,n=128,k=64", "x=4", "gemm_ring_reducescatter.trace"}}) {
    SCOPED_TRACE(c.file);
    const Program p =
        testing::LowerText(c.expr, c.extents, c.mesh, testing::ReadFile("examples/" + c.file));
    ASSERT_NE(p.body, nullptr);
    const std::string bytes = ToProto(p).SerializeAsString();
    v1::Program parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    absl::StatusOr<Program> back = FromProto(parsed);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(ToProto(*back).SerializeAsString(), bytes);
    EXPECT_EQ(Dump(*back), Dump(p));
    EXPECT_EQ(PseudoCode(*back), PseudoCode(p));
    const ir::Problem problem = *ir::ParseProblem(c.expr, c.extents);
    EXPECT_EQ(EmitCpp(problem, *back, "t"), EmitCpp(problem, p, "t"));
  }
}

// What FromProto says of the SUMMA program after `edit`.
std::string ErrorAfter(const std::function<void(v1::Program*)>& edit) {
  v1::Program m = ToProto(Lowered("summa.trace"));
  edit(&m);
  absl::StatusOr<Program> p = FromProto(m);
  if (p.ok()) return "ok";
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(p.status().message());
}

TEST(ProgramProtoTest, MalformedProgramsAndExpressionsAreRefusedNamingThePart) {
  EXPECT_EQ(ErrorAfter([](v1::Program*) {}), "ok");
  EXPECT_EQ(ErrorAfter([](v1::Program* m) { m->clear_axis_sizes(); }),
            "program: a mesh of 2 axis names and 0 sizes (one to three axes)");
  EXPECT_EQ(ErrorAfter([](v1::Program* m) { m->set_axis_sizes(1, 70000); }),
            "program: axis y has size 70000");
  EXPECT_EQ(ErrorAfter([](v1::Program* m) { m->set_dtype_bytes(3); }),
            "program: dtype_bytes is 3, not 4 or 8");
  EXPECT_EQ(ErrorAfter([](v1::Program* m) { m->mutable_tensors(1)->add_dims("z"); }),
            "program.tensors[1]: tensor A has 3 dims, 2 extents, 2 local extents and 2 dim "
            "layouts");
  EXPECT_EQ(ErrorAfter([](v1::Program* m) { m->mutable_tensors(2)->set_name("A"); }),
            "program: tensor A is named twice");
  EXPECT_EQ(ErrorAfter([](v1::Program* m) { m->mutable_tensors(0)->set_is_output(false); }),
            "program: the first tensor must be the output, and only it (0 outputs)");
  EXPECT_EQ(ErrorAfter([](v1::Program* m) {
              m->mutable_buffers(0)->set_shape(0, int64_t{1} << 40);
              m->mutable_buffers(0)->set_shape(1, int64_t{1} << 40);
            }),
            "program.buffers[0]: shape has more than 2^48 elements");
  // Expressions: operator, operands, variables, divisors, depth.
  PExpr* index = nullptr;
  auto layout = [&](v1::Program* m) {
    index = m->mutable_tensors(1)->mutable_layout(0)->mutable_blocks(0)->mutable_index();
  };
  const std::string at = "program.tensors[1].layout[0].blocks[0].index";
  EXPECT_EQ(ErrorAfter([&](v1::Program* m) {
              layout(m);
              index->set_op(PExpr::OP_UNSPECIFIED);
            }),
            at + ": op 0 is not an operator");
  EXPECT_EQ(ErrorAfter([&](v1::Program* m) {
              layout(m);
              index->set_op(static_cast<PExpr::Op>(99));
            }),
            at + ": op 99 is not an operator");
  EXPECT_EQ(ErrorAfter([&](v1::Program* m) {
              layout(m);
              index->Clear();
              index->set_op(PExpr::OP_VAR);
              index->set_name("ko");
            }),
            at + ": variable \"ko\" is neither a mesh axis nor an enclosing loop");
  EXPECT_EQ(ErrorAfter([&](v1::Program* m) {
              layout(m);
              PExpr x = *index;
              index->Clear();
              index->set_op(PExpr::OP_ADD);
              *index->add_args() = x;
            }),
            at + ": OP_ADD takes 2 operands, not 1");
  EXPECT_EQ(ErrorAfter([&](v1::Program* m) {
              layout(m);
              PExpr x = *index;
              index->Clear();
              index->set_op(PExpr::OP_FLOOR_DIV);
              *index->add_args() = x;
              index->add_args()->set_op(PExpr::OP_CONST);  // 0
            }),
            at + ": OP_FLOOR_DIV must divide by a positive constant");
  EXPECT_EQ(ErrorAfter([&](v1::Program* m) {
              layout(m);
              index->Clear();
              index->set_op(PExpr::OP_MUL);
              for (int i = 0; i < 2; ++i) {
                index->add_args()->set_op(PExpr::OP_CONST);
                index->mutable_args(i)->set_value(int64_t{1} << 40);
              }
            }),
            at + ": OP_MUL of two constants overflows");
  EXPECT_EQ(ErrorAfter([&](v1::Program* m) {
              layout(m);
              for (int i = 0; i < 100; ++i) {
                PExpr x = *index;
                index->Clear();
                index->set_op(PExpr::OP_NEG);
                *index->add_args() = x;
              }
            }).substr(0, at.size()),
            at);
}

TEST(ProgramProtoTest, MalformedStatementsAreRefusedNamingThePart) {
  // Statements: kinds, references, patterns, the one kernel call. `path` is set by the
  // edit, so each error is read before the expectation is built.
  std::string path, error;
  auto transfer = [&](v1::Program* m) {
    return First(m->mutable_body(), v1::Program::Stmt::kTransfer, "program.body", &path)
        ->mutable_transfer();
  };
  auto compute = [&](v1::Program* m) {
    return First(m->mutable_body(), v1::Program::Stmt::kCompute, "program.body", &path);
  };
  error = ErrorAfter([&](v1::Program* m) { transfer(m)->set_buffer("TransZ"); });
  EXPECT_EQ(error, path + ".transfer: buffer TransZ is not one of the program's buffers");
  error = ErrorAfter([&](v1::Program* m) { transfer(m)->set_tensor("Z"); });
  EXPECT_EQ(error, path + ".transfer: tensor Z is not one of the program's");
  error = ErrorAfter([&](v1::Program* m) { transfer(m)->mutable_pattern()->set_axes(0, 5); });
  EXPECT_EQ(error, path + ".transfer.pattern: axis 5 is not an axis of the mesh (0 to 1)");
  error = ErrorAfter([&](v1::Program* m) {
    transfer(m)->mutable_pattern()->set_kind(static_cast<v1::Program::CommPattern::Kind>(42));
  });
  EXPECT_EQ(error, path + ".transfer.pattern: kind 42 is not a communication pattern");
  error = ErrorAfter([&](v1::Program* m) {
    v1::Program::CommPattern* p = transfer(m)->mutable_pattern();
    p->set_kind(v1::Program::CommPattern::KIND_BROADCAST);
    p->clear_axes();
  });
  EXPECT_EQ(error, path + ".transfer.pattern: a Broadcast is over at least one mesh axis");
  error = ErrorAfter([&](v1::Program* m) {
    v1::Program::CommPattern* p = transfer(m)->mutable_pattern();
    p->set_kind(v1::Program::CommPattern::KIND_ALL_TO_ALL);
    p->add_axes(0);
  });
  EXPECT_EQ(error, path + ".transfer.pattern: an AllToAll spans the mesh: it names no axes");
  error = ErrorAfter([&](v1::Program* m) { transfer(m)->mutable_pattern()->set_hop(true); });
  EXPECT_EQ(error, path + ".transfer.pattern: hop on a pattern that is not a RingReduce");
  error = ErrorAfter([&](v1::Program* m) {
    v1::Program::CommPattern* p = transfer(m)->mutable_pattern();
    p->set_kind(v1::Program::CommPattern::KIND_RING_REDUCE);
    p->set_shift(2);
  });
  EXPECT_EQ(error, path + ".transfer.pattern: a RingReduce moves by +1 or -1, not 2");
  error = ErrorAfter([&](v1::Program* m) { transfer(m)->mutable_global()->clear_size(); });
  EXPECT_EQ(error, path + ".transfer.global: has 2 offsets and 0 sizes; the tensor has 2 dims");
  error = ErrorAfter([&](v1::Program* m) { compute(m)->mutable_compute()->set_kernel("gemm"); });
  EXPECT_EQ(error, path +
                       ".compute: kernel \"gemm\" is not one of matmul, matmul_ta, "
                       "matmul_tb, matmul_tab, mul, add, contraction");
  error = ErrorAfter(
      [&](v1::Program* m) { compute(m)->mutable_compute()->mutable_in(0)->set_buffer("Z"); });
  EXPECT_EQ(error, path + ".compute.in[0]: buffer Z is not one of the program's buffers");
  error = ErrorAfter([&](v1::Program* m) { compute(m)->Clear(); });
  EXPECT_EQ(error,
            path + ": a statement of no kind (block, for_loop, alloc, transfer, compute, reduce)");
  error = ErrorAfter([&](v1::Program* m) { compute(m)->mutable_block(); });
  EXPECT_EQ(error, "program: no kernel call (a program has one)");
  error = ErrorAfter([&](v1::Program* m) {  // the program, then its kernel call again
    const v1::Program::Stmt call = *compute(m);
    v1::Program::Stmt root;
    *root.mutable_block()->add_body() = m->body();
    *root.mutable_block()->add_body() = call;
    *m->mutable_body() = root;
  });
  EXPECT_EQ(error, "program.body.block.body[1].compute: a second kernel call (a program has one)");
  error = ErrorAfter([&](v1::Program* m) {
    v1::Program::Stmt* s = m->mutable_body();
    s->mutable_for_loop()->set_var("x");
  });
  EXPECT_EQ(error,
            "program.body.for_loop: loop variable x is already a mesh axis or an "
            "enclosing loop");
}

// Bytes that are not a Program do not parse; a message that parses but is empty is refused.
TEST(ProgramProtoTest, AnEmptyOrForeignMessageIsRefused) {
  v1::Program m;
  EXPECT_FALSE(m.ParseFromString("not a program, just text"));
  EXPECT_EQ(FromProto(v1::Program()).status().message(),
            "program: a mesh of 0 axis names and 0 sizes (one to three axes)");
}

// The enum tables: every codegen value maps to a distinct message value and back, and every
// message value but the unspecified 0 maps to a codegen value. codegen's enums are dense
// from 0; their last members, kRingReduce and kSelect, bound the loops.
TEST(ProgramProtoTest, EveryPatternKindMapsToADistinctMessageKindAndBack) {
  using PKind = v1::Program::CommPattern::Kind;
  std::set<int> seen;
  for (int k = 0; k <= static_cast<int>(PatternKind::kRingReduce); ++k) {
    const PatternKind kind = static_cast<PatternKind>(k);
    const PKind proto = PatternKindToProto(kind);
    EXPECT_NE(proto, v1::Program::CommPattern::KIND_UNSPECIFIED) << k;
    EXPECT_TRUE(seen.insert(proto).second) << "kind " << k << " maps to " << proto << " again";
    const absl::StatusOr<PatternKind> back = PatternKindFromProto(proto);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, kind) << k;
  }
  const google::protobuf::EnumDescriptor* d = v1::Program::CommPattern::Kind_descriptor();
  EXPECT_EQ(static_cast<int>(seen.size()), d->value_count() - 1);
  for (int i = 0; i < d->value_count(); ++i) {
    const PKind proto = static_cast<PKind>(d->value(i)->number());
    const absl::StatusOr<PatternKind> kind = PatternKindFromProto(proto);
    if (d->value(i)->number() == 0) {
      EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(kind.status().message(), "kind 0 is not a communication pattern");
      continue;
    }
    ASSERT_TRUE(kind.ok()) << d->value(i)->name() << ": " << kind.status();
    EXPECT_EQ(PatternKindToProto(*kind), proto) << d->value(i)->name();
  }
  EXPECT_EQ(PatternKindFromProto(static_cast<PKind>(42)).status().message(),
            "kind 42 is not a communication pattern");
}

TEST(ProgramProtoTest, EveryExprOpMapsToADistinctMessageOpAndBack) {
  std::set<int> seen;
  for (int o = 0; o <= static_cast<int>(Expr::Op::kSelect); ++o) {
    const Expr::Op op = static_cast<Expr::Op>(o);
    const PExpr::Op proto = OpToProto(op);
    EXPECT_NE(proto, PExpr::OP_UNSPECIFIED) << o;
    EXPECT_TRUE(seen.insert(proto).second) << "op " << o << " maps to " << proto << " again";
    const absl::StatusOr<Expr::Op> back = OpFromProto(proto);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, op) << o;
  }
  const google::protobuf::EnumDescriptor* d = PExpr::Op_descriptor();
  EXPECT_EQ(static_cast<int>(seen.size()), d->value_count() - 1);
  for (int i = 0; i < d->value_count(); ++i) {
    const PExpr::Op proto = static_cast<PExpr::Op>(d->value(i)->number());
    const absl::StatusOr<Expr::Op> op = OpFromProto(proto);
    if (d->value(i)->number() == 0) {
      EXPECT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(op.status().message(), "op 0 is not an operator");
      continue;
    }
    ASSERT_TRUE(op.ok()) << d->value(i)->name() << ": " << op.status();
    EXPECT_EQ(OpToProto(*op), proto) << d->value(i)->name();
  }
}

}  // namespace
}  // namespace meshtune::codegen
