// The launcher without MPI: LaunchCommand and Launch run under a stand-in launcher
// (/bin/sh dropping "-n N", as srun or mpirun would start the command) with small shell
// commands and a shell-script worker. Covered: the arguments and environment a job gets,
// its output and exit status, the timeout and cancellation killing every process of the
// job (and a marked one outside its process group), the temporary job file removed
// however the job ends, how a worker's result line is read, and JobFailure's messages.
#include "runtime/launch/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/pipeline.h"
#include "codegen/program_proto.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "runtime/executor.h"
#include "runtime/launch/run_result.h"
#include "runtime/launch/worker_job.h"
#include "runtime/rank/rank.h"

namespace meshtune::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A launcher that runs its command once, dropping the "-n N" LaunchCommand puts first.
const std::vector<std::string> kFakeLauncher = {"/bin/sh", "-c", "shift 2; exec \"$@\"",
                                                "fake-launcher"};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The pids listed one per line in `path` (none when it does not exist).
std::vector<pid_t> ReadPids(const std::string& path) {
  std::vector<pid_t> pids;
  std::ifstream in(path);
  for (pid_t p; in >> p;) pids.push_back(p);
  return pids;
}

// True when process `pid` has ended: gone, or a zombie nobody has reaped yet. Waits up to
// 2 s for a killed process to be torn down.
bool ProcessEnded(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Field `n` (1-based, as in proc(5)) of /proc/<pid>/stat; -1 when unreadable.
int64_t StatField(pid_t pid, int n) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(paren + 2));  // field 3 onwards
  std::string field;
  for (int i = 3; i <= n; ++i) rest >> field;
  return rest ? std::stoll(field) : -1;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class LauncherTest : public ::testing::Test {
 protected:
  // scratch_: scripts and what they record; tmp_: $TMPDIR while the test runs (where Launch
  // puts its job file).
  void SetUp() override {
    const char* base = std::getenv("TEST_TMPDIR");
    scratch_ = MakeDir(base ? base : "/tmp");
    tmp_ = MakeDir(base ? base : "/tmp");
    if (const char* t = std::getenv("TMPDIR")) saved_tmpdir_ = t;
    setenv("TMPDIR", tmp_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_tmpdir_.empty()) {
      unsetenv("TMPDIR");
    } else {
      setenv("TMPDIR", saved_tmpdir_.c_str(), 1);
    }
    std::error_code ec;
    fs::remove_all(scratch_, ec);
    fs::remove_all(tmp_, ec);
  }

  static std::string MakeDir(const std::string& base) {
    std::string path = base + "/launcher_test-XXXXXX";
    EXPECT_NE(mkdtemp(path.data()), nullptr);
    return path;
  }

  // Writes an executable shell script `name` in scratch_; returns its path.
  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = scratch_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), 0755);
    return path;
  }

  // A stand-in worker: records its arguments (args), its job file's path (job-path) and
  // contents (job-copy) and its pid (pid) in scratch_, then runs `body`.
  std::string Worker(const std::string& body) {
    return Script("worker.sh", "echo \"$@\" > " + scratch_ + "/args\n" +
                                   "while [ $# -gt 0 ]; do\n"
                                   "  if [ \"$1\" = --job ]; then job=$2; fi\n"
                                   "  shift\n"
                                   "done\n"
                                   "echo \"$job\" > " +
                                   scratch_ + "/job-path\n" + "cat \"$job\" > " + scratch_ +
                                   "/job-copy\n" + "echo $$ > " + scratch_ + "/pid\n" + body);
  }

  // The files left in tmp_.
  std::vector<std::string> TempFiles() const {
    std::vector<std::string> files;
    for (const fs::directory_entry& e : fs::directory_iterator(tmp_))
      files.push_back(e.path().string());
    return files;
  }

  // C[m,n] += A[m,k] * B[k,n] with m split over x=2, lowered and validated.
  RunSpec Spec() const {
    absl::StatusOr<ir::Problem> problem =
        ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "f32");
    absl::StatusOr<ir::Computation> base = ir::Computation::Create(*problem, *ir::ParseMesh("x=2"));
    absl::StatusOr<codegen::Program> program = codegen::PrepareProgram(
        *base, *ir::ParseTrace("distribute([m], [mo], [mi], [x])\nshard(A, m@x)\nshard(C, m@x)\n"
                               "tensorize([mi, n, k], matmul)\n"));
    EXPECT_TRUE(program.ok()) << program.status();
    RunSpec spec;
    spec.problem = ProblemSpecOf(*problem);
    if (program.ok()) spec.program = *program;
    spec.ranks = 2;
    spec.seed = 5;
    return spec;
  }

  std::string scratch_, tmp_, saved_tmpdir_;
};

