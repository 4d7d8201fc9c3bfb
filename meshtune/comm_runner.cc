#include "meshtune/comm_runner.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "meshtune/broadcast.h"
#include "runtime/launch/memory_fit.h"
#include "runtime/launch/rounds.h"
#include "runtime/launch/run_job.h"
#include "runtime/launch/run_result.h"
#include "runtime/launch/worker_job.h"

namespace meshtune {
namespace {

enum Command : int { kDone = 0, kRun = 1 };

// Rounds at most of candidates side by side.
constexpr int kMaxRounds = 30;

// How many ranks of `comm` share the calling rank's node. Collective.
int RanksOnThisNode(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

// Runs rank 0's jobs (a serialized meshtune.v1.WorkerJobs: each the statement, the
// validated Program or the library's grid, and the settings; all of one rank count) on the
// first JobRanks ranks of `comm`, side by side in its rounds when there are several
// (runtime/launch/rounds.h; every rank calls it); the results are the same on every rank that ran,
// and rank 0 always runs. No rank judges or lowers.
std::vector<runtime::RunStats> RunSetHere(const std::string& set_bytes, MPI_Comm comm) {
  v1::WorkerJobs message;
  std::vector<runtime::WorkerJob> jobs;
  std::string error;
  if (!message.ParseFromString(set_bytes) || message.jobs().empty()) {
    error = "the candidate is not a meshtune.v1.WorkerJob";
  }
  for (const v1::WorkerJob& m : message.jobs()) {
    absl::StatusOr<runtime::WorkerJob> job = runtime::FromProto(m);
    if (!job.ok()) {
      error = std::string(job.status().message());
      break;
    }
    jobs.push_back(*std::move(job));
  }
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  std::vector<runtime::RunStats> out(std::max<size_t>(1, jobs.size()));
  // Every rank got the same bytes: every rank fails or none does.
  const int64_t ranks = jobs.empty() ? 0 : runtime::JobRanks(jobs[0]);
  for (const runtime::WorkerJob& job : jobs) {
    if (!error.empty()) break;
    if (runtime::JobRanks(job) > size) {
      error = absl::StrCat(job.library ? "the library's grid" : "the mesh", " has ",
                           runtime::JobRanks(job), " ranks but the communicator has ", size);
    } else if (runtime::JobRanks(job) != ranks) {
      error = "jobs side by side need one rank count";
    }
  }
  if (!error.empty()) {
    for (runtime::RunStats& s : out) s.error = error;
    return out;
  }
  MPI_Comm active = MPI_COMM_NULL;
  MPI_Comm_split(comm, rank < ranks ? 0 : MPI_UNDEFINED, rank, &active);
  if (active == MPI_COMM_NULL) return out;
  runtime::RoundsOptions rounds;
  rounds.min_rounds = std::max(1, message.min_rounds());
  rounds.max_rounds = std::max(rounds.min_rounds, message.max_rounds());
  rounds.budget_s = message.budget_s() > 0 ? message.budget_s() : 60;
  rounds.seed = message.order_seed();
  out = jobs.size() == 1 ? std::vector<runtime::RunStats>{runtime::RunJob(jobs[0], active)}
                         : runtime::RunJobsInRounds(jobs, rounds, active);
  MPI_Comm_free(&active);
  return out;
}

}  // namespace

CommRunner::CommRunner(MPI_Comm comm, runtime::ExecOptions options, bool library)
    : comm_(comm), options_(std::move(options)), library_(library) {
  node_ranks_ = RanksOnThisNode(comm_);  // ServeCandidates calls it too
}

CommRunner::~CommRunner() { Finish(); }

search::CandidateRun CommRunner::Run(const search::MeasureInput& input) {
  return RunSideBySide({{&input, nullptr, nullptr}}, 0)[0];
}

search::CandidateRun CommRunner::RunLibrary(const search::LibraryInput& input) {
  return RunSideBySide({{nullptr, &input, nullptr}}, 0)[0];
}

std::optional<std::string> CommRunner::Unfit(const ir::Footprint& footprint, int64_t ranks) const {
  runtime::LaunchOptions placement;  // all ranks on this machine, unless they span nodes
  int size = 0;
  MPI_Comm_size(comm_, &size);
  if (node_ranks_ < size) placement.hostfile = "(the application's placement)";
  if (absl::Status fits = runtime::CheckRunFitsMemory(footprint, ranks, placement); !fits.ok()) {
    return absl::StrCat("not run: ", fits.message());
  }
  return std::nullopt;
}

std::optional<runtime::WorkerJob> CommRunner::JobOf(const search::MeasureItem& item,
                                                    search::CandidateRun* refused) const {
  if (item.schedule != nullptr) {
    const search::MeasureInput& in = *item.schedule;
    if (in.program == nullptr) {
      refused->error = "not run: the candidate has no validated Program";
      return std::nullopt;
    }
    if (std::optional<std::string> unfit = Unfit(in.footprint, in.mesh->Ranks())) {
      refused->error = unfit;
      return std::nullopt;
    }
    return runtime::WorkerJob{runtime::ProblemSpecOf(*in.problem), *in.program, options_};
  }
  if (item.library != nullptr) {
    std::vector<runtime::ProblemSpec> statements = search::LibraryStatements(*item.library);
    runtime::WorkerJob job{statements[0], {}, options_, item.library->config};
    for (size_t s = 1; s < statements.size(); ++s) job.later.push_back({statements[s], {}});
    job.library_dtype_bytes = search::LibraryDtypeBytes(*item.library);
    return job;
  }
  if (item.program != nullptr) {
    const search::ProgramMeasureInput& in = *item.program;
    const ir::StatementProgram& program = *in.program;
    if (in.programs.empty() || in.programs.size() != program.statements.size()) {
      refused->error = "not run: the program needs a validated Program per statement";
      return std::nullopt;
    }
    if (std::optional<std::string> unfit = Unfit(in.footprint, in.mesh->Ranks())) {
      refused->error = unfit;
      return std::nullopt;
    }
    runtime::WorkerJob job{runtime::ProblemSpecOf(program.statements[0]), in.programs[0], options_};
    for (size_t s = 1; s < in.programs.size(); ++s)
      job.later.push_back({runtime::ProblemSpecOf(program.statements[s]), in.programs[s]});
    return job;
  }
  refused->error = "not run: nothing to measure";
  return std::nullopt;
}

std::vector<search::CandidateRun> CommRunner::RunSideBySide(
    const std::vector<search::MeasureItem>& items, double budget_s) {
  std::vector<search::CandidateRun> out(items.size());
  std::map<int64_t, std::vector<size_t>> groups;  // by ranks: the items that can run
  std::vector<runtime::WorkerJob> jobs(items.size());
  ir::Footprint together;
  for (size_t i = 0; i < items.size(); ++i) {
    std::optional<runtime::WorkerJob> job = JobOf(items[i], &out[i]);
    if (!job) continue;
    const ir::Footprint* footprint = items[i].schedule != nullptr  ? &items[i].schedule->footprint
                                     : items[i].program != nullptr ? &items[i].program->footprint
                                                                   : nullptr;
    if (footprint != nullptr) {
      together.shard_bytes += footprint->shard_bytes;
      together.buffer_bytes += footprint->buffer_bytes;
    }
    jobs[i] = *std::move(job);
    groups[runtime::JobRanks(jobs[i])].push_back(i);
  }
  for (const auto& [ranks, group] : groups) {
    // Every candidate of the group held at once must fit, else one at a time.
    if (group.size() == 1 || Unfit(together, ranks)) {
      for (size_t i : group) out[i] = Serve({jobs[i]}, 0)[0];
      continue;
    }
    std::vector<runtime::WorkerJob> set;
    for (size_t i : group) set.push_back(jobs[i]);
    std::vector<search::CandidateRun> runs = Serve(set, budget_s);
    for (size_t g = 0; g < group.size(); ++g) out[group[g]] = std::move(runs[g]);
  }
  return out;
}

std::vector<search::CandidateRun> CommRunner::Serve(const std::vector<runtime::WorkerJob>& jobs,
                                                    double budget_s) {
  int command = kRun;
  MPI_Bcast(&command, 1, MPI_INT, 0, comm_);
  v1::WorkerJobs set;
  for (const runtime::WorkerJob& job : jobs) *set.add_jobs() = runtime::ToProto(job);
  set.set_min_rounds(std::max(1, options_.reps));
  set.set_max_rounds(std::max(options_.reps, kMaxRounds));
  set.set_budget_s(budget_s);
  set.set_order_seed(options_.seed);
  std::string bytes = set.SerializeAsString();
  BroadcastString(&bytes, comm_);
  std::vector<search::CandidateRun> out;
  for (const runtime::RunStats& stats : RunSetHere(bytes, comm_)) out.push_back(RunOf(stats));
  return out;
}

search::CandidateRun CommRunner::RunOf(const runtime::RunStats& stats) {
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
    std::string jobs;
    BroadcastString(&jobs, comm);
    RunSetHere(jobs, comm);
  }
}

}  // namespace meshtune
