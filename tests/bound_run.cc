#include "tests/bound_run.h"

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/box.h"
#include "runtime/executor.h"
#include "runtime/fill.h"
#include "runtime/reference.h"
#include "runtime/sim_comm.h"

namespace meshtune::testing {
namespace {

constexpr uint64_t kSeed = 7;

// One rank's shards, as an application would hold them.
template <typename T>
struct Shards {
  std::vector<std::vector<T>> data;

  // Fills shard t of `bp` with the hash values (the output too when `output`).
  void Fill(const codegen::Program& p, const runtime::BoundProgram& bp, size_t t) {
    const codegen::TensorInfo& info = p.tensors[t];
    const std::vector<int64_t> start = bp.ShardStart(t);
    std::vector<T>& v = data[t];
    size_t i = 0;
    if (info.local_shape.empty()) {
      v[0] = static_cast<T>(runtime::ElementValue(kSeed, info.name, 0));
      return;
    }
    runtime::ForEachPoint(info.local_shape, [&](const std::vector<int64_t>& l) {
      std::vector<int64_t> g(l.size());
      for (size_t d = 0; d < l.size(); ++d) g[d] = start[d] + l[d];
      v[i++] =
          static_cast<T>(runtime::ElementValue(kSeed, info.name, runtime::Linear(g, info.shape)));
    });
  }
};

template <typename T>
std::string RunRank(const codegen::Program& p, std::unique_ptr<runtime::Comm> comm) {
  const runtime::Coords coords = comm->CoordsOf(comm->rank());
  absl::StatusOr<std::unique_ptr<runtime::BoundProgram>> bp =
      runtime::BoundProgram::Create(p, std::move(comm));
  if (!bp.ok()) return std::string(bp.status().message());
  Shards<T> s;
  std::vector<void*> ptrs;
  size_t out = 0;
  std::vector<runtime::TensorSpec> specs;
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const codegen::TensorInfo& info = p.tensors[t];
    int64_t n = 1;
    for (int64_t e : info.local_shape) n *= e;
    s.data.emplace_back(static_cast<size_t>(std::max<int64_t>(n, 1)), T(0));
    ptrs.push_back(s.data.back().data());
    if (info.is_output) out = t;
    runtime::TensorSpec spec{info.name, info.dims, info.shape, info.local_shape, info.is_output};
    spec.block_start = [&bp, t](const runtime::Coords&) { return (*bp)->ShardStart(t); };
    specs.push_back(std::move(spec));
  }
  const codegen::Compute* compute = codegen::KernelCall(p);
  runtime::StatementSpec statement{compute->out.tensor, compute->out.dims, {}, compute->sum};
  for (const codegen::Operand& o : compute->in) statement.operands.emplace_back(o.tensor, o.dims);
  for (int run = 0; run < 2; ++run) {
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      if (!p.tensors[t].is_output || p.accumulate) s.Fill(p, **bp, t);
    }
    if (!p.accumulate) std::fill(s.data[out].begin(), s.data[out].end(), T(-12345));
    // Off the output's layer the shard is scratch: what it holds must not matter.
    const bool holds = (*bp)->HoldsResult(out);
    if (!holds) std::fill(s.data[out].begin(), s.data[out].end(), std::nan(""));
    const absl::Status ran = (*bp)->Run(ptrs);
    if (!ran.ok()) return std::string(ran.message());
    if (!holds) continue;
    runtime::ReferenceCheck check{&statement, &specs, &p.axis_names, coords, p.accumulate, kSeed};
    const std::vector<T>& o = s.data[out];
    const std::string bad = runtime::CheckOutputShard(check, [&o](int64_t i) { return o[i]; });
    if (!bad.empty()) return absl::StrCat("bound run ", run + 1, ": ", bad);
  }
  return "";
}

}  // namespace

std::string CheckBoundRun(const codegen::Program& program) {
  runtime::SimWorld world(program.axis_sizes, /*timeout_s=*/20);
  std::vector<std::string> errors(world.ranks());
  std::vector<std::thread> threads;
  for (int r = 0; r < world.ranks(); ++r) {
    threads.emplace_back([&, r] {
      try {
        errors[r] = program.dtype_bytes == 8 ? RunRank<double>(program, world.CommFor(r))
                                             : RunRank<float>(program, world.CommFor(r));
      } catch (const runtime::SimAborted&) {
      }
      if (!errors[r].empty()) world.Fail(errors[r]);
    });
  }
  for (std::thread& t : threads) t.join();
  return world.error();
}

}  // namespace meshtune::testing
