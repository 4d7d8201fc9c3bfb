// Blocks that do not divide an extent (codegen/program.h, "ragged"), end to end without
// translation validation: matmuls at odd extents on meshes whose parts do not divide them,
// scheduled by traces of every communication pattern, judged (ir::Judge, skipping the
// illegal ones with a count), lowered (codegen::Lower, offsets on) and run on the simulator
// against the oracle (the reference from the problem as stated), in f64 and f32. Every
// legal trace must lower and verify; between them they must cover replicated inputs'
// copies, given layouts, broadcasts, all-gathers, all-to-alls, rings, the reductions and
// ranks with an empty block. The same programs also run on the caller's memory
// (BoundProgram) with NaN in every padding slot, and with an injected wrong element.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "codegen/lower.h"
#include "codegen/program.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "runtime/box.h"
#include "runtime/executor.h"
#include "runtime/fill.h"
#include "runtime/oracle.h"
#include "runtime/sim_comm.h"
#include "runtime/simulator.h"

namespace meshtune::runtime {
namespace {

constexpr char kAccumulate[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kAssign[] = "C[m,n] = A[m,k] * B[k,n]";

// A trace template: $P is the size of axis x (1D meshes) and $Q of axis y (2D meshes).
struct Schedule {
  std::string name;
  int mesh_dims;  // 1: for meshes "x=P"; 2: for "x=2,y=Q"
  std::string trace;
  std::vector<std::string> layouts;
  bool result_on_layer = false;
};

// The schedules on 1D meshes.
std::vector<Schedule> Schedules1D() {
  return {
      // 1D: rows over x, B replicated (its copies broadcast from x=0 at each run).
      {"rows, B replicated", 1,
       "distribute([m], [mo], [mi], [x])\nreorder(mo, mi, n, k)\nshard(A, m@x)\nshard(C, m@x)\n"
       "tensorize([mi, n, k], matmul)\n"},
      // 1D: columns over x, A replicated.
      {"columns, A replicated", 1,
       "distribute([n], [no], [ni], [x])\nreorder(no, m, ni, k)\nshard(B, n@x)\nshard(C, n@x)\n"
       "tensorize([m, ni, k], matmul)\n"},
      // 1D: B's columns fetched at a serial loop: broadcast from the holder.
      {"broadcast B at no", 1,
       "distribute([m], [mo], [mi], [x])\ndivide(n, no, ni, $P)\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x)\nshard(B, n@x)\nshard(C, m@x)\ncommunicate(B, no)\n"
       "tensorize([mi, ni, k], matmul)\n"},
      // ... and as a ring (B's blocks shift along x).
      {"ring B at no", 1,
       "distribute([m], [mo], [mi], [x])\ndivide(n, no, ni, $P)\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x)\nshard(B, n@x)\nshard(C, m@x)\ncommunicate(B, no, rotate=[mo])\n"
       "tensorize([mi, ni, k], matmul)\n"},
      {"prefetched ring B at no", 1,
       "distribute([m], [mo], [mi], [x])\ndivide(n, no, ni, $P)\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x)\nshard(B, n@x)\nshard(C, m@x)\ncommunicate(B, no, rotate=[mo], prefetch=1)\n"
       "tensorize([mi, ni, k], matmul)\n"},
      // 1D: A and B sharded along k, gathered whole at the row loop.
      {"all-gather along k", 1,
       "distribute([m], [mo], [mi], [x])\nreorder(mo, mi, n, k)\nshard(A, k@x)\nshard(B, k@x)\n"
       "shard(C, m@x)\ncommunicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, n, k], matmul)\n"},
      // 1D: k in 2 steps over blocks of k on x (a step's box may span two ranks' blocks).
      {"k in 2 steps", 1,
       "distribute([m], [mo], [mi], [x])\ndivide(k, ko, ki, 2)\nreorder(mo, ko, mi, n, ki)\n"
       "shard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\ncommunicate(A, ko)\ncommunicate(B, ko)\n"
       "tensorize([mi, n, ki], matmul)\n"},
      // 1D split-k: partial sums reduce-scattered onto C's rows.
      {"split-k reduce-scatter", 1,
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\n"
       "communicate(C, ki)\ntensorize([ki, m, n], matmul)\n"},
      {"split-k prefetched reduce-scatter", 1,
       "distribute([k], [ko], [ki], [x])\ndivide(n, no, ni, 2)\nreorder(ko, no, m, ni, ki)\n"
       "shard(A, k@x)\nshard(B, k@x)\nshard(C, m@x)\ncommunicate(C, no, prefetch=1)\n"
       "tensorize([m, ni, ki], matmul)\n"},
      {"split-k all-reduce", 1,
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\ncommunicate(C, ki)\n"
       "tensorize([ki, m, n], matmul)\n"},
      {"split-k reduce onto one layer",
       1,
       "distribute([k], [ko], [ki], [x])\nshard(A, k@x)\nshard(B, k@x)\ncommunicate(C, ki)\n"
       "tensorize([ki, m, n], matmul)\n",
       {},
       true},
      {"split-k ring reduce-scatter", 1,
       "distribute([k], [ko], [ki], [x])\ndivide(n, no, ni, $P)\nreorder(ko, no, m, ni, ki)\n"
       "shard(A, k@x)\nshard(B, k@x)\nshard(C, n@x)\ncommunicate(C, no, rotate=[ko])\n"
       "tensorize([m, ni, ki], matmul)\n"},
      // 1D: given layouts, redistributed into the shards and out of them.
      {"rows, given layouts",
       1,
       "distribute([m], [mo], [mi], [x])\nreorder(mo, mi, n, k)\nshard(A, m@x)\nshard(C, m@x)\n"
       "tensorize([mi, n, k], matmul)\n",
       {"A=root", "B=root", "C=root"}},
  };
}

// The schedules on 2D meshes.
std::vector<Schedule> Schedules2D() {
  return {
      // 2D: SUMMA, k in steps of the mesh's larger side.
      {"summa", 2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, $Q)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\n"
       "shard(C, m@x, n@y)\ncommunicate(A, ko)\ncommunicate(B, ko)\n"
       "tensorize([mi, ni, ki], matmul)\n"},
      {"summa, k in 6 steps", 2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, 6)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\n"
       "shard(C, m@x, n@y)\ncommunicate(A, ko)\ncommunicate(B, ko)\n"
       "tensorize([mi, ni, ki], matmul)\n"},
      {"summa prefetched", 2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, $Q)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\n"
       "shard(C, m@x, n@y)\ncommunicate(A, ko, prefetch=1)\ncommunicate(B, ko, prefetch=1)\n"
       "tensorize([mi, ni, ki], matmul)\n"},
      // 2D: whole rows of A and columns of B gathered along the mesh's rows and columns.
      {"all-gather rows", 2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
       "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n"},
      // 2D: A replicated along y, B along x; nothing communicated in the body.
      {"2D, replicated inputs", 2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x)\nshard(B, n@y)\nshard(C, m@x, n@y)\ntensorize([mi, ni, k], matmul)\n"},
      // 2D: Cannon (skewed shardings, both operands rotate); square meshes.
      {"cannon", 2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, $Q)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@(x+y)%$Q)\nshard(B, k@(x+y)%$Q, n@y)\n"
       "shard(C, m@x, n@y)\ncommunicate(A, ko, rotate=[mo,no])\n"
       "communicate(B, ko, rotate=[mo,no])\ntensorize([mi, ni, ki], matmul)\n"},
      // 2D: rows over x, k over y: partial sums reduce-scattered along y onto C's columns...
      {"2D split-k reduce-scatter", 2,
       "distribute([m,k], [mo,ko], [mi,ki], [x,y])\nreorder(mo, ko, mi, n, ki)\n"
       "shard(A, m@x, k@y)\nshard(B, k@y)\nshard(C, m@x, n@y)\ncommunicate(C, mi)\n"
       "tensorize([mi, n, ki], matmul)\n"},
      // ... or all-reduced into every copy along y.
      {"2D split-k all-reduce", 2,
       "distribute([m,k], [mo,ko], [mi,ki], [x,y])\nreorder(mo, ko, mi, n, ki)\n"
       "shard(A, m@x, k@y)\nshard(B, k@y)\nshard(C, m@x)\ncommunicate(C, mi)\n"
       "tensorize([mi, n, ki], matmul)\n"},
      // 2D: given layouts (block-cyclic, a grid of the schedule's blocks, one rank, every
      // rank) redistributed into the ragged shards at each run and the output back.
      {"summa, given layouts",
       2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\ndivide(k, ko, ki, $Q)\n"
       "reorder(mo, no, ko, mi, ni, ki)\nshard(A, m@x, k@y)\nshard(B, k@x, n@y)\n"
       "shard(C, m@x, n@y)\ncommunicate(A, ko)\ncommunicate(B, ko)\n"
       "tensorize([mi, ni, ki], matmul)\n",
       {"A=cyclic(2,2)", "B=grid(x,y)", "C=cyclic(3,2)"}},
      {"all-gather rows, given layouts",
       2,
       "distribute([m,n], [mo,no], [mi,ni], [x,y])\nreorder(mo, no, mi, ni, k)\n"
       "shard(A, m@x, k@y)\nshard(B, k@x, n@y)\nshard(C, m@x, n@y)\n"
       "communicate(A, mi)\ncommunicate(B, mi)\ntensorize([mi, ni, k], matmul)\n",
       {"A=replicated", "B=root", "C=grid(x,y)"}},
      // 2D: the rows split over both axes (on x=2,y=3 with m=7, the last two ranks' blocks
      // are empty).
      {"rows over x then y", 2,
       "distribute([m], [mo], [mi], [x])\ndistribute([mi], [ma], [mb], [y])\n"
       "reorder(mo, ma, mb, n, k)\nshard(A, m@x, m@y)\nshard(C, m@x, m@y)\n"
       "tensorize([mb, n, k], matmul)\n"},
  };
}