TEST_F(LauncherTest, ACommandsOutputAndExitStatusAreItsResult) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  absl::StatusOr<CommandResult> r =
      LaunchCommand(1, {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, options, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->signal, 0);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err_tail, "err\n");
  EXPECT_EQ(JobFailure(*r), "the job failed (exit status 3) without a result: err\n");
}

TEST_F(LauncherTest, TheLauncherGetsRanksHostfileExtraArgumentsAndTheEnvironment) {
  LaunchOptions options;
  options.launcher = {
      "/bin/sh", "-c",
      "echo \"$*\"; echo \"$OPENBLAS_NUM_THREADS\"; echo \"$OMPI_ALLOW_RUN_AS_ROOT\"",
      "fake-launcher"};
  options.hostfile = "hosts.txt";
  options.extra_args = {"--bind-to", "none"};
  absl::StatusOr<CommandResult> r = LaunchCommand(3, {"/bin/worker", "--flag"}, options, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out,
            std::string("-n 3 --hostfile hosts.txt --bind-to none /bin/worker --flag\n1\n") +
                (geteuid() == 0 ? "1\n" : "\n"));
}

TEST_F(LauncherTest, ALauncherThatCannotStartIsAFailedJob) {
  LaunchOptions options;
  options.launcher = {"/nonexistent/launcher"};
  absl::StatusOr<CommandResult> r = LaunchCommand(2, {"/bin/true"}, options, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_EQ(r->err_tail, "cannot start /nonexistent/launcher: No such file or directory\n");
  EXPECT_EQ(
      JobFailure(*r),
      "the job failed (exit status 127) without a result: cannot start /nonexistent/launcher: No "
      "such file or directory\n");
}

TEST_F(LauncherTest, ALauncherKilledByASignalSaysWhich) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  absl::StatusOr<CommandResult> r =
      LaunchCommand(1, {"/bin/sh", "-c", "echo dying >&2; kill -9 $$"}, options, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_EQ(JobFailure(*r), "the launcher died of signal 9: dying\n");
}

TEST_F(LauncherTest, TheTimeoutKillsEveryProcessOfTheJob) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.timeout_s = 0.5;
  const std::string pids = scratch_ + "/pids";
  // The launcher's shell and a child of it, both recorded.
  const auto start = Clock::now();
  absl::StatusOr<CommandResult> r = LaunchCommand(
      1, {"/bin/sh", "-c", "/bin/sleep 30 & echo $! > " + pids + "; echo $$ >> " + pids + "; wait"},
      options, "");
  const double took = SecondsSince(start);
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_EQ(r.status().message(), "timed out after 0.5 s; the job was killed");
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 5.0);
  const std::vector<pid_t> started = ReadPids(pids);
  ASSERT_EQ(started.size(), 2u) << "the job did not start in time";
  for (pid_t pid : started) EXPECT_TRUE(ProcessEnded(pid)) << "pid " << pid << " survived";
}

TEST_F(LauncherTest, TheTimeoutKillsMarkedProcessesOutsideTheJobsProcessGroup) {
  // As Open MPI does with ranks: a process in a session (and group) of its own, which a
  // group kill cannot reach; its command line carries the marker.
  const std::string marker = "meshtune-launcher-test-" + std::to_string(getpid());
  const std::string pid_file = scratch_ + "/stray";
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.timeout_s = 1.0;
  std::future<absl::StatusOr<CommandResult>> job = std::async(std::launch::async, [&] {
    return LaunchCommand(1,
                         {"/bin/sh", "-c",
                          "setsid /bin/bash -c 'echo $$ > " + pid_file + "; exec -a " + marker +
                              " /bin/sleep 30' & wait"},
                         options, marker);
  });
  // While the job runs: the stray leads a process group of its own.
  pid_t stray = 0;
  for (int i = 0; i < 100 && stray == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::vector<pid_t> pids = ReadPids(pid_file);
    if (!pids.empty()) stray = pids[0];
  }
  ASSERT_NE(stray, 0) << "the stray process did not start";
  EXPECT_EQ(StatField(stray, 5), stray) << "not in a process group of its own";
  absl::StatusOr<CommandResult> r = job.get();
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_TRUE(ProcessEnded(stray)) << "the marked process " << stray << " survived";
  if (!ProcessEnded(stray)) kill(stray, SIGKILL);
}

