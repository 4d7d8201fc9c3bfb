#include "runtime/executor.h"

#include <memory>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/bytes.h"
#include "codegen/pattern.h"
#include "runtime/box.h"
#include "runtime/given_layouts.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {

namespace {

using codegen::Block;
using codegen::Compute;
using codegen::Expr;
using codegen::For;
using codegen::Program;
using codegen::StmtPtr;

// The value of `e` on the rank at `coords`, with the loop variables `loops` bound.
int64_t EvalAt(const Program& p, const Expr& e, const Coords& coords,
               const std::vector<std::pair<std::string, int64_t>>& loops) {
  return e.Eval([&](const std::string& name) -> int64_t {
    for (size_t a = 0; a < p.axis_names.size(); ++a) {
      if (p.axis_names[a] == name) return coords[a];
    }
    for (const auto& [var, value] : loops) {
      if (var == name) return value;
    }
    return 0;
  });
}

// Walks the Program, evaluating its expressions, and drives a RankRuntime.
class Interpreter {
 public:
  Interpreter(const Program& p, RankRuntimeBase* rt) : p_(p), rt_(rt) {}

  void Exec(const StmtPtr& s) {
    if (const auto* b = std::get_if<Block>(&s->node)) {
      for (const StmtPtr& c : b->body) Exec(c);
    } else if (const auto* f = std::get_if<For>(&s->node)) {
      ExecFor(*f);
    } else if (const auto* a = std::get_if<codegen::Alloc>(&s->node)) {
      if (a->zero) rt_->Zero(a->buffer);
    } else if (const auto* t = std::get_if<codegen::Transfer>(&s->node)) {
      if (t->prefetch != 0 && Driven(t->loop)) {
        Prefetch(*t);
      } else {
        Fetch(*t);
      }
    } else if (const auto* c = std::get_if<Compute>(&s->node)) {
      std::vector<std::string> indices;
      std::vector<int64_t> extents;
      for (size_t i = 0; i < c->tile.size(); ++i) {
        indices.push_back(c->tile[i].first);
        extents.push_back(c->start.empty() ? c->tile[i].second
                                           : codegen::Clipped(c->tile[i].second, c->extent[i],
                                                              Eval(c->start[i], rt_->coords())));
        if (extents.back() == 0) return;  // past the extent of a ragged index: nothing to do
      }
      std::vector<OperandSpec> in;
      for (const codegen::Operand& o : c->in) in.push_back(Spec(o));
      rt_->Kernel(c->kernel, c->sum, indices, extents, Spec(c->out), in);
    } else if (const auto* r = std::get_if<codegen::Reduce>(&s->node)) {
      if (r->prefetch != 0 && Driven(r->loop)) {
        rt_->Wait(r->buffer);  // the previous step's reduction (none at the first)
        rt_->Async(r->buffer);
      }
      Run(codegen::PatternOf(r->pattern.kind).Reduce(*r));
    }
  }

  int64_t Eval(const Expr& e, const Coords& coords) const { return EvalAt(p_, e, coords, loops_); }
  std::vector<int64_t> Eval(const std::vector<Expr>& es, const Coords& coords) const {
    std::vector<int64_t> out;
    for (const Expr& e : es) out.push_back(Eval(e, coords));
    return out;
  }

 private:
  OperandSpec Spec(const codegen::Operand& o) const {
    return OperandSpec{o.tensor, o.buffer, o.dims, Eval(o.slice.offset, rt_->coords())};
  }

  void ExecFor(const For& f) {
    const int64_t lo = Eval(f.lo, rt_->coords());
    loops_.emplace_back(f.var, lo);
    fors_.push_back({lo, f.extent});
    for (int64_t i = 0; i < f.extent; ++i) {
      loops_.back().second = lo + i;
      Exec(f.body);
    }
    fors_.pop_back();
    loops_.pop_back();
    // The last step's prefetched reductions (codegen/program.h).
    for (const codegen::Stmt* s : codegen::PrefetchedIn(f)) {
      if (const auto* r = std::get_if<codegen::Reduce>(&s->node)) rt_->Wait(r->buffer);
    }
  }

  // Whether the innermost loop is `loop`: a prefetched statement there is driven by it
  // (codegen::PrefetchedIn); elsewhere it runs as without prefetch.
  bool Driven(const std::string& loop) const {
    return !loops_.empty() && loops_.back().first == loop;
  }

