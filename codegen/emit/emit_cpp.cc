#include "codegen/emit/emit_cpp.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "codegen/emit/emit_text.h"
#include "codegen/pattern.h"

namespace meshtune::codegen {

namespace {

// Variables of the emitted code get a prefix so that no loop name clashes with C++.
std::string Var(const std::string& name) { return "v_" + name; }

std::string Cpp(const Expr& e) { return e.ToString(Var); }

std::string Strings(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const std::string& s : v) q.push_back(CppQuote(s));
  return absl::StrCat("{", absl::StrJoin(q, ", "), "}");
}

template <typename Int>
std::string Ints(const std::vector<Int>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ", "), "}");
}

std::string Exprs(const std::vector<Expr>& v) {
  std::vector<std::string> s;
  for (const Expr& e : v) s.push_back(Cpp(e));
  return absl::StrCat("{", absl::StrJoin(s, ", "), "}");
}

// A lambda of mesh coordinates returning `values`.
std::string CoordsLambda(const Program& p, const std::vector<Expr>& values) {
  std::vector<std::string> binds;
  for (size_t a = 0; a < p.axis_names.size(); ++a) {
    binds.push_back(absl::StrCat("const int64_t ", Var(p.axis_names[a]), " = c[", a, "];"));
  }
  for (size_t a = 0; a < p.axis_names.size(); ++a)
    binds.push_back(absl::StrCat("(void)", Var(p.axis_names[a]), ";"));
  return absl::StrCat("[&](const Coords& c) { ", absl::StrJoin(binds, " "),
                      " return std::vector<int64_t>", Exprs(values), "; }");
}

std::string OperandText(const Operand& o) {
  return absl::StrCat("OperandSpec{", CppQuote(o.tensor), ", ", CppQuote(o.buffer), ", ",
                      Strings(o.dims), ", ", Exprs(o.slice.offset), "}");
}

// Renders expressions of the step at hand: the identity, or for a prefetched transfer's
// next step its loop variable v replaced by v + 1.
struct Step {
  std::string var;  // "" : the identity
  Expr Of(const Expr& e) const {
    return var.empty() ? e : e.Substitute(var, Expr::Var(var) + Expr::Const(1));
  }
  std::string Cpp(const Expr& e) const { return codegen::Cpp(Of(e)); }
  std::vector<Expr> Of(const std::vector<Expr>& es) const {
    std::vector<Expr> out;
    for (const Expr& e : es) out.push_back(Of(e));
    return out;
  }
};

// The C++ of runtime call `c` (runtime/rank/rank.h) at `step`.
std::string CallText(const Program& p, const RuntimeCall& c, const Step& step) {
  using Op = RuntimeCall::Op;
  const std::string tb = absl::StrCat(CppQuote(c.tensor), ", ", CppQuote(c.buffer));
  switch (c.op) {
    case Op::kLocal:
      return absl::StrCat("rt->Local(", tb, ", ", Exprs(step.Of(c.offset)), ");");
    case Op::kBroadcast:
      return absl::StrCat("rt->Broadcast(", tb, ", ", Exprs(step.Of(c.offset)), ", ", Ints(c.axes),
                          ", ", Exprs(step.Of(c.source)), ");");
    case Op::kAllGather:
      return absl::StrCat("rt->AllGather(", tb, ", ", Exprs(step.Of(c.offset)), ", ", Ints(c.axes),
                          ");");
    case Op::kAllToAll:
      return absl::StrCat("rt->AllToAll(", tb, ", ", CoordsLambda(p, step.Of(c.offset_at)), ");");
    case Op::kShiftStep:
      return absl::StrCat("rt->ShiftStep(", CppQuote(c.buffer), ", ", c.axis, ", ", c.shift, ");");
    case Op::kPointToPoint:
      return absl::StrCat("rt->PointToPoint(", tb, ", ", CoordsLambda(p, step.Of(c.source)), ", ",
                          CoordsLambda(p, step.Of(c.offset_at)), ");");
    case Op::kReduceInto:
      return absl::StrCat("rt->ReduceInto(", CppQuote(c.reduce_kind), ", ", tb, ", ",
                          Exprs(step.Of(c.offset)), ", ", Ints(c.axes), ");");
  }
  return "";
}