const std::vector<Schedule>& Schedules() {
  static const auto* out = [] {
    auto* all = new std::vector<Schedule>(Schedules1D());
    for (Schedule& s : Schedules2D()) all->push_back(std::move(s));
    return all;
  }();
  return *out;
}

struct Shape {
  std::string extents, mesh;
};

// The extents and meshes: odd extents on meshes of 2, 3, 2x2 and 2x3 ranks, and small ones
// where a rank's block is empty (5 over 4: 2, 2, 1, 0; 3 over 2x2 = 4 parts: 1, 1, 1, 0).
std::vector<Shape> Shapes() {
  std::vector<Shape> out;
  for (const char* e : {"m=7,n=5,k=3", "m=13,n=11,k=9"}) {
    for (const char* mesh : {"x=2", "x=3", "x=2,y=2", "x=2,y=3"}) out.push_back({e, mesh});
  }
  out.push_back({"m=5,n=5,k=5", "x=4"});
  return out;
}

// The communication patterns of `p`'s transfers and reductions, in program order.
std::vector<std::string> Patterns(const codegen::Program& p) {
  std::vector<std::string> out;
  std::function<void(const codegen::StmtPtr&)> walk = [&](const codegen::StmtPtr& s) {
    if (const auto* b = std::get_if<codegen::Block>(&s->node)) {
      for (const codegen::StmtPtr& c : b->body) walk(c);
    } else if (const auto* f = std::get_if<codegen::For>(&s->node)) {
      walk(f->body);
    } else if (const auto* t = std::get_if<codegen::Transfer>(&s->node)) {
      out.push_back(t->tensor + " " + t->pattern.Name());
    } else if (const auto* r = std::get_if<codegen::Reduce>(&s->node)) {
      out.push_back(r->tensor + " " + r->pattern.Name());
    }
  };
  if (p.body != nullptr) walk(p.body);
  return out;
}