  // A prefetched transfer at step v of its loop: the first step fetches its own data; each
  // waits for its data, then starts the next step's into the buffer's other half.
  void Prefetch(const codegen::Transfer& t) {
    const auto [lo, extent] = fors_.back();
    int64_t& v = loops_.back().second;
    if (v == lo) Fetch(t);
    rt_->Wait(t.buffer);  // started at v - 1 (nothing pending at the first step)
    if (v + 1 < lo + extent) {
      rt_->Async(t.buffer);
      ++v;  // the next step's source, offsets and ring position
      Fetch(t);
      --v;
    }
  }

  void Fetch(const codegen::Transfer& t) { Run(codegen::PatternOf(t.pattern.kind).Fetch(t)); }

  // Whether `steps`' guard holds at this point of the loops.
  bool GuardHolds(const codegen::StepCalls& steps) const {
    switch (steps.guard) {
      case codegen::StepCalls::Guard::kNone:
        return true;
      case codegen::StepCalls::Guard::kPastFirst:
        for (const auto& [var, value] : loops_) {
          if (var == steps.loop && value != 0) return true;
        }
        return false;
      case codegen::StepCalls::Guard::kBeforeLast:
        return Driven(steps.loop) &&
               loops_.back().second != fors_.back().first + fors_.back().second - 1;
    }
    return true;
  }

  // One step of a pattern (codegen/pattern.h): its runtime calls, as the guard picks them.
  void Run(const codegen::StepCalls& steps) {
    for (const codegen::RuntimeCall& call : GuardHolds(steps) ? steps.then : steps.otherwise)
      Call(call);
  }

  void Call(const codegen::RuntimeCall& c) {
    using Op = codegen::RuntimeCall::Op;
    const Coords& me = rt_->coords();
    switch (c.op) {
      case Op::kLocal:
        return rt_->Local(c.tensor, c.buffer, Eval(c.offset, me));
      case Op::kBroadcast:
        return rt_->Broadcast(c.tensor, c.buffer, Eval(c.offset, me), c.axes, Eval(c.source, me));
      case Op::kAllGather:
        return rt_->AllGather(c.tensor, c.buffer, Eval(c.offset, me), c.axes);
      case Op::kAllToAll:
        return rt_->AllToAll(c.tensor, c.buffer,
                             [&](const Coords& at) { return Eval(c.offset_at, at); });
      case Op::kShiftStep:
        return rt_->ShiftStep(c.buffer, c.axis, c.shift);
      case Op::kPointToPoint:
        return rt_->PointToPoint(
            c.tensor, c.buffer, [&](const Coords& at) { return Eval(c.source, at); },
            [&](const Coords& at) { return Eval(c.offset_at, at); });
      case Op::kReduceInto:
        return rt_->ReduceInto(c.reduce_kind, c.tensor, c.buffer, Eval(c.offset, me), c.axes);
    }
  }

  const Program& p_;
  RankRuntimeBase* rt_;
  std::vector<std::pair<std::string, int64_t>> loops_;
  std::vector<std::pair<int64_t, int64_t>> fors_;  // (lo, extent) of the enclosing loops
};

}  // namespace

void Interpret(const Program& program, RankRuntimeBase* rt) {
  Interpreter interpreter(program, rt);
  if (program.body) interpreter.Exec(program.body);
}

namespace {

// The runtime's view of `program`: tensors (with their block starts) and buffers.
struct Specs {
  std::vector<TensorSpec> tensors;
  std::vector<BufferSpec> buffers;
};

// Specs of `program`, or the error of a program Execute and BoundProgram cannot run. With
// `given`, tensors in given layouts carry their redistributions (Execute); else the
// caller supplies every shard (BoundProgram).
absl::StatusOr<Specs> SpecsOf(const Program& program, const Comm& comm, bool given) {
  if (comm.axis_sizes() != program.axis_sizes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the mesh has ", program.Ranks(), " ranks but the job has ", comm.size()));
  }
  if (codegen::KernelCall(program) == nullptr)
    return absl::InvalidArgumentError("the program has no kernel call");
  Specs s;
  for (const codegen::TensorInfo& t : program.tensors) {
    TensorSpec spec{t.name, t.dims, t.shape, t.local_shape, t.is_output, nullptr, {}};
    // In place (the layout is the sharding): an ordinary shard, nothing moves.
    const bool redistributed = given && codegen::Redistributed(program, t);
    if (redistributed) {
      absl::StatusOr<GivenPlans> plans = PlanGiven(program, t);
      if (!plans.ok()) return plans.status();
      spec.given = MakeGivenSpec(t, *std::move(plans), comm.rank(), program.dtype_bytes);
    }
    spec.replicated_axes = codegen::CopyAxes(program, t, redistributed);
    spec.block_start = [&program, layout = t.layout](const Coords& coords) {
      std::vector<int64_t> start;
      for (const codegen::DimLayout& l : layout) {
        int64_t v = 0;
        for (const auto& [block, index] : l.blocks) v += block * EvalAt(program, index, coords, {});
        start.push_back(v);
      }
      return start;
    };
    s.tensors.push_back(std::move(spec));
  }
  for (const codegen::Alloc& a : program.buffers) s.buffers.push_back({a.buffer, a.shape});
  return s;
}

}  // namespace

