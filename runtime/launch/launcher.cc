#include "runtime/launch/launcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/json.h"
#include "base/paths.h"
#include "proto/meshtune.pb.h"
#include "runtime/launch/worker_job.h"

namespace meshtune::runtime {

namespace {

bool Executable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; }

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// What went wrong, from the launcher's stderr: Open MPI's one-line account of a rank that
// died when there is one, else the end of the output.
std::string Explain(const std::string& err) {
  const size_t at = err.find("noticed that process rank");
  if (at != std::string::npos) {
    const size_t start = err.rfind('\n', at);
    const size_t end = err.find('\n', at);
    std::string line = err.substr(start == std::string::npos ? 0 : start + 1,
                                  end == std::string::npos ? std::string::npos : end - start - 1);
    return line;
  }
  // Open MPI could not start orted on some node: what the launch agent said before Open
  // MPI's box of advice names the node and why (a cluster's agent: "agent: no node N").
  const size_t daemons = err.find("was unable to reliably start one or more daemons");
  if (daemons != std::string::npos) {
    const size_t box = err.rfind("\n---", daemons);
    const std::string said(
        absl::StripAsciiWhitespace(box == std::string::npos ? "" : err.substr(0, box)));
    return absl::StrCat(
        "Open MPI could not start its daemon on every node",
        said.empty() ? "" : absl::StrCat(" (the launcher said: ", Tail(said, 300), ")"));
  }
  return Tail(err, 600);
}

// The whole of /proc/<pid>/<name> ("" when unreadable).
std::string ProcFile(const std::string& proc, const std::string& pid, const char* name) {
  std::ifstream in(proc + "/" + pid + "/" + name, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

constexpr size_t kErrTailBytes = 64 << 10;

volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_handlers_installed = 0;

void OnStopSignal(int signal_number) {
  if (g_stop_signal == 0) g_stop_signal = signal_number;
}

// "SIGINT", "SIGTERM", else "signal N".
std::string SignalName(int signal_number) {
  if (signal_number == SIGINT) return "SIGINT";
  if (signal_number == SIGTERM) return "SIGTERM";
  return absl::StrCat("signal ", signal_number);
}

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a waiting poll() returns at once (EINTR)
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  g_handlers_installed = 1;
}

int StopSignal() { return g_stop_signal; }

std::string FindWorker() {
  return base::FindCompanion("MESHTUNE_WORKER", {"runtime/meshtune_worker"});
}

std::string FindCalibrator() {
  return base::FindCompanion("MESHTUNE_CALIBRATOR", {"runtime/meshtune_calibrate"});
}

std::string JobFailure(const CommandResult& result) {
  if (result.signal != 0)
    return absl::StrCat("the launcher died of signal ", result.signal, ": ",
                        Explain(result.err_tail));
  return absl::StrCat("the job failed (exit status ", result.exit_code,
                      ") without a result: ", Explain(result.err_tail));
}

std::vector<pid_t> JobProcesses(const std::string& marker, const std::string& tmpdir,
                                const std::string& proc) {
  struct Entry {
    pid_t pid, ppid;
    std::string comm;
    bool marked;
  };
  std::vector<Entry> entries;
  const std::string tmpdir_var = absl::StrCat("TMPDIR=", tmpdir);
  DIR* dir = opendir(proc.c_str());
  if (dir == nullptr) return {};
  while (dirent* e = readdir(dir)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    // stat: "PID (COMM) STATE PPID ...", COMM up to the last ')'.
    const std::string stat = ProcFile(proc, e->d_name, "stat");
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    Entry entry{pid, 0, stat.substr(open + 1, close - open - 1), false};
    if (close + 4 < stat.size()) entry.ppid = std::atoi(stat.c_str() + close + 4);
    if (!marker.empty() && ProcFile(proc, e->d_name, "cmdline").find(marker) != std::string::npos) {
      entry.marked = true;
    }
    if (!entry.marked && !tmpdir.empty()) {
      for (absl::string_view var : absl::StrSplit(ProcFile(proc, e->d_name, "environ"), '\0')) {
        if (var == tmpdir_var) entry.marked = true;
      }
    }
    entries.push_back(std::move(entry));
  }
  closedir(dir);
  std::vector<pid_t> out;
  for (const Entry& e : entries) {
    if (e.marked) out.push_back(e.pid);
  }
  // The daemons of marked ranks: Open MPI's orted (--daemonize: a session of its own).
  for (const Entry& e : entries) {
    if (e.marked || e.comm != "orted") continue;
    for (const Entry& child : entries) {
      if (child.marked && child.ppid == e.pid) {
        out.push_back(e.pid);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Kills (SIGKILL) what is left of a job: JobProcesses(marker, tmpdir), nothing when both are
// empty.
void KillLeftovers(const std::string& marker, const std::string& tmpdir) {
  if (marker.empty() && tmpdir.empty()) return;
  for (const pid_t pid : JobProcesses(marker, tmpdir)) kill(pid, SIGKILL);
}

// The launcher's command line: options.launcher, the rank count (oversubscribed past the
// cores, OPENBLAS_NUM_THREADS passed on, under mpirun), the hostfile, extra arguments, then
// `command`.
std::vector<std::string> LauncherArgs(int64_t ranks, const std::vector<std::string>& command,
                                      const LaunchOptions& options) {
  std::vector<std::string> args = options.launcher;
  const bool mpirun = !args.empty() && args[0].find("mpirun") != std::string::npos;
  args.insert(args.end(), {"-n", std::to_string(ranks)});
  if (mpirun) {
    if (ranks > sysconf(_SC_NPROCESSORS_ONLN)) args.push_back("--oversubscribe");
    args.insert(args.end(), {"-x", "OPENBLAS_NUM_THREADS"});
  }
  if (!options.hostfile.empty()) args.insert(args.end(), {"--hostfile", options.hostfile});
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

// A started job: its process (leader of its own process group) and the read ends of its
// stdout and stderr.
struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;
};

// Forks and execs `args` in a process group of its own, with OPENBLAS_NUM_THREADS=1 and, as
// root, Open MPI's permission to run as root. Internal when a pipe or the fork fails.
absl::StatusOr<Child> StartChild(std::vector<std::string> args, const std::string& tmpdir) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0)
    return absl::InternalError(absl::StrCat("pipe failed: ", std::strerror(errno)));
  if (pipe(err_pipe) != 0) {
    const int e = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::InternalError(absl::StrCat("pipe failed: ", std::strerror(e)));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();  // a process group of its own, killed as one on timeout
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    // Only 1 and 2 are the pipes: a process of the job that leaves (a daemon) and keeps
    // them must not hold another copy open.
    for (const int fd : {out_pipe[0], err_pipe[0], out_pipe[1], err_pipe[1]}) {
      if (fd > 2) close(fd);
    }
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    if (!tmpdir.empty()) setenv("TMPDIR", tmpdir.c_str(), 1);
    if (geteuid() == 0) {
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    dprintf(2, "cannot start %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    const int e = errno;
    close(out_pipe[0]);
    close(err_pipe[0]);
    return absl::InternalError(absl::StrCat("fork failed: ", std::strerror(e)));
  }
  return Child{pid, out_pipe[0], err_pipe[0]};
}

// Why collecting a job's output ended before the job closed its pipes.
enum class Cut { kNone, kTimedOut, kCancelled, kInterrupted };

// Reads the child's stdout into result.out and the tail of its stderr into
// result.err_tail until both pipes close, the deadline passes, options.cancelled says so or
// a stop signal arrives (then `*signal` is that signal). Closes the pipes.
Cut Collect(const Child& child, const LaunchOptions& options, CommandResult& result, int* signal) {
  std::string& err = result.err_tail;
  Cut cut = Cut::kNone;
  const int poll_ms = options.cancelled || g_handlers_installed ? 100 : 1000;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options.timeout_s);
  pollfd fds[2] = {{child.out, POLLIN, 0}, {child.err, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    // Rounded up: a deadline less than a millisecond away has not passed yet.
    const auto now = std::chrono::steady_clock::now();
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    if (now >= deadline) {
      cut = Cut::kTimedOut;
      break;
    }
    if (options.cancelled && options.cancelled()) {
      cut = Cut::kCancelled;
      break;
    }
    if ((*signal = StopSignal()) != 0) {
      cut = Cut::kInterrupted;
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), poll_ms))) < 0 &&
        errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[8192];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : err).append(buf, n);
        if (err.size() > 2 * kErrTailBytes) err.erase(0, err.size() - kErrTailBytes);
      }
    }
  }
  for (const pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  return cut;
}

// Ends a job cut short: SIGTERM to its group, two seconds to exit, then SIGKILL to the group
// and to what is left of the job elsewhere (KillLeftovers: mpirun's ranks each have a group
// of their own, orted a session of its own). Reaps the child.
void KillJob(pid_t pid, const std::string& marker, const std::string& tmpdir) {
  int status = 0;
  kill(-pid, SIGTERM);
  for (int i = 0; i < 20 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  kill(-pid, SIGKILL);  // anything of the group still alive
  KillLeftovers(marker, tmpdir);
}

// A new directory meshtune-run-XXXXXX under $TMPDIR (else /tmp), or why there is none.
absl::StatusOr<std::filesystem::path> MakeRunDir() {
  std::error_code ec;
  const std::filesystem::path temp_dir = std::filesystem::temp_directory_path(ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot find a directory for temporary files ($TMPDIR): ", ec.message()));
  }
  std::string dir_template = (temp_dir / "meshtune-run-XXXXXX").string();
  std::vector<char> dir_buf(dir_template.begin(), dir_template.end());
  dir_buf.push_back('\0');
  if (mkdtemp(dir_buf.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a temporary directory in ",
                                            temp_dir.string(), ": ", std::strerror(errno)));
  }
  return std::filesystem::path(dir_buf.data());
}

}  // namespace