// One step of a pattern (codegen/pattern.h) at `step`: its calls, under their guard;
// `loop` is the innermost For around it (nullptr at the top).
void EmitSteps(const Program& p, const StepCalls& steps, const Step& step, const For* loop,
               const std::string& pad, std::string* out) {
  auto lines = [&](const std::vector<RuntimeCall>& calls, const std::string& in) {
    for (const RuntimeCall& c : calls) absl::StrAppend(out, in, CallText(p, c, step), "\n");
  };
  std::string condition;
  switch (steps.guard) {
    case StepCalls::Guard::kNone:
      return lines(steps.then, pad);
    case StepCalls::Guard::kPastFirst:
      condition = absl::StrCat(step.Cpp(Expr::Var(steps.loop)), " != 0");
      break;
    case StepCalls::Guard::kBeforeLast:
      if (loop == nullptr || loop->var != steps.loop) return lines(steps.otherwise, pad);
      condition =
          absl::StrCat(Var(loop->var), " + 1 < ", Cpp(loop->lo + Expr::Const(loop->extent)));
      break;
  }
  absl::StrAppend(out, pad, "if (", condition, ") {\n");
  lines(steps.then, pad + "  ");
  absl::StrAppend(out, pad, "} else {\n");
  lines(steps.otherwise, pad + "  ");
  absl::StrAppend(out, pad, "}\n");
}

// The runtime call(s) of transfer `t` at `step`.
void EmitFetch(const Program& p, const Transfer& t, const Step& step, const std::string& pad,
               std::string* out) {
  EmitSteps(p, PatternOf(t.pattern.kind).Fetch(t), step, nullptr, pad, out);
}

// A prefetched transfer driven by loop `f` (codegen/program.h): the first step fetches its
// own block, every step waits for its block and starts the next step's.
void EmitPrefetch(const Program& p, const Transfer& t, const For& f, const std::string& pad,
                  std::string* out) {
  absl::StrAppend(out, pad, "if (", Var(f.var), " == ", Cpp(f.lo), ") {\n");
  EmitFetch(p, t, Step{}, pad + "  ", out);
  absl::StrAppend(out, pad, "}\n", pad, "rt->Wait(", CppQuote(t.buffer), ");\n", pad, "if (",
                  Cpp(Expr::Var(f.var) + Expr::Const(1)), " < ", Cpp(f.lo + Expr::Const(f.extent)),
                  ") {\n", pad, "  rt->Async(", CppQuote(t.buffer), ");\n");
  EmitFetch(p, t, Step{f.var}, pad + "  ", out);
  absl::StrAppend(out, pad, "}\n");
}