// Whether some rank's shard of some tensor lies wholly past its extent (an empty block).
bool HasEmptyBlock(const codegen::Program& p) {
  bool empty = false;
  std::vector<int64_t> coords(p.axis_sizes.size(), 0);
  std::function<void(size_t)> each = [&](size_t a) {
    if (a == coords.size()) {
      for (const codegen::TensorInfo& t : p.tensors) {
        const std::vector<int64_t> start = codegen::ShardStartAt(p, t, coords);
        for (size_t d = 0; d < start.size(); ++d) empty = empty || start[d] >= t.shape[d];
      }
      return;
    }
    for (coords[a] = 0; coords[a] < p.axis_sizes[a]; ++coords[a]) each(a + 1);
  };
  each(0);
  return empty;
}

// Whether a shard of some tensor is not all data on some rank (its block short or empty, or
// its storage longer than the extent).
bool AnyPadding(const codegen::Program& p) {
  bool padded = false;
  std::vector<int64_t> coords(p.axis_sizes.size(), 0);
  std::function<void(size_t)> each = [&](size_t a) {
    if (a == coords.size()) {
      for (const codegen::TensorInfo& t : p.tensors) {
        const std::vector<int64_t> start = codegen::ShardStartAt(p, t, coords);
        for (size_t d = 0; d < start.size(); ++d)
          padded = padded || start[d] + t.local_shape[d] > t.shape[d];
      }
      return;
    }
    for (coords[a] = 0; coords[a] < p.axis_sizes[a]; ++coords[a]) each(a + 1);
  };
  each(0);
  return padded;
}

