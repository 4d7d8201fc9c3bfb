#include "meshtune/comm_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/explain.h"
#include "engine/requests.h"
#include "meshtune/broadcast.h"
#include "runtime/memory_fit.h"
#include "runtime/mpi_executor.h"
#include "runtime/run_result.h"

namespace meshtune {
namespace {

enum Command : int { kDone = 0, kRun = 1 };

// How many ranks of `comm` share the calling rank's node. Collective.
int RanksOnThisNode(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

// Runs the trace on `mesh` on the first mesh-size ranks of `comm` (every rank calls it);
// the result is the same on every rank that ran, and rank 0 always runs.
runtime::RunStats RunHere(const v1::Problem& problem, const std::string& mesh_axes,
                          const std::string& trace_text, MPI_Comm comm,
                          const runtime::ExecOptions& options) {
  runtime::RunStats stats;
  v1::Mesh mesh;
  mesh.set_axes(mesh_axes);
  v1::Trace trace;
  trace.set_text(trace_text);
  absl::StatusOr<codegen::Program> program = engine::LowerTrace(problem, mesh, trace);
  absl::StatusOr<ir::Problem> stated = engine::ProblemOf(problem);
  if (program.ok() && !stated.ok()) program = stated.status();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  // Lowering is deterministic: every rank fails or none does.
  if (!program.ok()) {
    stats.error = std::string(program.status().message());
    return stats;
  }
  const int64_t ranks = program->Ranks();
  if (ranks > size) {
    stats.error = absl::StrCat("the mesh ", mesh_axes, " has ", ranks,
                               " ranks but the communicator has ", size);
    return stats;
  }
  MPI_Comm active = MPI_COMM_NULL;
  MPI_Comm_split(comm, rank < ranks ? 0 : MPI_UNDEFINED, rank, &active);
  if (active == MPI_COMM_NULL) return stats;
  stats = runtime::Execute(runtime::ProblemSpecOf(*stated), *program, active, options);
  MPI_Comm_free(&active);
  return stats;
}

}  // namespace

CommRunner::CommRunner(MPI_Comm comm, v1::Problem problem, runtime::ExecOptions options)
    : comm_(comm), problem_(std::move(problem)), options_(std::move(options)) {
  node_ranks_ = RanksOnThisNode(comm_);  // ServeCandidates calls it too
}

CommRunner::~CommRunner() { Finish(); }

search::CandidateRun CommRunner::Run(const search::MeasureInput& input) {
  search::CandidateRun out;
  // As the MPI runner: a candidate whose ranks cannot hold their data is not started (each
  // rank would abort on std::bad_alloc, and the application with it).
  runtime::RunSpec spec;
  spec.expr = problem_.expr();
  spec.extents = problem_.extents();
  spec.dtype = problem_.dtype();
  spec.mesh = input.mesh->ToString();
  spec.trace = input.trace;
  spec.ranks = input.mesh->Ranks();
  runtime::LaunchOptions placement;  // all ranks on this machine, unless they span nodes
  int size = 0;
  MPI_Comm_size(comm_, &size);
  if (node_ranks_ < size) placement.hostfile = "(the application's placement)";
  if (absl::Status fits = runtime::CheckRunFitsMemory(spec, placement); !fits.ok()) {
    out.error = absl::StrCat("not run: ", fits.message());
    return out;
  }
  int command = kRun;
  MPI_Bcast(&command, 1, MPI_INT, 0, comm_);
  std::string trace = input.trace, mesh = input.mesh->ToString();
  BroadcastString(&trace, comm_);
  BroadcastString(&mesh, comm_);
  const runtime::RunStats stats = RunHere(problem_, mesh, trace, comm_, options_);
  out.repetitions = stats.seconds;
  if (!stats.error.empty()) {
    out.error = stats.error;
    return out;
  }
  out.verified = stats.verified;
  if (!stats.verified) {
    out.error = "the output does not match the reference";
    return out;
  }
  if (!stats.seconds.empty()) out.seconds = runtime::RunResultOf(stats).median_s();
  return out;
}

void CommRunner::Finish() {
  if (finished_) return;
  finished_ = true;
  int command = kDone;
  MPI_Bcast(&command, 1, MPI_INT, 0, comm_);
}

void ServeCandidates(MPI_Comm comm, const v1::Problem& problem,
                     const runtime::ExecOptions& options) {
  RanksOnThisNode(comm);  // the collective CommRunner's constructor makes
  while (true) {
    int command = kDone;
    MPI_Bcast(&command, 1, MPI_INT, 0, comm);
    if (command != kRun) return;
    std::string trace, mesh;
    BroadcastString(&trace, comm);
    BroadcastString(&mesh, comm);
    RunHere(problem, mesh, trace, comm, options);
  }
}

}  // namespace meshtune