// `s`; `loop` is the innermost For around it (nullptr at the top).
void Emit(const Program& p, const StmtPtr& s, const For* loop, int indent, std::string* out) {
  const std::string pad(indent * 2, ' ');
  if (const auto* b = std::get_if<Block>(&s->node)) {
    for (const StmtPtr& c : b->body) Emit(p, c, loop, indent, out);
  } else if (const auto* f = std::get_if<For>(&s->node)) {
    absl::StrAppend(out, pad, "for (int64_t ", Var(f->var), " = ", Cpp(f->lo), "; ", Var(f->var),
                    " < ", Cpp(f->lo + Expr::Const(f->extent)), "; ++", Var(f->var), ") {\n");
    Emit(p, f->body, f, indent + 1, out);
    absl::StrAppend(out, pad, "}\n");
    for (const Stmt* d : PrefetchedIn(*f)) {
      if (const auto* r = std::get_if<Reduce>(&d->node)) {
        absl::StrAppend(out, pad, "rt->Wait(", CppQuote(r->buffer), ");  // the last step's ",
                        r->pattern.ToString(), " of ", r->tensor, "\n");
      }
    }
  } else if (const auto* a = std::get_if<Alloc>(&s->node)) {
    if (a->zero) absl::StrAppend(out, pad, "rt->Zero(", CppQuote(a->buffer), ");\n");
  } else if (const auto* t = std::get_if<Transfer>(&s->node)) {
    const bool prefetch = t->prefetch != 0 && loop != nullptr && loop->var == t->loop;
    absl::StrAppend(out, pad, "// ", t->pattern.ToString(), " of ", t->tensor,
                    prefetch ? ", prefetched along " + t->loop : "", "\n");
    if (prefetch) {
      EmitPrefetch(p, *t, *loop, pad, out);
    } else {
      EmitFetch(p, *t, Step{}, pad, out);
    }
  } else if (const auto* c = std::get_if<Compute>(&s->node)) {
    std::vector<std::string> indices, extents, ins, clipped;
    for (size_t i = 0; i < c->tile.size(); ++i) {
      indices.push_back(c->tile[i].first);
      extents.push_back(absl::StrCat(c->tile[i].second));
      if (c->start.empty() || c->extent[i] == 0) continue;
      // A ragged index: the call covers the values below the extent (codegen/program.h).
      const std::string n = absl::StrCat("n_", c->tile[i].first);
      absl::StrAppend(out, pad, "const int64_t ", n, " = std::max<int64_t>(0, std::min<int64_t>(",
                      c->tile[i].second, ", ", c->extent[i], " - (", Cpp(c->start[i]), ")));\n");
      extents.back() = n;
      clipped.push_back(n + " > 0");
    }
    for (const Operand& o : c->in) ins.push_back(OperandText(o));
    absl::StrAppend(out, pad, clipped.empty() ? "" : "if (" + absl::StrJoin(clipped, " && ") + ") ",
                    "rt->Kernel(", CppQuote(c->kernel), ", ", c->sum ? "true" : "false", ", ",
                    Strings(indices), ", {", absl::StrJoin(extents, ", "), "}, ",
                    OperandText(c->out), ", {", absl::StrJoin(ins, ", "), "});\n");
  } else if (const auto* r = std::get_if<Reduce>(&s->node)) {
    absl::StrAppend(out, pad, "// ", r->pattern.ToString(), " of ", r->tensor, "\n");
    if (r->prefetch != 0 && loop != nullptr && loop->var == r->loop) {
      // Prefetched: the previous step's reduction completes, this step's is started.
      absl::StrAppend(out, pad, "rt->Wait(", CppQuote(r->buffer), ");\n", pad, "rt->Async(",
                      CppQuote(r->buffer), ");\n");
    }
    EmitSteps(p, PatternOf(r->pattern.kind).Reduce(*r), Step{}, loop, pad, out);
  }
}

// Whether a tensor of `p` is redistributed (the emitted code then includes
// runtime/given_spec.h and links //runtime:given_spec).
bool HasGiven(const Program& p) {
  for (const TensorInfo& t : p.tensors) {
    if (Redistributed(p, t)) return true;
  }
  return false;
}

// `text` including runtime/given_spec.h after runtime/rank/rank.h when `p` has given layouts.
std::string WithGivenInclude(const Program& p, std::string text) {
  if (!HasGiven(p)) return text;
  return absl::StrReplaceAll(text, {{"#include \"runtime/rank/rank.h\"\n",
                                     "#include \"runtime/given_spec.h\"\n#include "
                                     "\"runtime/rank/rank.h\"\n"}});
}

// The declarations of `tensors` and `buffers` that MakeRankRuntime and
// MakeBoundRankRuntime take, indented by `pad`; a tensor in a given layout gets its
// redistributions (runtime/given_spec.h) on its rank of `comm`.
std::string Specs(const Program& p, const std::string& pad, const std::string& comm) {
  std::string out = absl::StrCat(pad, "std::vector<TensorSpec> tensors;\n");
  if (HasGiven(p)) {
    absl::StrAppend(&out, pad, "int given_rank = 0;\n", pad, "MPI_Comm_rank(", comm,
                    ", &given_rank);\n");
  }
  for (const TensorInfo& t : p.tensors) {
    absl::StrAppend(&out, pad, "tensors.push_back(TensorSpec{", CppQuote(t.name), ", ",
                    Strings(t.dims), ", ", Ints(t.shape), ", ", Ints(t.local_shape), ", ",
                    t.is_output ? "true" : "false", ", ", CoordsLambda(p, ShardStart(t)), ", ",
                    Ints(CopyAxes(p, t, Redistributed(p, t))), "});\n");
    if (!Redistributed(p, t)) continue;
    absl::StrAppend(&out, pad, "tensors.back().given = GivenSpecOf(", CppQuote(t.given.ToString()),
                    ", tensors.back(), ", p.accumulate ? "true" : "false", ", ",
                    Strings(p.axis_names), ", ", Ints(p.axis_sizes), ", given_rank, ",
                    p.dtype_bytes, ");\n");
  }
  std::vector<std::string> buffers;
  for (const Alloc& a : p.buffers)
    buffers.push_back(absl::StrCat("{", CppQuote(a.buffer), ", ", Ints(a.shape), "}"));
  absl::StrAppend(&out, pad, "std::vector<BufferSpec> buffers = {", absl::StrJoin(buffers, ", "),
                  "};\n");
  return out;
}

