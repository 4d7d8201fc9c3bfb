// A lowered Program as a protobuf message (meshtune.v1.Program), and back: how a wisdom
// record carries the program every rank runs, so that a plan made from wisdom needs no
// isl (meshtune/plan.h).
//
// FromProto(ToProto(p)) is `p` exactly: every field, every expression node (expressions are
// rebuilt with Expr::Make, which leaves what it made unchanged). FromProto checks the form
// of the message, never trusting it: names that refer to tensors, buffers, mesh axes and
// enclosing loops must resolve, sizes must agree, every statement must have exactly one
// kind, expressions must have their operator's operands (division and modulo by a positive
// constant), and there must be exactly one kernel call. It does not check that the program
// computes its statement — that is what lowering and translation validation do (a wisdom
// program is trusted because its digest binds it to its record: engine/wisdom.h).
// Stateless; thread-safe.
#ifndef MESHTUNE_CODEGEN_PROGRAM_PROTO_H_
#define MESHTUNE_CODEGEN_PROGRAM_PROTO_H_

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "proto/meshtune.pb.h"

namespace meshtune::codegen {

// `p` as a message, field by field.
v1::Program ToProto(const Program& p);

// The Program `m` describes. InvalidArgument naming the first malformed part, with its
// path in the message, e.g. "program.body.block.body[2].transfer: buffer TransZ is not one
// of the program's buffers".
absl::StatusOr<Program> FromProto(const v1::Program& m);

// The enums of the message, each mapped by one explicit table (program_proto.cc) to
// codegen's, both ways; the message's *_UNSPECIFIED (0) maps to nothing.

// The message's operator for `op`. Every Expr::Op has one.
v1::Program::Expr::Op OpToProto(Expr::Op op);

// The Expr::Op the message's `op` names; InvalidArgument "op N is not an operator" for
// OP_UNSPECIFIED and any number the table does not hold.
absl::StatusOr<Expr::Op> OpFromProto(v1::Program::Expr::Op op);

// The message's kind for pattern kind `kind`. Every PatternKind has one.
v1::Program::CommPattern::Kind PatternKindToProto(PatternKind kind);

// The PatternKind the message's `kind` names; InvalidArgument "kind N is not a
// communication pattern" for KIND_UNSPECIFIED and any number the table does not hold.
absl::StatusOr<PatternKind> PatternKindFromProto(v1::Program::CommPattern::Kind kind);

}  // namespace meshtune::codegen

#endif  // MESHTUNE_CODEGEN_PROGRAM_PROTO_H_