struct Outcome {
  bool legal = false;
  std::string reason;  // the first rejection's code, when illegal
  absl::StatusOr<codegen::Program> program = absl::UnknownError("not lowered");
};

Outcome JudgeAndLower(const std::string& expr, const Shape& shape, const Schedule& s,
                      const std::string& dtype) {
  Outcome o;
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(expr, shape.extents, dtype);
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(shape.mesh);
  EXPECT_TRUE(p.ok() && m.ok()) << p.status() << " " << m.status();
  if (!p.ok() || !m.ok()) return o;
  p->result_on_layer = s.result_on_layer;
  const absl::Status given = ir::SetLayouts(s.layouts, &*p);
  EXPECT_TRUE(given.ok()) << given;
  if (!given.ok()) return o;
  absl::StatusOr<ir::Computation> base = ir::Computation::Create(*p, *m);
  EXPECT_TRUE(base.ok()) << base.status();
  if (!base.ok()) return o;
  const std::string px = shape.mesh.substr(2, 1);
  const std::string qy = shape.mesh.size() > 4 ? shape.mesh.substr(6, 1) : "1";
  const std::string text = absl::StrReplaceAll(s.trace, {{"$P", px}, {"$Q", qy}});
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(text);
  EXPECT_TRUE(t.ok()) << t.status() << "\n" << text;
  if (!t.ok()) return o;
  absl::StatusOr<ir::Verdict> v = ir::Judge(*base, *t);
  EXPECT_TRUE(v.ok()) << v.status() << "\n" << text;
  if (!v.ok()) return o;
  o.legal = v->legal;
  if (!v->legal) {
    o.reason = v->reasons[0].code;
    return o;
  }
  o.program = codegen::Lower(v->computation);
  return o;
}

// One legal schedule, lowered.
struct Lowered {
  std::string what;  // "schedule | expr | extents | mesh | dtype", for messages
  std::string expr, extents;
  const Schedule* schedule;
  codegen::Program program;
};

// Every (statement, shape, schedule, dtype) whose schedule is legal, lowered; a lowering
// that fails is a test failure. `skipped` counts the illegal ones by their first reason.
std::vector<Lowered> LowerAll(std::map<std::string, int>* skipped) {
  std::vector<Lowered> out;
  for (const char* expr : {kAccumulate, kAssign}) {
    for (const Shape& shape : Shapes()) {
      const int dims = shape.mesh.find(',') == std::string::npos ? 1 : 2;
      for (const Schedule& s : Schedules()) {
        if (s.mesh_dims != dims) continue;
        for (const char* dtype : {"f64", "f32"}) {
          const std::string what = absl::StrCat(s.name, " | ", expr, " | ", shape.extents, " | ",
                                                shape.mesh, " | ", dtype);
          Outcome o = JudgeAndLower(expr, shape, s, dtype);
          if (!o.legal) {
            ++(*skipped)[o.reason.empty() ? "error" : o.reason];
            break;  // the same verdict in the other dtype
          }
          EXPECT_TRUE(o.program.ok()) << what << ": " << o.program.status();
          if (!o.program.ok()) continue;
          out.push_back({what, expr, shape.extents, &s, *std::move(o.program)});
        }
      }
    }
  }
  return out;
}