// `const int64_t v_x = rt->coords()[0];` for every mesh axis, indented by `pad`.
std::string AxisVars(const Program& p, const std::string& pad) {
  std::string out;
  for (size_t a = 0; a < p.axis_names.size(); ++a) {
    absl::StrAppend(&out, pad, "const int64_t ", Var(p.axis_names[a]), " = rt->coords()[", a,
                    "];\n", pad, "(void)", Var(p.axis_names[a]), ";\n");
  }
  return out;
}

constexpr char kHelpers[] =
    R"(static inline int64_t floord(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
static inline int64_t floormod(int64_t a, int64_t b) { return a - floord(a, b) * b; }
)";

}  // namespace

std::string ProblemDecl(const ir::Problem& problem, const std::string& pad) {
  const auto access = [](const ir::TensorAccess& a) {
    return absl::StrCat("{", CppQuote(a.tensor), ", ", Strings(a.indices), "}");
  };
  std::vector<std::string> operands, extents;
  for (const ir::TensorAccess& a : problem.operands) operands.push_back(access(a));
  for (const auto& [index, extent] : problem.extents)
    extents.push_back(absl::StrCat("{", CppQuote(index), ", ", extent, "}"));
  return absl::StrCat(pad, "const ProblemSpec problem{", access(problem.output), ", {",
                      absl::StrJoin(operands, ", "), "}, ",
                      problem.combine == ir::Problem::Combine::kSum ? "true" : "false", ", ",
                      problem.assign == ir::Problem::Assign::kAccumulate ? "true" : "false", ", {",
                      absl::StrJoin(extents, ", "), "}};\n");
}

std::vector<Expr> ShardStart(const TensorInfo& t) {
  std::vector<Expr> start;
  for (const DimLayout& l : t.layout) {
    Expr s = Expr::Const(0);
    for (const auto& [block, index] : l.blocks) s = s + Expr::Const(block) * index;
    start.push_back(s);
  }
  return start;
}

std::string EmitCpp(const ir::Problem& problem, const Program& p, const std::string& title) {
  std::string out = CppComment(title);
  absl::StrAppend(&out, R"(//
// Generated by meshtune: a standalone MPI program over runtime/rank.h. Run it with
//   mpirun -n )",
                  p.Ranks(), R"( ./program [--reps N] [--warmup N] [--seed S]
// Rank 0 prints one JSON line: a meshtune.v1.RunResult (verified, seconds, median_s,
// bytes_sent_max, checksum, error) in protobuf's JSON mapping.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/mpi_comm.h"
#include "runtime/rank/rank.h"
#include "runtime/launch/run_result.h"

using namespace meshtune::runtime;

)",
                  kHelpers, "\n", kMainOpening);
  absl::StrAppend(&out, Specs(p, "    ", "MPI_COMM_WORLD"), ProblemDecl(problem, "    "),
                  "    auto rt = MakeRankRuntime(", p.dtype_bytes, ", MPI_COMM_WORLD, ",
                  Ints(p.axis_sizes), ", ", Strings(p.axis_names), ", tensors, buffers, problem, ",
                  p.accumulate ? "true" : "false", ", seed);\n", AxisVars(p, "    "),
                  "    const RunStats m = rt->Measure([&] {\n");
  Emit(p, p.body, nullptr, 3, &out);
  absl::StrAppend(&out, R"(    }, warmup, reps, "", nullptr);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::printf("%s\n", RunResultLine(m).c_str());
  }
  MPI_Finalize();
  return 0;
}
)");
  return WithGivenInclude(p, std::move(out));
}

