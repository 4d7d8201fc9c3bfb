#include "ir/trace.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "ir/primitives.h"
#include "ir/reason.h"
#include "ir/scanner.h"

namespace meshtune::ir {

namespace {

std::string List(const std::vector<std::string>& v, absl::string_view sep) {
  return absl::StrCat("[", absl::StrJoin(v, sep), "]");
}

struct Printer {
  std::string operator()(const SplitCall& c) const {
    return absl::StrCat("split(", c.var, ", ", c.outer, ", ", c.inner, ", ", c.factor, ")");
  }
  std::string operator()(const DivideCall& c) const {
    return absl::StrCat("divide(", c.var, ", ", c.outer, ", ", c.inner, ", ", c.parts, ")");
  }
  std::string operator()(const ReorderCall& c) const {
    return absl::StrCat("reorder(", absl::StrJoin(c.order, ", "), ")");
  }
  std::string operator()(const DistributeCall& c) const {
    return absl::StrCat("distribute(", List(c.vars, ","), ", ", List(c.outers, ","), ", ",
                        List(c.inners, ","), ", ", List(c.axes, ","), ")");
  }
  std::string operator()(const ShardCall& c) const {
    std::string s = absl::StrCat("shard(", c.tensor);
    for (const ShardTarget& t : c.targets)
      absl::StrAppend(&s, ", ", t.dim, "@", t.target.ToString());
    return s + ")";
  }
  std::string operator()(const CommunicateCall& c) const {
    std::string s = absl::StrCat("communicate(", c.tensor, ", ", c.loop);
    if (!c.rotate.empty()) absl::StrAppend(&s, ", rotate=", List(c.rotate, ","));
    if (c.step != 1) absl::StrAppend(&s, ", step=", c.step);
    if (c.prefetch != 0) absl::StrAppend(&s, ", prefetch=", c.prefetch);
    return s + ")";
  }
  std::string operator()(const TensorizeCall& c) const {
    return absl::StrCat("tensorize(", List(c.loops, ", "), ", ", c.op, ")");
  }
};

// Parses the arguments of one call; `ts` is just past the '('.
class CallParser {
 public:
  CallParser(TokenStream& ts, const Token& name, std::string signature)
      : ts_(ts), name_(name), signature_(std::move(signature)) {}

  // Expects the ',' before another argument.
  absl::Status Comma() {
    if (ts_.Accept(",")) return absl::OkStatus();
    if (ts_.Peek().kind == Token::kPunct && ts_.Peek().text == ")") {
      return ts_.ErrorAt(ts_.Peek(),
                         absl::StrCat("too few arguments to ", base::Excerpt(name_.text),
                                      "; expected ", signature_));
    }
    return Unexpected("','");
  }
  // Expects the closing ')'.
  absl::Status Close() {
    if (ts_.Accept(")")) return absl::OkStatus();
    if (ts_.Peek().kind == Token::kPunct && ts_.Peek().text == ",") {
      return ts_.ErrorAt(ts_.Peek(),
                         absl::StrCat("too many arguments to ", base::Excerpt(name_.text),
                                      "; expected ", signature_));
    }
    if (ts_.AtEnd()) {
      return ts_.ErrorAt(
          name_, absl::StrCat("unbalanced '(' of ", base::Excerpt(name_.text), ": no closing ')'"));
    }
    return Unexpected("')'");
  }
  absl::StatusOr<std::string> Ident(absl::string_view role) {
    if (ts_.Peek().kind == Token::kIdent) return ts_.Next().text;
    if (ts_.Peek().kind == Token::kPunct && ts_.Peek().text == ")") {
      return ts_.ErrorAt(ts_.Peek(),
                         absl::StrCat("too few arguments to ", base::Excerpt(name_.text),
                                      "; expected ", signature_));
    }
    return ts_.ErrorAt(ts_.Peek(),
                       absl::StrCat("expected ", role, " but found ", Describe(ts_.Peek())));
  }
  absl::StatusOr<int64_t> Int(absl::string_view role) { return ts_.ExpectInt(role); }
  absl::StatusOr<std::vector<std::string>> IdentList(absl::string_view role) {
    const Token open = ts_.Peek();
    if (!ts_.Accept("[")) {
      return ts_.ErrorAt(open, absl::StrCat("expected '[' to start the list of ", role,
                                            " but found ", Describe(open)));
    }
    std::vector<std::string> out;
    if (ts_.Accept("]")) return out;
    while (true) {
      if (ts_.Peek().kind != Token::kIdent) {
        if (ts_.AtEnd()) return ts_.ErrorAt(open, "unbalanced '[': no closing ']'");
        return ts_.ErrorAt(ts_.Peek(), absl::StrCat("expected a name in the list of ", role,
                                                    " but found ", Describe(ts_.Peek())));
      }
      out.push_back(ts_.Next().text);
      if (ts_.Accept(",")) continue;
      if (ts_.Accept("]")) return out;
      if (ts_.AtEnd()) return ts_.ErrorAt(open, "unbalanced '[': no closing ']'");
      return ts_.ErrorAt(ts_.Peek(), absl::StrCat("expected ',' or ']' in the list of ", role,
                                                  " but found ", Describe(ts_.Peek())));
    }
  }
  bool AtClose() const { return ts_.Peek().kind == Token::kPunct && ts_.Peek().text == ")"; }
  TokenStream& ts() { return ts_; }