ProblemSpec Stated(const Lowered& l) { return ProblemSpecOf(*ir::ParseProblem(l.expr, l.extents)); }

TEST(RaggedTest, EveryLegalScheduleLowersAndVerifiesOnTheSimulator) {
  std::map<std::string, int> skipped;  // by reason
  const std::vector<Lowered> all = LowerAll(&skipped);
  std::set<std::string> patterns;  // seen in verified runs
  int verified = 0, clipped = 0, empty = 0, padded = 0, replicated = 0, given = 0;
  for (const Lowered& l : all) {
    const codegen::Program& p = l.program;
    SimOptions options;
    options.warmup = 1;
    options.reps = 1;
    options.timeout_s = 20;
    const RunStats r = Simulate(Stated(l), p, options);
    EXPECT_TRUE(r.verified) << l.what << ": " << r.error << "\n" << codegen::Dump(p);
    if (!r.verified) continue;
    ++verified;
    for (const std::string& pattern : Patterns(p)) patterns.insert(pattern.substr(2));
    clipped += !codegen::KernelCall(p)->start.empty();
    empty += HasEmptyBlock(p);
    padded += AnyPadding(p);
    for (const codegen::TensorInfo& t : p.tensors) {
      replicated += !t.is_output && !codegen::ReplicatedAxes(p, t).empty();
      given += codegen::Redistributed(p, t);
    }
  }
  std::vector<std::string> skips;
  for (const auto& [reason, n] : skipped) skips.push_back(absl::StrCat(reason, ": ", n));
  std::cout << "verified " << verified << " of " << all.size() << " runs (" << clipped
            << " with clipped kernel calls, " << empty << " with an empty block, " << padded
            << " with padding, " << replicated << " replicated inputs, " << given
            << " redistributed tensors); skipped as illegal: " << absl::StrJoin(skips, ", ")
            << "; patterns: " << absl::StrJoin(patterns, ", ") << "\n";
  EXPECT_EQ(verified, static_cast<int>(all.size()));
  EXPECT_GT(verified, 300);
  EXPECT_GT(clipped, 0);
  EXPECT_GT(empty, 0);
  EXPECT_GT(padded, 0);
  EXPECT_GT(replicated, 0);
  EXPECT_GT(given, 0);
  // Illegal ones are skipped, not errors (a malformed trace would be "error").
  EXPECT_EQ(skipped.count("error"), 0u);
  for (const char* want : {"Broadcast", "AllGather", "Shift", "ReduceScatter", "AllReduce",
                           "Reduce", "RingReduce", "AllToAll"})
    EXPECT_EQ(patterns.count(want), 1u) << want << " was not covered";
}