namespace {

std::string Identity(const std::string& name) { return name; }

// "C[16*x, 12*y]": where `t`'s shard starts, in the mesh axes' names.
std::string StartText(const TensorInfo& t) {
  std::vector<std::string> dims;
  for (const Expr& e : ShardStart(t)) dims.push_back(e.ToString(Identity));
  return absl::StrCat(t.name, "[", absl::StrJoin(dims, ", "), "]");
}

// The header comment and declarations of the callable kernel.
std::string CallableHeader(const Program& p, const std::string& title, const std::string& name,
                           const std::string& params) {
  std::string out = CppComment(title);
  std::vector<std::string> axes;
  for (size_t a = 0; a < p.axis_names.size(); ++a)
    axes.push_back(absl::StrCat(p.axis_names[a], "=", p.axis_sizes[a]));
  absl::StrAppend(
      &out, "//\n// Generated by meshtune: a callable kernel over runtime/rank/rank.h (link\n",
      "// //runtime:mpi_comm and //runtime:rank, or meshtune's support library).\n//\n", "// ",
      name, " is collective over `comm`, which must have ", p.Ranks(), " ranks: the mesh ",
      absl::StrJoin(axes, ","), ",\n",
      "// MPI rank r at the row-major coordinates of r (the last axis fastest). Each "
      "pointer is\n// that rank's shard of the tensor, dense and row-major at its "
      "storage's extents\n// (",
      name, "_storage; ", name,
      "_shard says which "
      "elements it holds: where blocks do not\n// divide an extent, the last block "
      "holds fewer and a block past the end none,\n// the rest is scratch):\n");
  for (const TensorInfo& t : p.tensors) {
    const std::string where =
        !Redistributed(p, t)
            ? absl::StrCat("shard ", Ints(t.local_shape), " starting at ", StartText(t))
            : absl::StrCat("not a shard: the rank's part in the given layout ", t.given.ToString(),
                           " (ir/layout.h)");
    absl::StrAppend(&out, "//   ", t.name, "[", absl::StrJoin(t.dims, ","), "]: global shape ",
                    Ints(t.shape), ", ", where,
                    t.is_output
                        ? (p.accumulate ? "  (output, added to)" : "  (output, overwritten)")
                        : "  (input, only read)",
                    "\n");
  }
  const TensorInfo* output = nullptr;
  for (const TensorInfo& t : p.tensors) {
    if (t.is_output) output = &t;
  }
  std::vector<std::string> layer;
  for (int a : LayerAxes(p, *output)) layer.push_back(p.axis_names[static_cast<size_t>(a)]);
  const std::string holders =
      layer.empty()
          ? absl::StrCat("every copy of ", output->name, " holds the result after the call")
          : absl::StrCat("after the call only the ranks at ", absl::StrJoin(layer, "=0, "),
                         "=0 hold ", output->name,
                         "'s\n// result (generated with --result-on-layer; ", name,
                         "_holds says which), the other\n// copies hold scratch");
  absl::StrAppend(
      &out, "// (on a mesh axis, x is the rank's coordinate; a tensor not split along an axis is\n",
      "// copied on every rank along it: every copy of an input must hold the same values, "
      "and\n// ",
      holders, ").\n", "// Returns 0; 1 when comm's size is not ", p.Ranks(),
      "; 2 when the runtime fails (a message on\n// stderr). Transfer buffers are allocated at "
      "the first call and kept for later calls on\n// the same communicator. Not thread-safe: one "
      "call at a time in a process.\n",
      CallableDeclarations(name, p.Ranks(), params));
  return out;
}

// NAME_holds's body: 0 for the output at a rank off coordinate 0 of a LayerAxes axis.
std::string HoldsFunction(const Program& p, const std::string& name) {
  std::string out = absl::StrCat("int ", name, "_holds(const char* tensor, int rank) {\n",
                                 "  if (rank < 0 || rank >= ", p.Ranks(), ") return -1;\n");
  // A rank's coordinate on axis a is rank / strides[a] % size (row-major, the last fastest).
  std::vector<int64_t> strides(p.axis_sizes.size());
  int64_t stride = p.Ranks();
  for (size_t a = 0; a < p.axis_sizes.size(); ++a) {
    stride /= p.axis_sizes[a];
    strides[a] = stride;
  }
  for (const TensorInfo& t : p.tensors) {
    std::vector<std::string> on_layer;
    for (int a : LayerAxes(p, t)) {
      on_layer.push_back(absl::StrCat("rank / ", strides[static_cast<size_t>(a)], " % ",
                                      p.axis_sizes[static_cast<size_t>(a)], " == 0"));
    }
    absl::StrAppend(
        &out, "  if (std::strcmp(tensor, ", CppQuote(t.name), ") == 0) return ",
        on_layer.empty() ? "1" : absl::StrCat("(", absl::StrJoin(on_layer, " && "), ") ? 1 : 0"),
        ";\n");
  }
  absl::StrAppend(&out, "  return -1;\n}\n");
  return out;
}

// NAME_shard's body: per tensor, its start from the rank's coordinates and its extents.
std::string ShardFunction(const Program& p, const std::string& name) {
  std::string out = absl::StrCat(
      "int ", name, "_shard(const char* tensor, int rank, int64_t* start, int64_t* extents) {\n",
      "  if (rank < 0 || rank >= ", p.Ranks(), ") return -1;\n", "  int64_t r = rank;\n");
  for (int a = static_cast<int>(p.axis_names.size()) - 1; a >= 0; --a) {
    absl::StrAppend(&out, "  const int64_t ", Var(p.axis_names[a]), " = r % ", p.axis_sizes[a],
                    ";\n  r /= ", p.axis_sizes[a], ";\n  (void)", Var(p.axis_names[a]), ";\n");
  }
  for (const TensorInfo& t : p.tensors) {
    absl::StrAppend(&out, "  if (std::strcmp(tensor, ", CppQuote(t.name), ") == 0) {\n");
    const std::vector<Expr> start = ShardStart(t);
    for (size_t d = 0; d < start.size(); ++d) {
      absl::StrAppend(&out, "    start[", d, "] = ", Cpp(start[d]), ";\n    extents[", d, "] = ");
      if (t.local_shape[d] == t.shape[d]) {
        absl::StrAppend(&out, t.shape[d], ";\n");
      } else {
        // The elements held: the block, clipped at the extent (codegen/program.h).
        absl::StrAppend(&out, "std::max<int64_t>(0, std::min<int64_t>(", t.local_shape[d], ", ",
                        t.shape[d], " - start[", d, "]));\n");
      }
    }
    // A shard with no elements holds none along any dim.
    std::vector<std::string> none;
    for (size_t d = 0; d < start.size(); ++d) none.push_back(absl::StrCat("extents[", d, "] == 0"));
    if (!none.empty()) {
      absl::StrAppend(&out, "    if (", absl::StrJoin(none, " || "),
                      ") {\n      for (int d = 0; d < ", start.size(),
                      "; ++d) extents[d] = 0;\n    }\n");
    }
    absl::StrAppend(&out, "    return ", start.size(), ";\n  }\n");
  }
  absl::StrAppend(&out, "  return -1;\n}\n");
  return out;
}

// NAME_storage's body: per tensor, the extents of every rank's storage of its shard.
std::string StorageFunction(const Program& p, const std::string& name) {
  std::string out =
      absl::StrCat("int ", name, "_storage(const char* tensor, int64_t* storage) {\n");
  for (const TensorInfo& t : p.tensors) {
    absl::StrAppend(&out, "  if (std::strcmp(tensor, ", CppQuote(t.name), ") == 0) {\n");
    for (size_t d = 0; d < t.local_shape.size(); ++d)
      absl::StrAppend(&out, "    storage[", d, "] = ", t.local_shape[d], ";\n");
    absl::StrAppend(&out, "    return ", t.local_shape.size(), ";\n  }\n");
  }
  absl::StrAppend(&out, "  return -1;\n}\n");
  return out;
}

}  // namespace

