#include "codegen/pseudocode.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace meshtune::codegen {

namespace {

std::string Range(const Expr& offset, int64_t size) {
  const Expr end = offset + Expr::Const(size);
  return absl::StrCat(offset.ToPython(), ":", end.ToPython());
}

std::string SliceText(const std::string& buffer, const Slice& s) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < s.size.size(); ++d) parts.push_back(Range(s.offset[d], s.size[d]));
  return absl::StrCat(buffer, "[", absl::StrJoin(parts, ", "), "]");
}

// The operand as a whole buffer name when it spans a transfer buffer from the origin.
std::string OperandText(const Program& p, const Operand& o) {
  for (const Alloc& a : p.buffers) {
    if (a.buffer != o.buffer || a.shape != o.slice.size) continue;
    bool origin = true;
    for (const Expr& e : o.slice.offset) origin = origin && e.IsConst() && e.value() == 0;
    if (origin) return o.buffer;
  }
  return SliceText(o.buffer, o.slice);
}

std::string KernelText(const Program& p, const Compute& c) {
  std::vector<std::string> in;
  for (const Operand& o : c.in) in.push_back(OperandText(p, o));
  if (c.kernel == "matmul") return absl::StrCat(in[0], " @ ", in[1]);
  if (c.kernel == "matmul_ta") return absl::StrCat(in[0], ".T @ ", in[1]);
  if (c.kernel == "matmul_tb") return absl::StrCat(in[0], " @ ", in[1], ".T");
  if (c.kernel == "matmul_tab") return absl::StrCat(in[0], ".T @ ", in[1], ".T");
  if (c.sum) return absl::StrJoin(in, " + ");
  if (c.kernel == "mul") return absl::StrJoin(in, " * ");
  std::vector<std::string> specs;
  for (const Operand& o : c.in) specs.push_back(absl::StrJoin(o.dims, ","));
  return absl::StrCat("einsum('", absl::StrJoin(specs, ";"), "->", absl::StrJoin(c.out.dims, ","),
                      "', ", absl::StrJoin(in, ", "), ")");
}

void Print(const Program& p, const StmtPtr& s, int indent, bool accumulate, std::string* out) {
  const std::string pad(indent * 4, ' ');
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& c : b->body) Print(p, c, indent, accumulate, out);
  } else if (const auto* f = std::get_if<For>(&s->node)) {
    const Expr end = f->lo + Expr::Const(f->extent);
    absl::StrAppend(out, pad, "for ", f->var, " in range(", f->lo.ToPython(), ", ", end.ToPython(),
                    "):\n");
    Print(p, f->body, indent + 1, accumulate, out);
  } else if (const auto* a = std::get_if<Alloc>(&s->node)) {
    absl::StrAppend(out, pad, a->buffer, " = ", a->zero ? "zeros" : "alloc", "(",
                    absl::StrJoin(a->shape, ", "), ")\n");
  } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
    std::vector<std::string> rank;
    for (size_t i = 0; i < t->source.size(); ++i) {
      const bool shown = t->pattern.kind != CommPattern::Kind::kBroadcast ||
                         std::find(t->pattern.axes.begin(), t->pattern.axes.end(),
                                   static_cast<int>(i)) != t->pattern.axes.end();
      if (shown) rank.push_back(t->source[i].ToPython());
    }
    Slice whole{std::vector<Expr>(t->src.size.size(), Expr::Const(0)), t->src.size};
    if (t->pattern.kind == CommPattern::Kind::kAllGather) {
      absl::StrAppend(out, pad, t->pattern.ToString(), " ", SliceText(t->tensor, t->global),
                      " (global) -> ", SliceText(t->buffer, whole), "\n");
    } else {
      absl::StrAppend(out, pad, t->pattern.ToString(), " ", SliceText(t->tensor, t->src),
                      " from rank[", absl::StrJoin(rank, ", "), "] -> ",
                      SliceText(t->buffer, whole), "\n");
    }
  } else if (const auto* c = std::get_if<Compute>(&s->node)) {
    absl::StrAppend(out, pad, OperandText(p, c->out), accumulate ? " += " : " = ",
                    KernelText(p, *c), "\n");
  } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
    Slice whole{std::vector<Expr>(r->global.size.size(), Expr::Const(0)), r->global.size};
    absl::StrAppend(out, pad, r->pattern.ToString(), " ", SliceText(r->buffer, whole), " -> ",
                    SliceText(r->tensor, r->global), " (global)\n");
  }
}

}  // namespace

std::string PseudoCode(const Program& program) {
  // A kernel call accumulates when the statement does, or when an index it sums over is
  // split across calls (not tensorized whole).
  bool accumulate = program.accumulate;
  if (const Compute* c = KernelCall(program)) {
    for (const auto& [index, extent] : c->tile) {
      if (std::find(c->out.dims.begin(), c->out.dims.end(), index) != c->out.dims.end()) continue;
      for (const TensorInfo& t : program.tensors) {
        for (size_t d = 0; d < t.dims.size(); ++d)
          accumulate = accumulate || (t.dims[d] == index && extent < t.shape[d]);
      }
    }
  }
  std::string out;
  Print(program, program.body, 0, accumulate, &out);
  return out;
}

}  // namespace meshtune::codegen