TEST_F(LauncherTest, TheTimeoutKillsADetachedProcessOfTheJobsTmpdir) {
  // As orted --daemonize does on a test cluster's node: a session of its own, no marker on
  // its command line, the job's TMPDIR in its environment.
  const std::string pid_file = scratch_ + "/daemon";
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.timeout_s = 1.0;
  options.tmpdir = tmp_;
  absl::StatusOr<CommandResult> r =
      LaunchCommand(1,
                    {"/bin/sh", "-c",
                     "setsid /bin/sh -c 'echo $$ > " + pid_file + "; exec /bin/sleep 30' & wait"},
                    options, "no-such-marker");
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  const std::vector<pid_t> pids = ReadPids(pid_file);
  ASSERT_EQ(pids.size(), 1u) << "the detached process did not start";
  EXPECT_TRUE(ProcessEnded(pids[0])) << "the detached process " << pids[0] << " survived";
  if (!ProcessEnded(pids[0])) kill(pids[0], SIGKILL);
}

TEST_F(LauncherTest, WhatALauncherThatEndedLeftOfItsJobIsKilled) {
  // A launcher that exits while a rank of its job still runs elsewhere (on a node whose
  // link is down, mpirun gives up on it): the rank is killed when the job ends.
  const std::string marker = "meshtune-launcher-test-left-" + std::to_string(getpid());
  const std::string pid_file = scratch_ + "/left";
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.timeout_s = 10;
  absl::StatusOr<CommandResult> r =
      LaunchCommand(1,
                    {"/bin/sh", "-c",
                     "setsid /bin/bash -c 'echo $$ > " + pid_file + "; exec -a " + marker +
                         " /bin/sleep 30' </dev/null >/dev/null 2>&1 &\n"
                         "while [ ! -s " +
                         pid_file + " ]; do sleep 0.01; done; exit 7"},
                    options, marker);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 7);
  const std::vector<pid_t> pids = ReadPids(pid_file);
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(ProcessEnded(pids[0])) << "the rank " << pids[0] << " outlived its launcher";
  if (!ProcessEnded(pids[0])) kill(pids[0], SIGKILL);
}

// A stand-in /proc under `root`: process `pid` with its stat line, command line and
// environment ('\0'-separated, as Linux writes them).
void FakeProc(const std::string& root, pid_t pid, const std::string& comm, pid_t ppid,
              const std::string& cmdline, const std::string& environ) {
  const std::string dir = root + "/" + std::to_string(pid);
  fs::create_directories(dir);
  std::ofstream(dir + "/stat") << pid << " (" << comm << ") S " << ppid << " " << pid
                               << " 0 0 -1\n";
  std::ofstream(dir + "/cmdline", std::ios::binary) << cmdline;
  std::ofstream(dir + "/environ", std::ios::binary) << environ;
}

TEST_F(LauncherTest, JobProcessesAreTheMarkedTheJobsTmpdirsAndTheirDaemons) {
  using std::string_literals::operator""s;
  const std::string proc = scratch_ + "/proc";
  const std::string job = "/tmp/meshtune-run-abc/job.pb";
  // Open MPI's daemon (daemonized: parent 1) and its rank on a node.
  FakeProc(proc, 100, "orted", 1, "orted\0--daemonize\0-mca\0ess\0env\0"s, "HOME=/root\0"s);
  FakeProc(proc, 101, "meshtune_worker", 100, "/w/meshtune_worker\0--job\0"s + job + "\0"s,
           "HOME=/root\0"s);
  // A daemon whose ranks are gone, found by the job's TMPDIR.
  FakeProc(proc, 200, "orted", 1, "orted\0--daemonize\0"s,
           "A=1\0TMPDIR=/tmp/meshtune-run-abc\0B=2\0"s);
  // Another job's daemon and rank, and a TMPDIR that only starts like the job's.
  FakeProc(proc, 300, "orted", 1, "orted\0"s, "TMPDIR=/tmp/meshtune-run-xyz\0"s);
  FakeProc(proc, 301, "meshtune_worker", 300, "w\0--job\0/tmp/meshtune-run-xyz/job.pb\0"s, ""s);
  FakeProc(proc, 400, "sh", 1, "sh\0"s, "TMPDIR=/tmp/meshtune-run-abc/sub\0"s);
  // A comm with a parenthesis and a space.
  FakeProc(proc, 500, "a) b", 1, "x\0"s + job + "\0"s, ""s);
  fs::create_directories(proc + "/self");
  EXPECT_EQ(JobProcesses(job, "/tmp/meshtune-run-abc", proc),
            (std::vector<pid_t>{100, 101, 200, 500}));
  EXPECT_EQ(JobProcesses(job, "", proc), (std::vector<pid_t>{100, 101, 500}));
  EXPECT_EQ(JobProcesses("", "/tmp/meshtune-run-abc", proc), (std::vector<pid_t>{200}));
  EXPECT_EQ(JobProcesses("", "", proc), std::vector<pid_t>{});
  EXPECT_EQ(JobProcesses(job, "", scratch_ + "/no-proc"), std::vector<pid_t>{});
}

