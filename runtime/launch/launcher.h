// The launcher: runs a schedule under MPI (mpirun, or another launcher such as srun) and
// turns whatever happens into a LaunchResult — a verified run, a wrong answer, a crash, a
// hang past the timeout — never a crash of the caller. On timeout the whole process group
// is killed, and so are the job's ranks and Open MPI daemons on this machine wherever they
// run (JobProcesses), so no process is left behind.
// LaunchCommand gives any other MPI job (the calibration) the same treatment.
// Thread-compatible: each call forks its own job.
#ifndef MESHTUNE_RUNTIME_LAUNCH_LAUNCHER_H_
#define MESHTUNE_RUNTIME_LAUNCH_LAUNCHER_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/program.h"
#include "runtime/launch/repetitions.h"
#include "runtime/library/gemm_form.h"
#include "runtime/oracle.h"
#include "runtime/statements_executor.h"

namespace meshtune::runtime {

struct LaunchOptions {
  std::string worker;                              // path of meshtune_worker ("" = find it)
  std::vector<std::string> launcher = {"mpirun"};  // e.g. {"srun"} on a cluster
  std::string hostfile;                            // passed as --hostfile when set
  std::vector<std::string> extra_args;             // more launcher arguments, before the worker
  double timeout_s = 300;
  // Polled about every 100 ms while the job runs; when it returns true the job is killed
  // as on a timeout (Cancelled "cancelled; the job was killed"). Unset: never.
  std::function<bool()> cancelled;
  // TMPDIR of the job (where Open MPI makes its session directory); "" inherits this
  // process's. Launch sets it to a directory of its own, removed after the job whatever
  // happened, so that a job killed before mpirun cleaned up leaves nothing behind.
  std::string tmpdir;
};

// What to run: the statement as stated (what the output is checked against), the Program
// every rank runs — judged, lowered and validated before (codegen::PrepareSchedule); the
// worker does none of that — and the measurement settings.
struct RunSpec {
  ProblemSpec problem;
  codegen::Program program;
  int64_t ranks = 1;
  int reps = 3, warmup = 1;  // samples (runtime/launch/repetitions.h) after warm-ups
  uint64_t seed = 1;
  std::string inject_fault;  // tests only: crash, hang or wrong
  // Set: ScaLAPACK's GEMM on this grid (ranks = prow * pcol) instead of `program`, in f32
  // (library_dtype_bytes 4) or f64 (8), a chain of GEMMs when `later` is set too:
  // runtime/library/library_run.h.
  std::optional<LibraryGemmConfig> library;
  int library_dtype_bytes = 4;
  // A program of several statements: `problem` and `program` are the first, these the
  // others, run as one (WorkerJob::later).
  std::vector<StatementJob> later;
};

struct LaunchResult {
  bool verified = false;
  std::vector<double> seconds;
  double median_s = 0;
  double kernel_median_s = 0;  // of it, the slowest rank's time in local kernels (median)
  int64_t bytes_sent_max = 0;
  int64_t bytes_copied_max = 0;  // bytes the busiest rank packed or copied in a repetition
  double checksum = 0;
  // The timed repetitions as samples (RunResult.sample.samples_s): each the mean of
  // `batch` consecutive repetitions; in a run of several side by side, one a round.
  std::vector<double> samples;
  int batch = 1;
  int statements = 1;                // RunResult.statements (a program's; 1 for one statement)
  std::optional<std::string> error;  // set whenever the run did not verify
};

// Runs `spec` and waits for it (at most options.timeout_s). The job file
// (meshtune.v1.WorkerJob, runtime/launch/worker_job.h) goes to a directory of the run's own under
// std::filesystem::temp_directory_path() ($TMPDIR, else /tmp), meshtune-run-XXXXXX, which is also
// the job's TMPDIR (Open MPI's session directory) and is removed when the job ends, however it ends
// (SIGKILL of this process aside).
LaunchResult Launch(const RunSpec& spec, const LaunchOptions& options);

// Runs `specs` (at least one, all of one rank count) as one job, side by side in `rounds`
// when there are several (runtime/launch/rounds.h; one alone takes its reps samples), and waits
// for it (at most options.timeout_s for the whole job): one result per spec, in order.
// When the job fails as a whole (a rank crashed, the timeout, a launcher that cannot
// start), every result carries that error: the caller may then run them one at a time.
std::vector<LaunchResult> LaunchRounds(const std::vector<RunSpec>& specs,
                                       const RoundsOptions& rounds, const LaunchOptions& options);

// Stop signals for command-line tools. After InstallStopSignalHandlers(), SIGINT and
// SIGTERM no longer end this process at once: the handler only records the signal, and
// every LaunchCommand (so every Launch) running or starting then kills its job as on a
// timeout — the launcher's process group, and every rank and daemon of the job
// (JobProcesses) — and returns Cancelled "interrupted by SIGINT; the job was killed". The
// caller then cleans up and ends itself by StopSignal() (e.g. re-raising it with the
// default disposition).
// Ctrl-C in a terminal reaches only this process: each job runs in a session of its own.
// Idempotent; async-signal-safe handlers. Not for processes that take signals otherwise
// (meshtuned blocks them and waits for them in a thread).
void InstallStopSignalHandlers();

// The first stop signal received since InstallStopSignalHandlers() (SIGINT or SIGTERM);
// 0 when none (or when the handlers are not installed).
int StopSignal();

// The worker binary: $MESHTUNE_WORKER, then beside this executable or in its runfiles;
// "" when not found.
std::string FindWorker();

// The calibration binary meshtune_calibrate, found like the worker ($MESHTUNE_CALIBRATOR
// first); "" when not found.
std::string FindCalibrator();

// How a finished launcher job ended and what it printed.
struct CommandResult {
  int exit_code = 0;     // the launcher's exit status; -1 when a signal killed it
  int signal = 0;        // the signal that killed the launcher, 0 when it exited
  std::string out;       // all of its stdout
  std::string err_tail;  // the last 64 KiB of its stderr
};

// Runs `<options.launcher> -n ranks [--oversubscribe] [--hostfile H] <options.extra_args>
// command...` (command[0] is the binary run on every rank) in a process group of its
// own, with OPENBLAS_NUM_THREADS=1 and Open MPI's run-as-root variables for root, and
// waits at most options.timeout_s. On expiry the group is killed, and so is every process
// left of the job (JobProcesses(marker, options.tmpdir): Open MPI puts each rank in a
// process group of its own, and orted in a session of its own): DeadlineExceeded "timed out
// after S s; the job was killed". Likewise when options.cancelled says so: Cancelled
// "cancelled; the job was killed". When the launcher ends by itself, what it left of the
// job on this machine (a daemon and ranks on a node it lost) is killed as well. Internal
// when the job cannot be started. A failed job is a CommandResult.
absl::StatusOr<CommandResult> LaunchCommand(int64_t ranks, const std::vector<std::string>& command,
                                            const LaunchOptions& options,
                                            const std::string& marker);

// Why a job that printed no result failed, for messages: its exit status or signal and
// Open MPI's account of a rank that died, else the end of its stderr.
std::string JobFailure(const CommandResult& result);

// The processes of this machine (`proc`: its /proc) that are left of a job, in pid order:
// every one whose command line contains `marker` (when not empty) or whose environment
// holds TMPDIR=`tmpdir` (when not empty: the job's own directory, which a launch agent that
// starts Open MPI's daemons on this machine, such as a test cluster's, passes on to them and
// their ranks), and every orted that is the parent of such a process (orted --daemonize
// runs in a session of its own, out of reach of a kill of the launcher's group). Never this
// process. LaunchCommand kills them (SIGKILL) when its job ends, however it ends.
std::vector<pid_t> JobProcesses(const std::string& marker, const std::string& tmpdir,
                                const std::string& proc = "/proc");

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_LAUNCH_LAUNCHER_H_
