#include "meshtune/comm_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "meshtune/broadcast.h"
#include "runtime/memory_fit.h"
#include "runtime/run_job.h"
#include "runtime/run_result.h"
#include "runtime/worker_job.h"

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

// Runs rank 0's job (a serialized meshtune.v1.WorkerJob: the statement, the validated
// Program or the library's grid, and the settings) on the first JobRanks ranks of `comm`
// (every rank calls it);
// the result is the same on every rank that ran, and rank 0 always runs. No rank judges
// or lowers.
runtime::RunStats RunHere(const std::string& job_bytes, MPI_Comm comm) {
  runtime::RunStats stats;
  v1::WorkerJob message;
  absl::StatusOr<runtime::WorkerJob> job =
      message.ParseFromString(job_bytes)
          ? runtime::FromProto(message)
          : absl::InvalidArgumentError("the candidate is not a meshtune.v1.WorkerJob");
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  // Every rank got the same bytes: every rank fails or none does.
  if (!job.ok()) {
    stats.error = std::string(job.status().message());
    return stats;
  }
  const int64_t ranks = runtime::JobRanks(*job);
  if (ranks > size) {
    stats.error = absl::StrCat(job->library ? "the library's grid" : "the mesh", " has ", ranks,
                               " ranks but the communicator has ", size);
    return stats;
  }
  MPI_Comm active = MPI_COMM_NULL;
  MPI_Comm_split(comm, rank < ranks ? 0 : MPI_UNDEFINED, rank, &active);
  if (active == MPI_COMM_NULL) return stats;
  stats = runtime::RunJob(*job, active);
  MPI_Comm_free(&active);
  return stats;
}

}  // namespace

CommRunner::CommRunner(MPI_Comm comm, runtime::ExecOptions options, bool library)
    : comm_(comm), options_(std::move(options)), library_(library) {
  node_ranks_ = RanksOnThisNode(comm_);  // ServeCandidates calls it too
}

CommRunner::~CommRunner() { Finish(); }

search::CandidateRun CommRunner::Run(const search::MeasureInput& input) {
  search::CandidateRun out;
  // As the MPI runner: a candidate whose ranks cannot hold their data is not started (each
  // rank would abort on std::bad_alloc, and the application with it).
  if (input.program == nullptr) {
    out.error = "not run: the candidate has no validated Program";
    return out;
  }
  runtime::LaunchOptions placement;  // all ranks on this machine, unless they span nodes
  int size = 0;
  MPI_Comm_size(comm_, &size);
  if (node_ranks_ < size) placement.hostfile = "(the application's placement)";
  if (absl::Status fits =
          runtime::CheckRunFitsMemory(input.footprint, input.mesh->Ranks(), placement);
      !fits.ok()) {
    out.error = absl::StrCat("not run: ", fits.message());
    return out;
  }
  return Serve({runtime::ProblemSpecOf(*input.problem), *input.program, options_});
}

search::CandidateRun CommRunner::RunLibrary(const search::LibraryInput& input) {
  runtime::WorkerJob job{runtime::ProblemSpecOf(*input.problem), {}, options_, input.config};
  job.library_dtype_bytes = input.problem->dtype == ir::DType::kF64 ? 8 : 4;
  return Serve(job);
}

search::CandidateRun CommRunner::Serve(const runtime::WorkerJob& job) {
  search::CandidateRun out;
  int command = kRun;
  MPI_Bcast(&command, 1, MPI_INT, 0, comm_);
  std::string bytes = runtime::ToProto(job).SerializeAsString();
  BroadcastString(&bytes, comm_);
  const runtime::RunStats stats = RunHere(bytes, comm_);
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
  out.bytes_sent_max = stats.bytes_sent_max;
  search::SetSamples(runtime::SamplesOf(stats.seconds, stats.batch), stats.batch, &out);
  return out;
}

void CommRunner::Finish() {
  if (finished_) return;
  finished_ = true;
  int command = kDone;
  MPI_Bcast(&command, 1, MPI_INT, 0, comm_);
}

void ServeCandidates(MPI_Comm comm) {
  RanksOnThisNode(comm);  // the collective CommRunner's constructor makes
  while (true) {
    int command = kDone;
    MPI_Bcast(&command, 1, MPI_INT, 0, comm);
    if (command != kRun) return;
    std::string job;
    BroadcastString(&job, comm);
    RunHere(job, comm);
  }
}

}  // namespace meshtune