 private:
  absl::Status Unexpected(absl::string_view want) {
    return ts_.ErrorAt(ts_.Peek(),
                       absl::StrCat("expected ", want, " in ", base::Excerpt(name_.text),
                                    "(...) but found ", Describe(ts_.Peek())));
  }
  TokenStream& ts_;
  const Token& name_;
  std::string signature_;
};

// The signature a primitive's errors quote, e.g. "split(loop, outer, inner, factor)"; ""
// for a name that is no primitive.
std::string Signature(const std::string& primitive) {
  if (primitive == "split") return "split(loop, outer, inner, factor)";
  if (primitive == "divide") return "divide(loop, outer, inner, parts)";
  if (primitive == "reorder") return "reorder(loop, ...)";
  if (primitive == "distribute") return "distribute([loops], [outers], [inners], [mesh axes])";
  if (primitive == "shard") return "shard(tensor, dim@target, ...)";
  if (primitive == "communicate")
    return "communicate(tensor, loop[, rotate=[loops]][, step=N][, prefetch=0|1])";
  if (primitive == "tensorize") return "tensorize([loops], kernel)";
  return "";
}

// The arguments and ')' of split (`split` true) or divide.
absl::StatusOr<Instruction> ParseSplitOrDivide(CallParser& p, bool split) {
  std::string var, outer, inner;
  int64_t n = 0;
  MT_ASSIGN_OR_RETURN(var, p.Ident("a loop name"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(outer, p.Ident("the outer loop name"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(inner, p.Ident("the inner loop name"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(n, p.Int(split ? "split factor" : "number of parts"));
  MT_RETURN_IF_ERROR(p.Close());
  if (split) return Instruction(SplitCall{var, outer, inner, n});
  return Instruction(DivideCall{var, outer, inner, n});
}

// The arguments and ')' of reorder.
absl::StatusOr<Instruction> ParseReorder(CallParser& p) {
  ReorderCall call;
  while (true) {
    std::string v;
    MT_ASSIGN_OR_RETURN(v, p.Ident("a loop name"));
    call.order.push_back(v);
    if (p.AtClose()) break;
    MT_RETURN_IF_ERROR(p.Comma());
  }
  MT_RETURN_IF_ERROR(p.Close());
  return Instruction(call);
}

// The arguments and ')' of distribute.
absl::StatusOr<Instruction> ParseDistribute(CallParser& p) {
  DistributeCall call;
  MT_ASSIGN_OR_RETURN(call.vars, p.IdentList("loops to distribute"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(call.outers, p.IdentList("outer loop names"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(call.inners, p.IdentList("inner loop names"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(call.axes, p.IdentList("mesh axes"));
  MT_RETURN_IF_ERROR(p.Close());
  return Instruction(call);
}

// The arguments and ')' of shard.
absl::StatusOr<Instruction> ParseShard(CallParser& p) {
  TokenStream& ts = p.ts();
  ShardCall call;
  MT_ASSIGN_OR_RETURN(call.tensor, p.Ident("a tensor name"));
  while (!p.AtClose()) {
    MT_RETURN_IF_ERROR(p.Comma());
    ShardTarget t;
    MT_ASSIGN_OR_RETURN(t.dim, p.Ident("a tensor dim (an index name)"));
    const Token at = ts.Peek();
    if (!ts.Accept("@")) {
      return ts.ErrorAt(at,
                        absl::StrCat("expected '@' after dim ", base::Excerpt(t.dim), " (as in ",
                                     base::Excerpt(t.dim), "@x) but found ", Describe(at)));
    }
    MT_ASSIGN_OR_RETURN(t.target, ParseAxisExpr(ts));
    call.targets.push_back(t);
  }
  MT_RETURN_IF_ERROR(p.Close());
  return Instruction(call);
}

// The arguments and ')' of communicate: tensor, loop, then the keywords rotate=[...],
// step=N and prefetch=0|1, each at most once, in any order.
absl::StatusOr<Instruction> ParseCommunicate(CallParser& p) {
  TokenStream& ts = p.ts();
  CommunicateCall call;
  MT_ASSIGN_OR_RETURN(call.tensor, p.Ident("a tensor name"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(call.loop, p.Ident("a loop name"));
  bool rotate = false, prefetch = false, step = false;
  while (!p.AtClose()) {
    MT_RETURN_IF_ERROR(p.Comma());
    const Token kw = ts.Peek();
    const bool is_rotate = kw.kind == Token::kIdent && kw.text == "rotate";
    const bool is_prefetch = kw.kind == Token::kIdent && kw.text == "prefetch";
    const bool is_step = kw.kind == Token::kIdent && kw.text == "step";
    if (!is_rotate && !is_prefetch && !is_step) {
      return ts.ErrorAt(kw, absl::StrCat("expected rotate=[...], step=N or prefetch=0|1 but found ",
                                         Describe(kw)));
    }
    if ((is_rotate && rotate) || (is_prefetch && prefetch) || (is_step && step)) {
      return ts.ErrorAt(kw, absl::StrCat(kw.text, "= is given twice"));
    }
    ts.Next();
    MT_RETURN_IF_ERROR(ts.Expect("="));
    if (is_rotate) {
      rotate = true;
      MT_ASSIGN_OR_RETURN(call.rotate, p.IdentList("loops to rotate by"));
      if (call.rotate.empty()) return ts.ErrorAt(kw, "rotate=[] names no loop");
      continue;
    }
    if (is_step) {
      step = true;
      const Token value = ts.Peek();
      MT_ASSIGN_OR_RETURN(call.step, p.Int("the rotation's step"));
      if (call.step < 1) {
        return ts.ErrorAt(value, absl::StrCat("step=", call.step,
                                              " is not a rotation step; "
                                              "a step is at least 1"));
      }
      continue;
    }
    prefetch = true;
    const Token value = ts.Peek();
    int64_t v = 0;
    MT_ASSIGN_OR_RETURN(v, p.Int("the prefetch depth (0 or 1)"));
    if (v != 0 && v != 1) {
      return ts.ErrorAt(value, absl::StrCat("prefetch=", v,
                                            " is not supported; prefetch is 0 (off) or 1 (the "
                                            "next step's transfer overlaps this step)"));
    }
    call.prefetch = static_cast<int>(v);
  }
  MT_RETURN_IF_ERROR(p.Close());
  return Instruction(call);
}

// The arguments and ')' of tensorize.
absl::StatusOr<Instruction> ParseTensorize(CallParser& p) {
  TensorizeCall call;
  MT_ASSIGN_OR_RETURN(call.loops, p.IdentList("loops to tensorize"));
  MT_RETURN_IF_ERROR(p.Comma());
  MT_ASSIGN_OR_RETURN(call.op, p.Ident("a kernel name"));
  MT_RETURN_IF_ERROR(p.Close());
  return Instruction(call);
}

// One call, from its primitive's name to its ')'.
absl::StatusOr<Instruction> ParseCall(TokenStream& ts) {
  const Token name = ts.Peek();
  if (name.kind != Token::kIdent) {
    return ts.ErrorAt(name, absl::StrCat("expected a primitive name but found ", Describe(name)));
  }
  ts.Next();
  static const char* kKnown = "split, divide, reorder, distribute, shard, communicate, tensorize";
  const std::string signature = Signature(name.text);
  if (signature.empty()) {
    return ts.ErrorAt(name, absl::StrCat("unknown primitive '", base::Excerpt(name.text),
                                         "' (primitives: ", kKnown, ")"));
  }
  if (absl::Status s = ts.Expect("("); !s.ok()) return s;
  CallParser p(ts, name, signature);
  if (name.text == "split" || name.text == "divide")
    return ParseSplitOrDivide(p, name.text == "split");
  if (name.text == "reorder") return ParseReorder(p);
  if (name.text == "distribute") return ParseDistribute(p);
  if (name.text == "shard") return ParseShard(p);
  if (name.text == "communicate") return ParseCommunicate(p);
  return ParseTensorize(p);
}

struct Applier {
  const Computation& c;
  absl::StatusOr<Computation> operator()(const SplitCall& s) const {
    return Split(c, s.var, s.outer, s.inner, s.factor);
  }
  absl::StatusOr<Computation> operator()(const DivideCall& s) const {
    return Divide(c, s.var, s.outer, s.inner, s.parts);
  }
  absl::StatusOr<Computation> operator()(const ReorderCall& s) const { return Reorder(c, s.order); }
  absl::StatusOr<Computation> operator()(const DistributeCall& s) const {
    return Distribute(c, s.vars, s.outers, s.inners, s.axes);
  }
  absl::StatusOr<Computation> operator()(const ShardCall& s) const {
    return Shard(c, s.tensor, s.targets);
  }
  absl::StatusOr<Computation> operator()(const CommunicateCall& s) const {
    return Communicate(c, s.tensor, s.loop, s.rotate, s.prefetch, s.step);
  }
  absl::StatusOr<Computation> operator()(const TensorizeCall& s) const {
    return Tensorize(c, s.loops, s.op);
  }
};

}  // namespace

std::string ToString(const Instruction& inst) { return std::visit(Printer{}, inst); }

std::string Trace::ToString() const {
  std::string s;
  for (const Instruction& i : instructions) absl::StrAppend(&s, ir::ToString(i), "\n");
  return s;
}

absl::StatusOr<Trace> ParseTrace(absl::string_view text) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(text, "trace", kMaxTraceBytes);
  if (!tokens.ok()) return tokens.status();
  TokenStream ts(std::move(*tokens), "trace", /*show_line=*/true);
  Trace trace;
  int last_line = 0;
  while (!ts.AtEnd()) {
    const Token start = ts.Peek();
    if (start.line == last_line) {
      return ts.ErrorAt(start, absl::StrCat("unexpected ", Describe(start),
                                            " after a call; write one call a line"));
    }
    absl::StatusOr<Instruction> inst = ParseCall(ts);
    if (!inst.ok()) return inst.status();
    trace.instructions.push_back(*std::move(inst));
    last_line = start.line;
  }
  return trace;
}

absl::StatusOr<Computation> Apply(const Computation& c, const Instruction& inst) {
  return std::visit(Applier{c}, inst);
}

Replay ReplayTrace(const Computation& base, const Trace& trace) {
  Replay r{base, absl::OkStatus(), 0};
  for (size_t i = 0; i < trace.instructions.size(); ++i) {
    absl::StatusOr<Computation> next = Apply(r.computation, trace.instructions[i]);
    if (!next.ok()) {
      const std::string msg =
          absl::StrCat("instruction ", i + 1, ", ",
                       base::Excerpt(ToString(trace.instructions[i]), 2 * base::kMaxExcerpt), ": ",
                       next.status().message());
      if (std::optional<Rejection> rej = AsRejection(next.status())) {
        r.status = Reject(rej->code, msg);
      } else {
        r.status = absl::Status(next.status().code(), msg);
      }
      r.failed_line = static_cast<int>(i) + 1;
      return r;
    }
    r.computation = *std::move(next);
  }
  return r;
}

}  // namespace meshtune::ir