TEST_F(LauncherTest, CancellingKillsTheJob) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  std::atomic<int> polls{0};
  options.cancelled = [&] { return ++polls > 3; };
  const auto start = Clock::now();
  absl::StatusOr<CommandResult> r = LaunchCommand(
      1, {"/bin/sh", "-c", "echo $$ > " + scratch_ + "/pid; exec /bin/sleep 30"}, options, "");
  EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
  EXPECT_EQ(r.status().message(), "cancelled; the job was killed");
  EXPECT_LT(SecondsSince(start), 5.0);
  for (pid_t pid : ReadPids(scratch_ + "/pid")) EXPECT_TRUE(ProcessEnded(pid));
}

TEST_F(LauncherTest, FindWorkerAndFindCalibratorTakeAnExecutableFromTheEnvironment) {
  const std::string worker = Script("worker", "exit 0\n");
  const std::string calibrator = Script("calibrator", "exit 0\n");
  const std::string plain = scratch_ + "/not-executable";
  std::ofstream(plain) << "data";
  setenv("MESHTUNE_WORKER", worker.c_str(), 1);
  setenv("MESHTUNE_CALIBRATOR", calibrator.c_str(), 1);
  EXPECT_EQ(FindWorker(), worker);
  EXPECT_EQ(FindCalibrator(), calibrator);
  setenv("MESHTUNE_WORKER", plain.c_str(), 1);
  EXPECT_NE(FindWorker(), plain);
  unsetenv("MESHTUNE_WORKER");
  unsetenv("MESHTUNE_CALIBRATOR");
}

TEST(JobFailureTest, QuotesOpenMpisLineAboutTheRankThatDied) {
  CommandResult r;
  r.exit_code = 1;
  r.err_tail =
      "[host:123] some warning\n"
      "------------------------------------------------\n"
      "mpirun noticed that process rank 1 with PID 42 on node host exited on signal 11 "
      "(Segmentation fault).\n"
      "------------------------------------------------\n";
  EXPECT_EQ(JobFailure(r),
            "the job failed (exit status 1) without a result: mpirun noticed that process rank 1 "
            "with PID 42 on node host exited on signal 11 (Segmentation fault).");
  r.exit_code = -1;
  r.signal = SIGABRT;
  r.err_tail = "mpirun noticed that process rank 0 with PID 7 on node h exited on signal 6";
  EXPECT_EQ(
      JobFailure(r),
      "the launcher died of signal 6: mpirun noticed that process rank 0 with PID 7 on node h "
      "exited on signal 6");
}

TEST(JobFailureTest, NamesWhatTheLauncherSaidWhenADaemonDidNotStart) {
  CommandResult r;
  r.exit_code = 255;
  const std::string box =
      "-----------------------------------------------------------------\n"
      "ORTE was unable to reliably start one or more daemons.\n"
      "This usually is caused by:\n\n* not finding the required libraries\n"
      "-----------------------------------------------------------------\n"
      "ORTE does not know how to route a message to the specified daemon\n";
  r.err_tail = "agent: no node mtc-gone\n" + box;
  EXPECT_EQ(JobFailure(r),
            "the job failed (exit status 255) without a result: Open MPI could not start its "
            "daemon on every node (the launcher said: agent: no node mtc-gone)");
  r.err_tail = box;
  EXPECT_EQ(JobFailure(r),
            "the job failed (exit status 255) without a result: Open MPI could not start its "
            "daemon on every node");
}

