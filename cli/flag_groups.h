// The flag groups meshtune's commands share, each flag declared once: the workload (the
// problem), the mesh, the measurement, the launcher, the output and the target (this
// process or meshtuned); and two groups made of them, the problem and trace of explain, run
// and codegen (TraceFlags) and the workload a tuning record is stored under (lookup,
// records). A group is a struct of the parsed values with functions that declare its flags
// on a subcommand (CLI::App); a command whose flag reads differently there passes its own
// help text. CLI11 lists and checks a command's options in the order they were added, so a
// group whose flags are apart in a command's --help has one Add function per place.
#ifndef MESHTUNE_CLI_FLAG_GROUPS_H_
#define MESHTUNE_CLI_FLAG_GROUPS_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "engine/backend.h"
#include "engine/local_backend.h"
#include "proto/meshtune.pb.h"

namespace meshtune::cli {

// --profile: the hardware profile (storage/hardware_profile.h) into `*profile`, "" meaning
// "default"; `help` says what this command uses it for.
CLI::Option* AddProfileFlag(CLI::App* cmd, std::string* profile,
                            const std::string& help = "hardware profile (default: default)");

// --no-calibrate into `*no_calibrate`: with no hardware profile for the rank count, keep
// the built-in numbers rather than calibrate on first use (engine/tune/machine_profile.h).
void AddNoCalibrateFlag(CLI::App* cmd, bool* no_calibrate);

// The longest --timeout, --budget-s: a week.
inline constexpr double kMaxTimeoutS = 7 * 24 * 3600;
// Integer flags whose range the command checks itself (with its own message) are only
// checked to be integers that fit: CLI11 would saturate 99999999999999999999 to 2^63 - 1.
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kIntMin = std::numeric_limits<int>::min();
inline constexpr int64_t kIntMax = std::numeric_limits<int>::max();

// The workload: the problem in index notation and where the application holds its tensors.
struct WorkloadFlags {
  std::string expr, extents, dtype = "f32";
  std::vector<std::string> layouts;  // --layout TENSOR=SPEC (ir/layout.h)
  bool result_on_layer = false;

  // --expr, --extents (both required when `required`; `extents_example` ends --extents'
  // help) and --dtype.
  void Add(CLI::App* cmd, bool required,
           const std::string& extents_example = "m=512,n=1024,k=2048");
  // --layout TENSOR=SPEC, repeatable.
  void AddLayouts(CLI::App* cmd);
  // --result-on-layer.
  void AddResultOnLayer(CLI::App* cmd);
  // Sets `problem`'s expr, extents, dtype, layouts and result_on_layer. InvalidArgument for
  // a --layout that is not TENSOR=SPEC or names a tensor twice (engine::SetLayoutFlags).
  absl::Status Fill(v1::Problem* problem) const;
};

// The mesh: its axes, or a rank count where a command takes one instead, and a memory
// budget per rank.
struct MeshFlags {
  std::string mesh;  // "x=2,y=2"
  int64_t ranks = 0;
  std::string mem_per_rank;  // "2GiB"

  // --mesh (required when `required`; `example` ends its help).
  void Add(CLI::App* cmd, bool required, const std::string& example = "x=8,y=8");
  // --ranks with the help `help`, an integer from `min` (kInt64Min: the command checks the
  // range itself, with its own message).
  void AddRanks(CLI::App* cmd, const std::string& help, int64_t min = kInt64Min);
  // --mem-per-rank.
  void AddMemPerRank(CLI::App* cmd, const std::string& help = "memory budget per rank, e.g. 2GiB");
  // Sets `mesh`'s axes and mem_per_rank.
  void Fill(v1::Mesh* mesh) const;
};

// How a schedule is measured: repetitions, a time limit, the seed of the input values.
struct MeasurementFlags {
  int reps = 3, warmup = 1;
  double timeout_s = 300;
  uint64_t seed = 1;

