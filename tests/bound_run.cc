#include "tests/bound_run.h"

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/box.h"
#include "runtime/executor.h"
#include "runtime/fill.h"
#include "runtime/oracle.h"
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
    if (info.local_shape.empty()) {
      v[0] = static_cast<T>(runtime::ElementValue(kSeed, info.name, 0));
      return;
    }
    // Padding (past the tensor's shape, where blocks do not divide it) is NaN: a program
    // that read it as data would show it.
    for (int64_t slot = 0; slot < static_cast<int64_t>(v.size()); ++slot) {
      const int64_t g = runtime::SlotGlobal(slot, info.local_shape, start, info.shape);
      v[slot] = g < 0 ? static_cast<T>(std::nan(""))
                      : static_cast<T>(runtime::ElementValue(kSeed, info.name, g));
    }
  }
};

// Runs `p` twice on one rank's shards and checks the output it holds after each run
// against the problem's reference; *held gets what it holds after the second run.
template <typename T>
std::string RunRank(const runtime::ProblemSpec& problem, const codegen::Program& p,
                    std::unique_ptr<runtime::Comm> comm, std::vector<double>* held_values,
                    std::vector<int64_t>* held_global) {
  const runtime::Coords coords = comm->CoordsOf(comm->rank());
  absl::StatusOr<std::unique_ptr<runtime::BoundProgram>> bp =
      runtime::BoundProgram::Create(p, std::move(comm));
  if (!bp.ok()) return std::string(bp.status().message());
  Shards<T> s;
  std::vector<void*> ptrs;
  size_t out = 0;
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const codegen::TensorInfo& info = p.tensors[t];
    int64_t n = 1;
    for (int64_t e : info.local_shape) n *= e;
    s.data.emplace_back(static_cast<size_t>(std::max<int64_t>(n, 1)), T(0));
    ptrs.push_back(s.data.back().data());
    if (info.is_output) out = t;
  }
  const codegen::TensorInfo& info = p.tensors[out];
  const std::vector<int64_t> start = (*bp)->ShardStart(out);
  // The shard's slots by global index, as BoundProgram says the shard lies (-1: padding).
  const auto global = [&](int64_t i) {  // -1 for padding
    return runtime::SlotGlobal(i, info.local_shape, start, info.shape);
  };
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
    const std::vector<T>& o = s.data[out];
    runtime::HeldOutput held{runtime::Elements(info.local_shape), global,
                             [&o](int64_t i) { return static_cast<double>(o[i]); }};
    const std::string bad =
        runtime::CheckHeldValues(problem, kSeed, held, sizeof(T) == 4 ? 2e-4 : 1e-10,
                                 runtime::RankName(p.axis_names, coords));
    if (!bad.empty()) return absl::StrCat("bound run ", run + 1, ": ", bad);
    if (run == 1) {
      for (int64_t i = 0; i < held.slots; ++i) {
        held_global->push_back(global(i));
        held_values->push_back(o[i]);
      }
    }
  }
  return "";
}

// Runs `program` bound on every rank (RunRank); `values` and `globals` get, per rank, what
// it holds of the output after the second run. "" or the first failure.
std::string RunEveryRank(const runtime::ProblemSpec& stated, const codegen::Program& program,
                         std::vector<std::vector<double>>* values_out,
                         std::vector<std::vector<int64_t>>* globals_out) {
  const int ranks = static_cast<int>(program.Ranks());
  std::vector<std::vector<double>>& values = *values_out;
  std::vector<std::vector<int64_t>>& globals = *globals_out;
  values.assign(ranks, {});
  globals.assign(ranks, {});
  {
    runtime::SimWorld world(program.axis_sizes, /*timeout_s=*/20);
    std::vector<std::string> errors(ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          errors[r] =
              program.dtype_bytes == 8
                  ? RunRank<double>(stated, program, world.CommFor(r), &values[r], &globals[r])
                  : RunRank<float>(stated, program, world.CommFor(r), &values[r], &globals[r]);
        } catch (const runtime::SimAborted&) {
        }
        if (!errors[r].empty()) world.Fail(errors[r]);
      });
    }
    for (std::thread& t : threads) t.join();
    if (!world.error().empty()) return world.error();
  }
  return "";
}

}  // namespace

std::string CheckBoundRunPerRank(const ir::Problem& problem, const codegen::Program& program) {
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int64_t>> globals;
  return RunEveryRank(runtime::ProblemSpecOf(problem), program, &values, &globals);
}

std::string CheckBoundRun(const ir::Problem& problem, const codegen::Program& program) {
  const runtime::ProblemSpec stated = runtime::ProblemSpecOf(problem);
  const int ranks = static_cast<int>(program.Ranks());
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int64_t>> globals;
  if (std::string error = RunEveryRank(stated, program, &values, &globals); !error.empty())
    return error;
  // Every output element held after the runs, and its copies equal (a second mesh of the
  // same shape, for the collective check alone).
  runtime::SimWorld world(program.axis_sizes, /*timeout_s=*/20);
  std::vector<std::string> coverage(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      const runtime::HeldOutput held{static_cast<int64_t>(values[r].size()),
                                     [&, r](int64_t i) { return globals[r][i]; },
                                     [&, r](int64_t i) { return values[r][i]; }};
      try {
        coverage[r] = runtime::CheckCoverage(stated, held, program.dtype_bytes == 4 ? 2e-4 : 1e-10,
                                             *world.CommFor(r));
      } catch (const runtime::SimAborted&) {
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (!world.error().empty()) return world.error();
  return coverage[0].empty() ? "" : "bound run: " + coverage[0];
}

}  // namespace meshtune::testing
