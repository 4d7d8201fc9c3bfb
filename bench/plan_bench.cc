// A plan made from wisdom (meshtune/plan.h) against the callable kernel `meshtune codegen`
// emits for the same record and the executor running the same trace, in one mpirun job:
// C[m,n] += A[m,k] * B[k,n], 2048 cubed, f32, on 4 ranks by default (the record and the
// kernel are made at build time, //bench:plan_bench_inputs). Prints the medians over
// --reps of the slowest rank's time, the ratios to the plan's, and the median time of
// Plan::Create from the wisdom file. With --plan-only 1, only the plan's Execute is timed
// (what bench/python_vs_cpp.sh compares meshtune.Plan.execute from Python with).
//
//   bazel build -c opt //bench:plan_bench
//   OPENBLAS_NUM_THREADS=1 mpirun -n 4 --oversubscribe --bind-to none
//       bazel-bin/bench/plan_bench --wisdom bazel-bin/bench/plan_bench_wisdom.jsonl --reps 7
//   (one command line)
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/plan_bench_kernel.h"
#include "bench/psgemm.h"
#include "engine/prepare.h"
#include "meshtune/plan.h"
#include "runtime/mpi_executor.h"

namespace {

constexpr char kExpr[] = "C[m,n] += A[m,k] * B[k,n]";
constexpr char kExtents[] = "m=2048,n=2048,k=2048";

// Seconds of `fn` on the slowest rank, after a barrier.
template <typename F>
double Timed(F fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  double mine = MPI_Wtime() - t0, worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string wisdom;
  int reps = 5;
  bool plan_only = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--wisdom")) wisdom = argv[i + 1];
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--plan-only")) plan_only = std::atoi(argv[i + 1]) != 0;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  meshtune::PlanOptions options;
  options.wisdom_file = wisdom;
  std::vector<double> create;
  std::unique_ptr<meshtune::Plan> plan;
  for (int i = 0; i < 10; ++i) {
    create.push_back(Timed([&] {
      absl::StatusOr<std::unique_ptr<meshtune::Plan>> p =
          meshtune::Plan::Create(kExpr, kExtents, MPI_COMM_WORLD, options);
      if (!p.ok()) {
        if (rank == 0)
          std::fprintf(stderr, "plan_bench: %s\n", std::string(p.status().message()).c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      plan = *std::move(p);
    }));
  }
  std::vector<std::vector<float>> shards;
  std::vector<void*> pointers;
  for (const std::string& t : plan->tensors()) {
    const meshtune::ShardLayout l = *plan->Shard(t);
    size_t n = 1;
    for (int64_t e : l.extents) n *= static_cast<size_t>(e);
    shards.emplace_back(n, 0.25f);
    pointers.push_back(shards.back().data());
  }
  // The kernel takes the tensors in the plan's order (both follow the lowered program).
  auto kernel = [&] {
    bench_kernel(static_cast<float*>(pointers[0]), static_cast<const float*>(pointers[1]),
                 static_cast<const float*>(pointers[2]), MPI_COMM_WORLD);
  };
  std::vector<double> planned, emitted;
  (void)plan->Execute(pointers);  // warm-up
  if (plan_only) {
    for (int r = 0; r < reps; ++r) planned.push_back(Timed([&] { (void)plan->Execute(pointers); }));
    if (rank == 0) {
      std::printf("C++ Plan::Execute, mesh %s: median %.4f s of %d\n", plan->mesh().c_str(),
                  meshtune::bench::Median(planned), reps);
    }
    plan.reset();
    MPI_Finalize();
    return 0;
  }
  kernel();
  for (int r = 0; r < reps; ++r) {  // alternating, so that drift hits both alike
    planned.push_back(Timed([&] { (void)plan->Execute(pointers); }));
    emitted.push_back(Timed(kernel));
  }
  meshtune::v1::Problem problem;
  problem.set_expr(kExpr);
  problem.set_extents(kExtents);
  problem.set_dtype("f32");
  meshtune::v1::Mesh mesh;
  mesh.set_axes(plan->mesh());
  meshtune::v1::Trace trace;
  trace.set_text(plan->trace());
  const absl::StatusOr<meshtune::codegen::Program> program =
      meshtune::engine::LowerTrace(problem, mesh, trace);
  meshtune::runtime::ExecOptions exec;
  exec.reps = reps;
  const meshtune::runtime::RunStats executed = meshtune::runtime::Execute(
      meshtune::runtime::ProblemSpecOf(*meshtune::ir::ParseProblem(kExpr, kExtents)), *program,
      MPI_COMM_WORLD, exec);
  if (rank == 0) {
    const double p = meshtune::bench::Median(planned), e = meshtune::bench::Median(emitted),
                 x = meshtune::bench::Median(executed.seconds);
    std::printf("%s  %s  f32  mesh %s  medians of %d\n", kExpr, kExtents, plan->mesh().c_str(),
                reps);
    std::printf("plan from wisdom, Execute   %.4f s\n", p);
    std::printf("emitted callable kernel     %.4f s  (plan / kernel %.3f)\n", e, p / e);
    std::printf("executor (verified %s)     %.4f s  (plan / executor %.3f)\n",
                executed.verified ? "yes" : "NO", x, p / x);
    std::printf("Plan::Create from the wisdom file: median %.2f ms of 10\n",
                1e3 * meshtune::bench::Median(create));
  }
  plan.reset();
  MPI_Finalize();
  return 0;
}
