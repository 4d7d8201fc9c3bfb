// meshtune_worker: one rank of an MPI run of a schedule. mpirun starts P of these.
//
// Every rank parses the problem, mesh and trace, lowers the schedule itself (lowering is
// deterministic), runs the Program through the executor, and rank 0 prints one JSON line
// (meshtune.v1.RunResult in protobuf's JSON mapping). Failures are reported in that line,
// never by a crash of the worker; a worker dies with its launcher (PR_SET_PDEATHSIG).
#include <mpi.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "codegen/validate.h"
#include "ir/layout.h"
#include "ir/verdict.h"
#include "runtime/mpi_executor.h"
#include "runtime/run_result.h"

namespace {

struct Flags {
  std::string expr, extents, dtype = "f32", mesh, trace_file, inject_fault;
  std::vector<std::string> layouts;
  bool result_on_layer = false;
  int reps = 3, warmup = 1;
  uint64_t seed = 1;
};

// The problem as stated and the program lowered for it.
struct Prepared {
  meshtune::ir::Problem problem;
  meshtune::codegen::Program program;
};

absl::StatusOr<Prepared> Prepare(const Flags& f) {
  using namespace meshtune;
  absl::StatusOr<ir::Problem> p = ir::ParseProblem(f.expr, f.extents, f.dtype);
  if (!p.ok()) return p.status();
  if (absl::Status s = ir::SetLayouts(f.layouts, &*p); !s.ok()) return s;
  p->result_on_layer = f.result_on_layer;
  absl::StatusOr<ir::Mesh> m = ir::ParseMesh(f.mesh);
  if (!m.ok()) return m.status();
  absl::StatusOr<ir::Computation> c = ir::Computation::Create(*p, *m);
  if (!c.ok()) return c.status();
  std::ifstream in(f.trace_file);
  if (!in) return absl::InvalidArgumentError("cannot read trace file '" + f.trace_file + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  absl::StatusOr<ir::Trace> t = ir::ParseTrace(ss.str());
  if (!t.ok()) return t.status();
  absl::StatusOr<ir::Verdict> v = ir::Judge(*c, *t);
  if (!v.ok()) return v.status();
  if (!v->legal) {
    return absl::FailedPreconditionError("illegal schedule: [" + v->reasons[0].code + "] " +
                                         v->reasons[0].message);
  }
  // Validated here too: a worker runs only what translation validation proves.
  absl::StatusOr<codegen::Program> program = codegen::LowerValidated(v->computation);
  if (!program.ok()) return program.status();
  return Prepared{*std::move(p), *std::move(program)};
}

// Rank 0 prints the one result line: meshtune.v1.RunResult in protobuf's JSON mapping.
void Report(int rank, const meshtune::runtime::RunStats& m) {
  if (rank == 0) std::cout << meshtune::runtime::RunResultLine(m) << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Flags f;
  CLI::App app{"meshtune_worker: one rank of a schedule run"};
  app.add_option("--expr", f.expr)->required();
  app.add_option("--extents", f.extents)->required();
  app.add_option("--dtype", f.dtype);
  app.add_option("--mesh", f.mesh)->required();
  app.add_option("--trace", f.trace_file)->required();
  app.add_option("--layout", f.layouts, "TENSOR=SPEC: a tensor's given layout (repeatable)");
  app.add_flag("--result-on-layer", f.result_on_layer, "a copied output ends on one layer");
  app.add_option("--reps", f.reps);
  app.add_option("--warmup", f.warmup);
  app.add_option("--seed", f.seed);
  app.add_option("--inject-fault", f.inject_fault, "tests only: crash, hang or wrong");
  meshtune::runtime::RunStats result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    result.error = std::string("bad worker arguments: ") + e.what();
    Report(rank, result);
    MPI_Finalize();
    return 0;
  }
  absl::StatusOr<Prepared> prepared = Prepare(f);
  if (!prepared.ok()) {
    result.error = std::string(prepared.status().message());
    Report(rank, result);
    MPI_Finalize();
    return 0;
  }
  if (f.inject_fault == "crash" && rank == size - 1) std::abort();
  if (f.inject_fault == "hang" && rank == size - 1) {
    while (true) pause();
  }
  meshtune::runtime::ExecOptions options;
  options.reps = std::max(1, f.reps);
  options.warmup = std::max(0, f.warmup);
  options.seed = f.seed;
  options.inject_fault = f.inject_fault;
  Report(rank, meshtune::runtime::Execute(meshtune::runtime::ProblemSpecOf(prepared->problem),
                                          prepared->program, MPI_COMM_WORLD, options));
  MPI_Finalize();
  return 0;
}
