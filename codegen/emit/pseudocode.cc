#include "codegen/emit/pseudocode.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/pattern.h"

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

// One line of transfer `t` without indentation: "Broadcast(axes=[1]) A[...] from rank[ko]
// -> TransA[...]"; its expressions at the next step of `next_of` (v -> v + 1) when set, into
// the buffer's other half ("TransA.next").
std::string TransferText(const Transfer& t, const std::string& next_of = "") {
  auto at = [&](const Expr& e) {
    return next_of.empty() ? e : e.Substitute(next_of, Expr::Var(next_of) + Expr::Const(1));
  };
  std::vector<std::string> rank;
  for (size_t i = 0; i < t.source.size(); ++i) {
    if (PatternOf(t.pattern.kind).ShowsSourceAxis(t.pattern, static_cast<int>(i)))
      rank.push_back(at(t.source[i]).ToPython());
  }
  Slice src = t.src, global = t.global;
  for (Expr& e : src.offset) e = at(e);
  for (Expr& e : global.offset) e = at(e);
  const Slice whole{std::vector<Expr>(t.src.size.size(), Expr::Const(0)), t.src.size};
  const std::string buffer = next_of.empty() ? t.buffer : t.buffer + ".next";
  if (t.pattern.FromHolders()) {
    return absl::StrCat(t.pattern.ToString(), " ", SliceText(t.tensor, global), " (global) -> ",
                        SliceText(buffer, whole));
  }
  return absl::StrCat(t.pattern.ToString(), " ", SliceText(t.tensor, src), " from rank[",
                      absl::StrJoin(rank, ", "), "] -> ", SliceText(buffer, whole));
}

std::string ReduceText(const Reduce& r) {
  const Slice whole{std::vector<Expr>(r.global.size.size(), Expr::Const(0)), r.global.size};
  return absl::StrCat(r.pattern.ToString(), " ", SliceText(r.buffer, whole), " -> ",
                      SliceText(r.tensor, r.global), " (global)");
}

// A prefetched transfer driven by loop `f` (codegen/program.h): the first step's own fetch,
// the wait for this step's block, the start of the next step's.
void PrintPrefetch(const Transfer& t, const For& f, const std::string& pad, std::string* out) {
  const Expr var = Expr::Var(f.var);
  absl::StrAppend(out, pad, TransferText(t), "   (if ", f.var, " == ", f.lo.ToPython(), ")\n", pad,
                  "wait ", t.buffer, "\n", pad, "start ", TransferText(t, f.var), "   (if ",
                  (var + Expr::Const(1)).ToPython(), " < ",
                  (f.lo + Expr::Const(f.extent)).ToPython(), ")\n");
}

// `s`; `loop` is the innermost For around it (nullptr at the top).
void Print(const Program& p, const StmtPtr& s, const For* loop, int indent, bool accumulate,
           std::string* out) {
  const std::string pad(indent * 4, ' ');
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& c : b->body) Print(p, c, loop, indent, accumulate, out);
  } else if (const auto* f = std::get_if<For>(&s->node)) {
    const Expr end = f->lo + Expr::Const(f->extent);
    absl::StrAppend(out, pad, "for ", f->var, " in range(", f->lo.ToPython(), ", ", end.ToPython(),
                    "):\n");
    Print(p, f->body, f, indent + 1, accumulate, out);
    for (const Stmt* d : PrefetchedIn(*f)) {
      if (const auto* r = std::get_if<Reduce>(&d->node))
        absl::StrAppend(out, pad, "wait ", r->buffer, "\n");
    }
  } else if (const auto* a = std::get_if<Alloc>(&s->node)) {
    absl::StrAppend(out, pad, a->buffer, " = ", a->zero ? "zeros" : "alloc", "(",
                    absl::StrJoin(a->shape, ", "), ")\n");
  } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
    if (t->prefetch != 0 && loop != nullptr && loop->var == t->loop) {
      PrintPrefetch(*t, *loop, pad, out);
    } else {
      absl::StrAppend(out, pad, TransferText(*t), "\n");
    }
  } else if (const auto* c = std::get_if<Compute>(&s->node)) {
    // Ragged indices: "  # clipped to m < 1001, n < 999" (the edge blocks' sizes).
    std::vector<std::string> clips;
    for (size_t i = 0; i < c->start.size(); ++i) {
      if (c->extent[i] != 0) clips.push_back(absl::StrCat(c->tile[i].first, " < ", c->extent[i]));
    }
    absl::StrAppend(out, pad, OperandText(p, c->out), accumulate ? " += " : " = ",
                    KernelText(p, *c),
                    clips.empty() ? "" : "  # clipped to " + absl::StrJoin(clips, ", "), "\n");
  } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
    const std::string note =
        loop != nullptr && loop->var == r->loop
            ? PatternOf(r->pattern.kind)
                  .ReduceNote(*r, loop->var, (loop->lo + Expr::Const(loop->extent - 1)).ToPython())
            : "";
    if (!note.empty()) {
      absl::StrAppend(out, pad, ReduceText(*r), note, "\n");
    } else if (r->prefetch != 0 && loop != nullptr && loop->var == r->loop) {
      absl::StrAppend(out, pad, "wait ", r->buffer, "\n", pad, "start ", ReduceText(*r), "\n");
    } else {
      absl::StrAppend(out, pad, ReduceText(*r), "\n");
    }
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
  // Tensors in given layouts come into their shards first, and the output goes back last.
  for (const TensorInfo& t : program.tensors) {
    if (!Redistributed(program, t) || (t.is_output && !program.accumulate)) continue;
    absl::StrAppend(&out, t.name, " = redistribute(", t.name, " in ", t.given.ToString(),
                    ")  # all-to-all into the shards\n");
  }
  Print(program, program.body, nullptr, 0, accumulate, &out);
  for (const TensorInfo& t : program.tensors) {
    if (!Redistributed(program, t) || !t.is_output) continue;
    absl::StrAppend(&out, t.name, " in ", t.given.ToString(), " = redistribute(", t.name,
                    ")  # all-to-all out of the shards\n");
  }
  return out;
}

}  // namespace meshtune::codegen