TEST(JobFailureTest, QuotesTheLast600CharactersOfAnyOtherStderr) {
  CommandResult r;
  r.exit_code = 2;
  r.err_tail = std::string(1000, 'a') + "the end";
  EXPECT_EQ(JobFailure(r), "the job failed (exit status 2) without a result: ..." +
                               std::string(593, 'a') + "the end");
  r.err_tail = "";
  EXPECT_EQ(JobFailure(r), "the job failed (exit status 2) without a result: ");
}

TEST_F(LauncherTest, LaunchReadsTheWorkersResultAndRemovesTheTraceFile) {
  RunStats m;
  m.verified = true;
  m.seconds = {0.5, 0.25, 0.75};
  m.bytes_sent_max = 64;
  m.checksum = 1.5;
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.worker = Worker("echo 'a line of noise'\necho '" + RunResultLine(m) + "'\n");
  const RunSpec spec = Spec();
  const LaunchResult r = Launch(spec, options);
  EXPECT_FALSE(r.error.has_value()) << *r.error;
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.seconds, (std::vector<double>{0.5, 0.25, 0.75}));
  EXPECT_EQ(r.median_s, 0.5);
  EXPECT_EQ(r.samples, (std::vector<double>{0.5, 0.25, 0.75}));
  EXPECT_EQ(r.batch, 1);
  EXPECT_EQ(r.bytes_sent_max, 64);
  EXPECT_EQ(r.checksum, 1.5);
  // The worker saw the job — the statement, the Program and the settings — in a directory
  // of the run's own under $TMPDIR (the job's TMPDIR too) that is gone now.
  const std::string job_path = ReadFile(scratch_ + "/job-path");
  EXPECT_EQ(job_path.rfind(tmp_ + "/meshtune-run-", 0), 0u) << job_path;
  EXPECT_EQ(job_path.substr(job_path.size() - 8), "/job.pb\n") << job_path;
  EXPECT_EQ(ReadFile(scratch_ + "/args"), "--job " + job_path);
  v1::WorkerJobs sent_set;
  ASSERT_TRUE(sent_set.ParseFromString(ReadFile(scratch_ + "/job-copy")));
  ASSERT_EQ(sent_set.jobs_size(), 1);
  absl::StatusOr<WorkerJob> job = FromProto(sent_set.jobs(0));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->problem.output.tensor, "C");
  EXPECT_EQ(job->problem.operands.size(), 2u);
  EXPECT_TRUE(job->problem.accumulate);
  EXPECT_EQ(job->problem.extents, spec.problem.extents);
  EXPECT_EQ(codegen::ToProto(job->program).SerializeAsString(),
            codegen::ToProto(spec.program).SerializeAsString());
  EXPECT_EQ(job->options.reps, 3);
  EXPECT_EQ(job->options.warmup, 1);
  EXPECT_EQ(job->options.seed, 5u);
  EXPECT_EQ(TempFiles(), std::vector<std::string>{});
}

TEST_F(LauncherTest, LaunchPassesAnInjectedFault) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.worker = Worker("exit 1\n");
  RunSpec spec = Spec();
  spec.inject_fault = "wrong";
  Launch(spec, options);
  v1::WorkerJobs sent;
  ASSERT_TRUE(sent.ParseFromString(ReadFile(scratch_ + "/job-copy")));
  ASSERT_EQ(sent.jobs_size(), 1);
  EXPECT_EQ(sent.jobs(0).inject_fault(), "wrong");
}