  // --reps (1 to 100000) and --warmup (0 to 100000).
  void Add(CLI::App* cmd,
           const std::string& reps_help =
               "timed samples, each a batch of repetitions of at least 1 ms (its median and "
               "95% interval reported)",
           const std::string& warmup_help = "untimed repetitions first");
  // --timeout: seconds, more than 0 and at most kMaxTimeoutS.
  void AddTimeout(CLI::App* cmd, const std::string& help = "seconds before the job is killed");
  // --seed of the input values: 0 to 2^64 - 1.
  void AddSeed(CLI::App* cmd);
};

// How MPI jobs are started: the worker binary, a hostfile, the launcher and its arguments.
struct LauncherFlags {
  std::string worker, hostfile, launcher;
  std::vector<std::string> launcher_args;

  // --hostfile, --launcher and --launcher-arg as a cluster (engine/cluster.h).
  v1::Cluster Cluster() const;
  // --worker, --hostfile, --launcher (with the help `launcher_help`), --launcher-arg.
  void Add(CLI::App* cmd,
           const std::string& launcher_help = "launcher program instead of mpirun (e.g. srun)");
};

// What a command prints and where: JSON instead of text, an output file.
struct OutputFlags {
  bool json = false;
  std::string path;  // -o FILE; "-" (and, where the command says so, "") for stdout

  // --json, with the help `help` (which message the command prints).
  void AddJson(CLI::App* cmd, const std::string& help);
  // -o,--output FILE (required when `required`).
  void AddOutput(CLI::App* cmd, const std::string& help, bool required);
};

// Which of TargetFlags' flags a command has.
enum class TargetUse {
  kServer,           // --server
  kDatabase,         // --server or --db
  kStoringDatabase,  // --server, or --db and --no-db (a tune that stores its winner)
  kLocalDatabase,    // --db alone
};

// Where a command is answered: this process (with a tuning database) or meshtuned.
struct TargetFlags {
  std::string db;  // storage::DefaultDbPath() unless --db
  std::string server;
  bool no_db = false;

  // Starts with db = storage::DefaultDbPath(), as --db's help says.
  TargetFlags();
  // The flags `use` names; --db and --no-db exclude --server.
  void Add(CLI::App* cmd, TargetUse use);
  // The Backend that answers: meshtuned at --server, else this process with the database
  // (none with --no-db) and `settings`. Warnings go to stderr as "meshtune: MESSAGE".
  std::unique_ptr<engine::Backend> Make(engine::LocalTuneSettings settings = {}) const;
};

// The problem on a mesh and the trace of explain, run and codegen.
struct TraceFlags {
  WorkloadFlags workload;
  MeshFlags mesh;
  std::string trace;  // the trace file; "-" for stdin

  // In this order: --expr, --extents, --dtype, --mesh, --mem-per-rank, --layout,
  // --result-on-layer, --trace; --expr, --extents, --mesh and --trace are required when
  // `required` (codegen checks them itself).
  void Add(CLI::App* cmd, bool required);
  // The problem and mesh from the flags, and the trace read from the file. InvalidArgument
  // for a bad --layout, or the reader's error (naming the path) when it cannot be read.
  absl::Status Fill(v1::Problem* problem, v1::Mesh* mesh, v1::Trace* trace) const;
};

// The workload a tuning record is stored under: the problem, exactly one of --mesh and
// --ranks, and the hardware profile. A filter of lookup, records and records export.
struct RecordWorkloadFlags {
  WorkloadFlags problem;  // --expr, --extents, --dtype
  MeshFlags mesh;         // --mesh or --ranks (lookup: --mem-per-rank too)
  std::string profile;    // "" means "default"

  // In this order: --expr, --extents (both required when `required`), --dtype, --mesh,
  // --ranks, --profile.
  void Add(CLI::App* cmd, bool required);
  // OK when the problem and exactly one of --mesh and --ranks are given; otherwise
  // InvalidArgument naming the flags (the engine's messages name fields, not flags).
  absl::Status Check() const;
};

}  // namespace meshtune::cli

#endif  // MESHTUNE_CLI_FLAG_GROUPS_H_