absl::StatusOr<CommandResult> LaunchCommand(int64_t ranks, const std::vector<std::string>& command,
                                            const LaunchOptions& options,
                                            const std::string& marker) {
  if (const int sig = StopSignal(); sig != 0) {
    return absl::CancelledError(
        absl::StrCat("interrupted by ", SignalName(sig), "; the job was not started"));
  }
  absl::StatusOr<Child> child = StartChild(LauncherArgs(ranks, command, options), options.tmpdir);
  if (!child.ok()) return child.status();
  CommandResult result;
  int interrupted = 0;  // the stop signal that ended the wait
  switch (Collect(*child, options, result, &interrupted)) {
    case Cut::kInterrupted:
      KillJob(child->pid, marker, options.tmpdir);
      return absl::CancelledError(
          absl::StrCat("interrupted by ", SignalName(interrupted), "; the job was killed"));
    case Cut::kCancelled:
      KillJob(child->pid, marker, options.tmpdir);
      return absl::CancelledError("cancelled; the job was killed");
    case Cut::kTimedOut:
      KillJob(child->pid, marker, options.tmpdir);
      return absl::DeadlineExceededError(
          absl::StrCat("timed out after ", options.timeout_s, " s; the job was killed"));
    case Cut::kNone:
      break;
  }
  int status = 0;
  waitpid(child->pid, &status, 0);
  // A launcher that ended may leave its daemons and ranks behind on a node it lost (a link
  // down): they are killed now, not left to hang.
  KillLeftovers(marker, options.tmpdir);
  std::string& err = result.err_tail;
  if (err.size() > kErrTailBytes) err.erase(0, err.size() - kErrTailBytes);
  if (WIFSIGNALED(status)) {
    result.exit_code = -1;
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

namespace {

// The job's result line `r` as a LaunchResult; `job` tells how the launcher ended.
LaunchResult ResultOf(const v1::RunResult& r, const CommandResult& job) {
  LaunchResult result;
  result.verified = r.verified();
  result.seconds.assign(r.seconds().begin(), r.seconds().end());
  result.samples.assign(r.sample().samples_s().begin(), r.sample().samples_s().end());
  result.batch = std::max(1, r.sample().batch());
  result.median_s = r.median_s();
  result.kernel_median_s = r.kernel_median_s();
  result.bytes_sent_max = static_cast<int64_t>(r.bytes_sent_max());
  result.bytes_copied_max = static_cast<int64_t>(r.bytes_copied_max());
  result.checksum = r.checksum();
  result.statements = std::max(1, r.statements());
  if (!r.error().empty()) {
    result.error = r.error();
  } else if (!r.verified()) {
    result.error = "the output did not verify";
  } else if (job.signal == 0 && job.exit_code != 0) {
    result.verified = false;
    result.error =
        absl::StrCat("the job exited with status ", job.exit_code, ": ", Tail(job.err_tail, 600));
  }
  return result;
}

}  // namespace

LaunchResult Launch(const RunSpec& spec, const LaunchOptions& options) {
  return LaunchRounds({spec}, RoundsOptions{}, options)[0];
}

std::vector<LaunchResult> LaunchRounds(const std::vector<RunSpec>& specs,
                                       const RoundsOptions& rounds, const LaunchOptions& options) {
  // Every spec's result is `error` when the job could not run.
  const auto all_failed = [&specs](const std::string& error) {
    std::vector<LaunchResult> out(specs.size());
    for (LaunchResult& r : out) r.error = error;
    return out;
  };
  if (specs.empty()) return {};
  const std::string worker = options.worker.empty() ? FindWorker() : options.worker;
  if (!Executable(worker)) {
    return all_failed(absl::StrCat("cannot find the worker binary meshtune_worker (looked for '",
                                   worker, "'); set MESHTUNE_WORKER"));
  }
  // A directory of this run's own: the job file, and the job's TMPDIR (Open MPI's session
  // directory), removed after the job whatever happened.
  absl::StatusOr<std::filesystem::path> run_dir = MakeRunDir();
  if (!run_dir.ok()) return all_failed(std::string(run_dir.status().message()));
  struct RemoveDir {
    std::filesystem::path dir;
    ~RemoveDir() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } remove_dir{*run_dir};
  const std::string job_file = (*run_dir / "job.pb").string();
  WorkerJobSet set;
  set.rounds = rounds;
  for (const RunSpec& spec : specs) {
    if (spec.ranks != specs[0].ranks) {
      return all_failed(absl::StrCat("jobs side by side need one rank count; got ", specs[0].ranks,
                                     " and ", spec.ranks));
    }
    WorkerJob work{spec.problem, spec.program, {}, spec.library, spec.library_dtype_bytes,
                   spec.later};
    work.options.reps = spec.reps;
    work.options.warmup = spec.warmup;
    work.options.seed = spec.seed;
    work.options.inject_fault = spec.inject_fault;
    set.jobs.push_back(std::move(work));
  }
  if (absl::Status s = WriteWorkerJobs(set, job_file); !s.ok()) {
    return all_failed(std::string(s.message()));
  }
  // The job file's name is on every rank's command line: the marker of this run's ranks.
  LaunchOptions in_dir = options;
  in_dir.tmpdir = run_dir->string();
  absl::StatusOr<CommandResult> job =
      LaunchCommand(specs[0].ranks, {worker, "--job", job_file}, in_dir, job_file);
  if (!job.ok()) return all_failed(std::string(job.status().message()));

  std::vector<v1::RunResult> lines;
  for (absl::string_view line : absl::StrSplit(job->out, '\n')) {
    if (line.empty() || line[0] != '{') continue;
    v1::RunResult r;
    if (!base::FromJson(std::string(line), &r).ok()) break;
    lines.push_back(std::move(r));
  }
  // One line for a job file the worker refused (its error), else one per job.
  if (lines.size() == 1 && specs.size() > 1 && !lines[0].error().empty()) {
    return all_failed(lines[0].error());
  }
  if (lines.size() != specs.size()) return all_failed(JobFailure(*job));
  std::vector<LaunchResult> out;
  for (const v1::RunResult& r : lines) out.push_back(ResultOf(r, *job));
  return out;
}

}  // namespace meshtune::runtime