// Several specs go to one worker as one job file, with the rounds' settings; its lines
// are the results in order, and a job that ends without a line per spec fails every spec.
TEST_F(LauncherTest, LaunchRoundsSendsEverySpecAndReadsALinePerSpec) {
  RunStats a, b;
  a.verified = b.verified = true;
  a.seconds = {0.5, 0.25, 0.75};
  b.seconds = {2, 4, 6, 8};
  b.batch = 2;
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.worker = Worker("echo '" + RunResultLine(a) + "'\necho '" + RunResultLine(b) + "'\n");
  RoundsOptions rounds;
  rounds.min_rounds = 8;
  rounds.max_rounds = 9;
  rounds.budget_s = 3;
  rounds.seed = 11;
  const std::vector<LaunchResult> r = LaunchRounds({Spec(), Spec()}, rounds, options);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].samples, (std::vector<double>{0.5, 0.25, 0.75}));
  EXPECT_EQ(r[1].samples, (std::vector<double>{3, 7}));
  EXPECT_EQ(r[1].batch, 2);
  EXPECT_EQ(r[1].median_s, 5);
  v1::WorkerJobs sent;
  ASSERT_TRUE(sent.ParseFromString(ReadFile(scratch_ + "/job-copy")));
  EXPECT_EQ(sent.jobs_size(), 2);
  EXPECT_EQ(sent.min_rounds(), 8);
  EXPECT_EQ(sent.max_rounds(), 9);
  EXPECT_EQ(sent.budget_s(), 3);
  EXPECT_EQ(sent.order_seed(), 11u);
  // One line for three specs: the job failed as a whole.
  const std::vector<LaunchResult> short_of =
      LaunchRounds({Spec(), Spec(), Spec()}, rounds, options);
  ASSERT_EQ(short_of.size(), 3u);
  for (const LaunchResult& s : short_of) {
    ASSERT_TRUE(s.error.has_value());
    EXPECT_FALSE(s.verified);
  }
  EXPECT_EQ(TempFiles(), std::vector<std::string>{});
}

TEST_F(LauncherTest, AWorkerWithoutAResultIsAFailedJobAndItsJobFileIsRemoved) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.worker = Worker("echo boom >&2\nexit 1\n");
  const LaunchResult r = Launch(Spec(), options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.error.value_or(""), "the job failed (exit status 1) without a result: boom\n");
  EXPECT_EQ(TempFiles(), std::vector<std::string>{});
}

TEST_F(LauncherTest, AHangingWorkerIsKilledAtTheTimeoutAndItsJobFileIsRemoved) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.timeout_s = 0.5;
  options.worker = Worker("exec /bin/sleep 30\n");
  const LaunchResult r = Launch(Spec(), options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.error.value_or(""), "timed out after 0.5 s; the job was killed");
  const std::vector<pid_t> pids = ReadPids(scratch_ + "/pid");
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(ProcessEnded(pids[0]));
  EXPECT_EQ(TempFiles(), std::vector<std::string>{});
}

TEST_F(LauncherTest, AResultThatDidNotVerifyOrAFailedExitIsNotVerified) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  RunStats wrong;
  wrong.seconds = {1};
  options.worker = Worker("echo '" + RunResultLine(wrong) + "'\n");
  LaunchResult r = Launch(Spec(), options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.error.value_or(""), "the output did not verify");

  wrong.error = "rank (x=1): C[4, 0] = 1 but the reference is 2";
  options.worker = Worker("echo '" + RunResultLine(wrong) + "'\n");
  r = Launch(Spec(), options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.error.value_or(""), "rank (x=1): C[4, 0] = 1 but the reference is 2");

  RunStats right;
  right.verified = true;
  right.seconds = {1};
  options.worker =
      Worker("echo '" + RunResultLine(right) + "'\necho 'rank 1 hiccup' >&2\nexit 3\n");
  r = Launch(Spec(), options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.error.value_or(""), "the job exited with status 3: rank 1 hiccup\n");
  EXPECT_EQ(TempFiles(), std::vector<std::string>{});
}

TEST_F(LauncherTest, AMissingWorkerIsReportedWithoutAJob) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.worker = scratch_ + "/no-such-worker";
  const LaunchResult r = Launch(Spec(), options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.error.value_or(""), "cannot find the worker binary meshtune_worker (looked for '" +
                                      scratch_ + "/no-such-worker'); set MESHTUNE_WORKER");
  EXPECT_EQ(TempFiles(), std::vector<std::string>{});
}

TEST_F(LauncherTest, AnUnusableTempDirIsReportedWithoutAJob) {
  LaunchOptions options;
  options.launcher = kFakeLauncher;
  options.worker = Worker("exit 0\n");
  setenv("TMPDIR", (scratch_ + "/no-such-dir").c_str(), 1);
  const LaunchResult r = Launch(Spec(), options);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(
      r.error.value_or("").rfind("cannot find a directory for temporary files ($TMPDIR): ", 0), 0u)
      << r.error.value_or("");
  EXPECT_FALSE(fs::exists(scratch_ + "/args")) << "the worker was started";
}

}  // namespace
}  // namespace meshtune::runtime