std::string CallableDeclarations(const std::string& name, int64_t ranks,
                                 const std::string& params) {
  const std::string guard = absl::AsciiStrToUpper(name) + "_H_";
  return absl::StrCat(
      "#ifndef ", guard, "\n#define ", guard, "\n\n#include <mpi.h>\n#include <stdint.h>\n\n",
      "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\nint ", name, "(", params,
      ", MPI_Comm comm);\n\n", "// Where `tensor`'s shard lies on MPI rank `rank` (0 <= rank < ",
      ranks,
      "): the global index of its\n// first element and its extents, one per dim. Returns the "
      "number of dims, or -1 for\n// an unknown tensor or rank; extents 0 on a rank that "
      "holds none of it.\nint ",
      name, "_shard(const char* tensor, int rank, int64_t* start, int64_t* extents);\n\n",
      "// The extents of `tensor`'s storage on every rank (the pointer's array has their\n",
      "// product of elements), one per dim. Returns the number of dims, or -1 for an\n",
      "// unknown tensor.\nint ", name, "_storage(const char* tensor, int64_t* storage);\n\n",
      "// Whether MPI rank `rank`'s shard of `tensor` holds the tensor's values after a call: 1\n",
      "// (every input; the output on every rank that holds its result), 0 (the output on a\n",
      "// rank off the layer it ends on), or -1 for an unknown tensor or rank.\nint ", name,
      "_holds(const char* tensor, int rank);\n\n", "#ifdef __cplusplus\n}\n#endif\n\n#endif  // ",
      guard, "\n");
}