ProblemSpec ProblemSpecOf(const ir::Problem& problem) {
  ProblemSpec spec;
  spec.output = {problem.output.tensor, problem.output.indices};
  for (const ir::TensorAccess& a : problem.operands) spec.operands.push_back({a.tensor, a.indices});
  spec.sum = problem.combine == ir::Problem::Combine::kSum;
  spec.accumulate = problem.assign == ir::Problem::Assign::kAccumulate;
  spec.extents = problem.extents;
  return spec;
}

RunStats Execute(const ProblemSpec& problem, const Program& program, std::unique_ptr<Comm> comm,
                 const ExecOptions& options) {
  RunStats result;
  absl::StatusOr<Specs> specs = SpecsOf(program, *comm, /*given=*/true);
  if (!specs.ok()) {
    result.error = std::string(specs.status().message());
    return result;
  }
  std::unique_ptr<RankRuntimeBase> rt = MakeRankRuntime(
      program.dtype_bytes, std::move(comm), program.axis_names, std::move(specs->tensors),
      std::move(specs->buffers), problem, program.accumulate, options.seed);
  Interpreter interpreter(program, rt.get());
  return rt->Measure([&] { interpreter.Exec(program.body); }, options.warmup, options.reps,
                     options.inject_fault, options.gate);
}

absl::StatusOr<std::unique_ptr<BoundProgram>> BoundProgram::Create(const Program& program,
                                                                   std::unique_ptr<Comm> comm) {
  auto owned = std::make_shared<const Program>(program);
  absl::StatusOr<Specs> specs = SpecsOf(*owned, *comm, /*given=*/false);
  if (!specs.ok()) {
    return absl::InvalidArgumentError(absl::StrReplaceAll(
        specs.status().message(), {{"ranks but the job has", "ranks but the communicator has"}}));
  }
  const Coords coords = comm->CoordsOf(comm->rank());
  int64_t buffer_bytes = 0;
  for (const BufferSpec& b : specs->buffers) buffer_bytes += Elements(b.shape) * owned->dtype_bytes;
  std::unique_ptr<RankRuntimeBase> rt;
  try {
    rt = MakeBoundRankRuntime(owned->dtype_bytes, std::move(comm), owned->axis_names,
                              std::move(specs->tensors), std::move(specs->buffers),
                              owned->accumulate);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate the schedule's transfer buffers on this rank (",
                     base::FormatBytes(buffer_bytes), ")"));
  }
  return std::unique_ptr<BoundProgram>(new BoundProgram(std::move(owned), coords, std::move(rt)));
}

BoundProgram::BoundProgram(std::shared_ptr<const Program> program, Coords coords,
                           std::unique_ptr<RankRuntimeBase> rt)
    : program_(std::move(program)), coords_(std::move(coords)), rt_(std::move(rt)) {}

std::vector<int64_t> BoundProgram::ShardStart(size_t t) const {
  std::vector<int64_t> start;
  for (const codegen::DimLayout& l : program_->tensors[t].layout) {
    int64_t v = 0;
    for (const auto& [block, index] : l.blocks) v += block * EvalAt(*program_, index, coords_, {});
    start.push_back(v);
  }
  return start;
}

const std::vector<int64_t>& BoundProgram::ShardExtents(size_t t) const {
  return program_->tensors[t].local_shape;
}

bool BoundProgram::HoldsResult(size_t t) const {
  return codegen::OnLayer(*program_, program_->tensors[t], coords_);
}

absl::Status BoundProgram::Run(const std::vector<void*>& shards) {
  for (size_t t = 0; t < program_->tensors.size() && t < shards.size(); ++t)
    rt_->Bind(program_->tensors[t].name, shards[t]);
  Interpreter interpreter(*program_, rt_.get());
  const std::string error = rt_->Run([&] { interpreter.Exec(program_->body); });
  if (!error.empty()) return absl::InternalError(error);
  return absl::OkStatus();
}

}  // namespace meshtune::runtime
