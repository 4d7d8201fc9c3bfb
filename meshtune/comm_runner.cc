#include "meshtune/comm_runner.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/explain.h"
#include "meshtune/broadcast.h"
#include "runtime/mpi_executor.h"

namespace meshtune {
namespace {

enum Command : int { kDone = 0, kRun = 1 };

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
  stats = runtime::Execute(*program, active, options);
  MPI_Comm_free(&active);
  return stats;
}

}  // namespace

CommRunner::CommRunner(MPI_Comm comm, v1::Problem problem, runtime::ExecOptions options)
    : comm_(comm), problem_(std::move(problem)), options_(std::move(options)) {}

CommRunner::~CommRunner() { Finish(); }

search::CandidateRun CommRunner::Run(const search::MeasureInput& input) {
  int command = kRun;
  MPI_Bcast(&command, 1, MPI_INT, 0, comm_);
  std::string trace = input.trace, mesh = input.mesh->ToString();
  BroadcastString(&trace, comm_);
  BroadcastString(&mesh, comm_);
  const runtime::RunStats stats = RunHere(problem_, mesh, trace, comm_, options_);
  search::CandidateRun out;
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
  std::vector<double> sorted = stats.seconds;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) out.seconds = sorted[sorted.size() / 2];  // the upper median, as runs
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