const char kCallableIncludes[] = R"(
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/mpi_comm.h"
#include "runtime/rank/rank.h"

using namespace meshtune::runtime;

)";

std::string CallableDefinitions(const Program& p, const std::string& name) {
  const char* type = p.dtype_bytes == 8 ? "double" : "float";
  // The source prefixes the parameters, so that no tensor name clashes with the code's own.
  std::vector<std::string> source_params;
  for (const TensorInfo& t : p.tensors) {
    source_params.push_back(absl::StrCat(t.is_output ? "" : "const ", type, "* p_", t.name));
  }
  std::string out;
  absl::StrAppend(
      &out, kHelpers, "\n", ShardFunction(p, name), "\n", StorageFunction(p, name), "\n",
      HoldsFunction(p, name), R"(
// The runtime of the last communicator, freed when MPI_Finalize starts (a delete callback of
// an attribute of MPI_COMM_SELF), before MPI is gone.
static std::unique_ptr<RankRuntimeBase>& Runtime() {
  static std::unique_ptr<RankRuntimeBase> rt;
  return rt;
}
static int FreeRuntime(MPI_Comm, int, void*, void*) {
  Runtime().reset();
  return MPI_SUCCESS;
}
)",
      "\nint ", name, "(", absl::StrJoin(source_params, ", "),
      ", MPI_Comm comm) {\n  int size = 0;\n",
      "  MPI_Comm_size(comm, &size);\n  if (size != ", p.Ranks(), ") {\n",
      "    std::fprintf(stderr, \"", name,
      ": the communicator has %d ranks; the "
      "schedule needs ",
      p.Ranks(), "\\n\", size);\n    return 1;\n  }\n",
      "  std::unique_ptr<RankRuntimeBase>& rt = Runtime();\n",
      "  static MPI_Comm built_for = MPI_COMM_NULL;\n", "  static bool registered = false;\n",
      "  if (!registered) {\n    int key = MPI_KEYVAL_INVALID;\n",
      "    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, FreeRuntime, &key, nullptr);\n",
      "    MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);\n    registered = true;\n  }\n",
      "  if (!rt || comm != built_for) {\n", Specs(p, "    ", "comm"),
      "    rt = MakeBoundRankRuntime(", p.dtype_bytes, ", comm, ", Ints(p.axis_sizes), ", ",
      Strings(p.axis_names), ", tensors, buffers, ", p.accumulate ? "true" : "false",
      ");\n    built_for = comm;\n  }\n");
  for (const TensorInfo& t : p.tensors) {
    absl::StrAppend(&out, "  rt->Bind(", CppQuote(t.name), ", const_cast<", type, "*>(p_", t.name,
                    "));\n");
  }
  absl::StrAppend(&out, AxisVars(p, "  "), "  const std::string error = rt->Run([&] {\n");
  Emit(p, p.body, nullptr, 2, &out);
  absl::StrAppend(&out, "  });\n  if (!error.empty()) {\n    std::fprintf(stderr, \"", name,
                  ": %s\\n\", error.c_str());\n    return 2;\n  }\n  return 0;\n}\n");
  return out;
}

CallableKernel EmitCallable(const Program& p, const std::string& title, const std::string& name,
                            const std::string& header_name) {
  const char* type = p.dtype_bytes == 8 ? "double" : "float";
  // The header names the parameters after the tensors.
  std::vector<std::string> params;
  for (const TensorInfo& t : p.tensors) {
    params.push_back(absl::StrCat(t.is_output ? "" : "const ", type, "* ", t.name));
  }
  CallableKernel k;
  k.header = CallableHeader(p, title, name, absl::StrJoin(params, ", "));
  k.source = absl::StrCat(
      "// Generated by meshtune: the definition of the callable kernel ", name,
      header_name.empty() ? ".\n" : absl::StrCat(".\n#include ", CppQuote(header_name), "\n"),
      kCallableIncludes, CallableDefinitions(p, name));
  k.source = WithGivenInclude(p, std::move(k.source));
  return k;
}

}  // namespace meshtune::codegen