// The oracle still sees a wrong element where shards are ragged (the fault lands on an
// element, not on padding), and a run whose copies of a replicated input are not made.
TEST(RaggedTest, AWrongElementIsReported) {
  std::map<std::string, int> skipped;
  int checked = 0;
  for (const Lowered& l : LowerAll(&skipped)) {
    if (l.what.find("| f64") == std::string::npos || !AnyPadding(l.program)) continue;
    SimOptions options;
    options.inject_fault = "wrong";
    const RunStats r = Simulate(Stated(l), l.program, options);
    EXPECT_FALSE(r.verified) << l.what;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

constexpr uint64_t kSeed = 7;

// One rank of a bound run (BoundProgram on arrays of the caller's): every shard at its
// local shape, data from the fill formula and padding NaN (so that reading any padding as
// data would show), the output's data garbage for '='. Runs twice; after each run checks
// the output elements this rank holds against the reference; `held` gets them (global
// index, value) after the second.
template <typename T>
std::string BoundRank(const ProblemSpec& problem, const codegen::Program& p,
                      std::unique_ptr<Comm> comm, std::vector<std::pair<int64_t, double>>* held) {
  const Coords coords = comm->CoordsOf(comm->rank());
  absl::StatusOr<std::unique_ptr<BoundProgram>> bp = BoundProgram::Create(p, std::move(comm));
  if (!bp.ok()) return std::string(bp.status().message());
  std::vector<std::vector<T>> data(p.tensors.size());
  std::vector<void*> ptrs;
  size_t out = 0;
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    EXPECT_EQ((*bp)->ShardExtents(t), p.tensors[t].local_shape);
    data[t].resize(static_cast<size_t>(std::max<int64_t>(1, Elements(p.tensors[t].local_shape))));
    ptrs.push_back(data[t].data());
    if (p.tensors[t].is_output) out = t;
  }
  const codegen::TensorInfo& o = p.tensors[out];
  const std::vector<int64_t> ostart = (*bp)->ShardStart(out);
  const auto global = [&](int64_t i) { return SlotGlobal(i, o.local_shape, ostart, o.shape); };
  for (int run = 0; run < 2; ++run) {
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      const codegen::TensorInfo& info = p.tensors[t];
      const std::vector<int64_t> start = (*bp)->ShardStart(t);
      for (size_t i = 0; i < data[t].size(); ++i) {
        const int64_t g = SlotGlobal(static_cast<int64_t>(i), info.local_shape, start, info.shape);
        data[t][i] = g < 0 ? std::numeric_limits<T>::quiet_NaN()
                     : info.is_output && !p.accumulate
                         ? T(-12345)
                         : static_cast<T>(ElementValue(kSeed, info.name, g));
      }
    }
    const absl::Status ran = (*bp)->Run(ptrs);
    if (!ran.ok()) return std::string(ran.message());
    if (!(*bp)->HoldsResult(out)) continue;
    const std::vector<T>& values = data[out];
    const HeldOutput h{Elements(o.local_shape), global,
                       [&values](int64_t i) { return static_cast<double>(values[i]); }};
    const std::string bad =
        CheckHeldValues(problem, kSeed, h, PrecisionOf(static_cast<int>(sizeof(T))),
                        RankName(p.axis_names, coords));
    if (!bad.empty()) return absl::StrCat("bound run ", run + 1, ": ", bad);
    if (run == 1) {
      for (int64_t i = 0; i < h.slots; ++i) {
        if (global(i) >= 0) held->emplace_back(global(i), values[i]);
      }
    }
  }
  return "";
}

// Runs `p` bound on every rank of a simulated mesh (BoundRank), then checks that every
// output element is held and its copies agree. "" or the first failure.
std::string CheckBound(const ProblemSpec& problem, const codegen::Program& p) {
  const int ranks = static_cast<int>(p.Ranks());
  std::vector<std::vector<std::pair<int64_t, double>>> held(ranks);
  {
    SimWorld world(p.axis_sizes, /*timeout_s=*/20);
    std::vector<std::string> errors(ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          errors[r] = p.dtype_bytes == 8 ? BoundRank<double>(problem, p, world.CommFor(r), &held[r])
                                         : BoundRank<float>(problem, p, world.CommFor(r), &held[r]);
        } catch (const SimAborted&) {
        }
        if (!errors[r].empty()) world.Fail(errors[r]);
      });
    }
    for (std::thread& t : threads) t.join();
    if (!world.error().empty()) return world.error();
  }
  SimWorld world(p.axis_sizes, /*timeout_s=*/20);
  std::vector<std::string> coverage(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      const HeldOutput h{static_cast<int64_t>(held[r].size()),
                         [&, r](int64_t i) { return held[r][i].first; },
                         [&, r](int64_t i) { return held[r][i].second; }};
      try {
        coverage[r] =
            CheckCoverage(problem, kSeed, h, PrecisionOf(p.dtype_bytes), *world.CommFor(r));
      } catch (const SimAborted&) {
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (!world.error().empty()) return world.error();
  return coverage[0];
}

// The bound runtime (runtime/executor.h: BoundProgram) on the caller's local_shape-sized
// shards whose padding is NaN: no padding is read as data, every element is right.
TEST(RaggedTest, BoundRunsReadNoPadding) {
  std::map<std::string, int> skipped;
  int checked = 0;
  for (const Lowered& l : LowerAll(&skipped)) {
    if (!AnyPadding(l.program)) continue;
    EXPECT_EQ(CheckBound(Stated(l), l.program), "") << l.what;
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

}  // namespace
}  // namespace meshtune::runtime
