// meshtune's C++ API for MPI applications: a plan for one tensor statement on the
// application's communicator, and its execution on the application's own shards.
//
//   meshtune::PlanOptions o;
//   o.wisdom_file = "wisdom.jsonl";  // `meshtune records export > wisdom.jsonl`
//   auto plan = meshtune::Plan::Create("C[m,n] += A[m,k] * B[k,n]", "m=2048,n=2048,k=2048",
//                                      MPI_COMM_WORLD, o);
//   // each rank: plan->Shard("A") says which block of A it holds (global start, extents,
//   // row-major strides); allocate each shard's array (Elements(extents) elements, the
//   // plan writes nothing past them: ShardLayout), fill it, then, as often as needed:
//   plan->Execute({c, a, b});  // in plan->tensors() order
//
// `expr` may be a program of several statements (ir/statement_program.h: separated by ';' or
// newlines, sharing tensor names), planned from a wisdom record of the program (`meshtune
// tune` of it, exported) or by estimate: tensors() are then all the program's tensors, the
// intermediates too, and one Execute runs every statement and the moves between them.
//
// Create and Execute are collective over the communicator. A plan is not thread-safe: one
// Execute at a time; plans are independent of each other. Destroy plans before MPI_Finalize.
//
// A schedule may use fewer ranks than the communicator has (a record tuned with
// `--allow-idle-ranks`, a smaller `mesh`, or allow_idle_ranks in estimate and measure
// modes): it then runs on the communicator's first mesh-size ranks, and the others are idle
// (active() false, empty shards, Execute returns at once).
#ifndef MESHTUNE_PLAN_H_
#define MESHTUNE_PLAN_H_

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace meshtune {

namespace internal {
class ShardStaging;  // meshtune/shard_staging.h
}  // namespace internal
namespace engine {
struct ScheduleJob;  // engine/job.h
}  // namespace engine
namespace runtime {
class BoundProgram;     // runtime/executor.h
class BoundStatements;  // runtime/bound_statements.h
class LibraryChain;     // runtime/library/library_run.h
}  // namespace runtime

enum class PlanMode {
  kWisdom,    // the best record of the workload in `wisdom_file`; NotFound when absent
  kEstimate,  // a model-only search on rank 0 (nothing run), its winner sent to every rank
  // A tune on this communicator: rank 0 searches, the top_k candidates run in-process on
  // the application's ranks (verified against the reference, timed; no mpirun), with
  // allow_library ScaLAPACK's GEMM at its most promising grids beside them; the fastest
  // verified one wins (the library unless a schedule is faster beyond the noise:
  // search/decision.h).
  // With wisdom_file, the winner is merged into that file.
  kMeasure,
};

struct PlanOptions {
  PlanMode mode = PlanMode::kWisdom;
  // kWisdom: a wisdom file (`meshtune records export`) to read. kMeasure: the file the
  // winner is merged into (created when missing), or "" to keep it nowhere.
  std::string wisdom_file;
  std::string mesh;     // e.g. "x=2,y=2"; "" derives the meshes from the communicator's size
  std::string profile;  // hardware profile (estimate) or the records' profile; "" "default"
  // kEstimate and kMeasure with no profile named: when no hardware profile answers for the
  // communicator's size (engine/tune/machine_profile.h), Create first measures one on the
  // communicator (the quick form, a few seconds, collective), stores it as "auto-SIZE" and
  // says so on rank 0's stderr. False, or MESHTUNE_CALIBRATE=0, keeps the built-in numbers.
  bool calibrate = true;
  std::string dtype = "f32";
  // kEstimate and kMeasure without a mesh: also meshes down to half the ranks (the rest idle).
  bool allow_idle_ranks = false;
  // kMeasure: candidates measured side by side, and rounds at least (after `warmup`) of
  // them, each round a sample of every candidate (runtime/launch/rounds.h; 6 give a 95% interval).
  int top_k = 4, reps = 6, warmup = 1;
  // kMeasure, a problem of matmul form: also time ScaLAPACK's GEMM on these ranks, and plan
  // its call unless a schedule beats it beyond the noise (search/decision.h; library() then
  // says so, and every
  // shard is block-cyclic: ShardLayout::layout "cyclic(NB,NB)"). Off by default: an
  // application that reads shards as blocks (start and extents) would misread them.
  bool allow_library = false;
  // Where the application holds its tensors, as ExecuteInLayouts takes them (tensor to
  // `--layout` spec): the choice weighs their redistributions, and prefers a schedule
  // whose shards are the application's arrays. Part of the workload in wisdom files.
  std::map<std::string, std::string> layouts;
  // An output the schedule copies along a mesh axis ends on the copies at coordinate 0 of
  // it alone (saves the last step; ShardLayout::holds_result says where); by default every
  // copy holds the result after Execute.
  bool result_on_layer = false;
};

// Where this rank's shard of a tensor lies: the global index of its first element, its
// extents (the elements it holds), and the strides of the application's array of it
// (row-major, in elements). Where the schedule's blocks do not divide an extent, every rank
// stores the full block (`storage`) and holds its first `extents` along each dim: the last
// block's are fewer, and a rank past the end holds none (extents 0).
//
// The application's arrays (Plan::ProvideStorage says which contract): by default each is
// dense at the extents, Elements(extents) elements at the strides of the extents, and no
// call of the plan reads or writes past them (where the storage is larger the plan runs the
// schedule on storage of its own, copying the shard in and out). With ProvideStorage(true)
// each holds the whole storage, Elements(storage) elements at the storage's strides, the
// part past the extents the schedule's scratch, and the schedule runs on it in place.
//
// A plan that is the library call (library() not empty) holds every tensor block-cyclic
// instead, in the layout `layout` names ("cyclic(NB,NB)", as ExecuteInLayouts takes it: the
// tensor [i, j] is the matrix element (i, j), on the prow x pcol grid of mesh()): `extents`
// are this rank's local rows and columns (LOCr, LOCc), `strides` {1, lld} (column-major,
// leading dimension max(1, LOCr)), `storage` {lld, LOCc}, and `start` the global index of
// its first element (all zero when it holds none). Its arrays hold Elements(extents)
// elements by default, Elements(storage) with ProvideStorage(true) (they differ only on a
// rank that holds none).
struct ShardLayout {
  std::vector<int64_t> start, extents, strides, storage;
  std::string layout;  // "" for the schedule's block above; "cyclic(NB,NB)" for the library
  // False only for the output on a rank off the layer it ends on (with
  // PlanOptions::result_on_layer, a schedule that copies the output along a mesh axis
  // reduces it onto coordinate 0 there): the shard is scratch Execute still needs, and
  // after it holds no result; Gather skips it.
  bool holds_result = true;
};

class Plan {
 public:
  // A plan for `expr` with `extents` on `comm`. InvalidArgument for a bad statement, mesh
  // or option (for a program of several statements also layouts, "a plan of a program of
  // several statements takes no layouts: ...", and result_on_layer);
  // NotFound "no tuning record for ... in WISDOM_FILE" for a workload the wisdom file does not
  // hold; FailedPrecondition when the schedule's mesh has more ranks than the communicator, or
  // (kMeasure) when no candidate verified; ResourceExhausted "rank R: cannot allocate the
  // schedule's transfer buffers on this rank (N GiB)". Collective: every rank gets the same plan or
  // the same error.
  static absl::StatusOr<std::unique_ptr<Plan>> Create(const std::string& expr,
                                                      const std::string& extents, MPI_Comm comm,
                                                      const PlanOptions& options);
  ~Plan();

  // The statement's tensors, the output first: the order Execute takes their shards in. For
  // a program, every tensor once in order of first appearance, statement by statement (its
  // output, then its operands): an intermediate's shard is where the statement writing it
  // leaves it, an input's where the first statement reading it reads it; Execute moves a
  // tensor a later statement reads in another layout into buffers of its own.
  const std::vector<std::string>& tensors() const { return tensors_; }
  // This rank's shard of `tensor` (empty extents, all zero, on an idle rank); NotFound for
  // a name not in tensors().
  absl::StatusOr<ShardLayout> Shard(const std::string& tensor) const;
  // The global shape of `tensor` (its extents along its indices, in order); NotFound for a
  // name not in tensors().
  absl::StatusOr<std::vector<int64_t>> Shape(const std::string& tensor) const;
  // "f32" or "f64": the element type of every shard.
  const std::string& dtype() const { return dtype_; }
  // The schedule and its mesh. For the library call, trace() is empty and mesh() its grid,
  // "x=PROW,y=PCOL".
  const std::string& trace() const { return trace_; }
  const std::string& mesh() const { return mesh_; }
  // "PSGEMM 2x2, NB 64" when the plan is ScaLAPACK's GEMM on block-cyclic shards (a wisdom
  // record whose answer is the library, or a measure-mode tune the library won); "" for a
  // schedule.
  const std::string& library() const { return library_text_; }
  // Whether this rank runs the schedule (false on ranks beyond the mesh's, which are idle).
  bool active() const {
    return program_ != nullptr || statements_ != nullptr || library_ != nullptr;
  }
  // kMeasure: the winner's measured median in seconds; kWisdom: the record's, when it was
  // measured; otherwise (and for kEstimate) negative.
  double measured_seconds() const { return measured_s_; }
  // Whether Create took the lowered program the wisdom record carries (no isl on any rank);
  // false when it lowered the trace (an estimate, or a record without a program whose
  // digest matches: engine/wisdom.h).
  bool program_from_wisdom() const { return program_from_wisdom_; }

  // Which arrays this rank's application passes (ShardLayout): false (the default, set at
  // Create) arrays of the extents, dense at Shard's strides, never written or read past
  // them (the plan keeps storage of its own for shards whose storage is larger, allocated
  // here and at Create); true arrays of the whole storage, used in place (the plan's own
  // storage released). Changes Shard's strides and what Execute, ExecuteInLayouts (for the
  // tensors in their shards), Scatter and Gather take. Local to this rank (every rank may
  // choose); ResourceExhausted "cannot allocate the plan's storage of ragged shards on this
  // rank (N)" when switching back to false fails (the contract is then unchanged).
  absl::Status ProvideStorage(bool provides);
  bool provides_storage() const { return provides_storage_; }

  // Runs the schedule once on this rank's shards (one pointer per tensor, in tensors()
  // order, each as Shard describes under the ProvideStorage contract; f32 or f64 as the
  // plan's dtype). Inputs are only read; the output is overwritten for `=` and added to for
  // `+=`; nothing is written outside the arrays the contract asks for. Buffers are
  // allocated at Create, none here. InvalidArgument when the number of pointers is wrong.
  // Collective over the active ranks; returns at once on an idle rank.
  absl::Status Execute(const std::vector<void*>& shards);

  // Runs the schedule once on tensors the application holds in given layouts instead of
  // the plan's shards. `layouts` maps tensor names to specs: "cyclic(MB,NB)" is ScaLAPACK's
  // block-cyclic layout over the first two axes of the plan's mesh (process grid rows the
  // first axis, row-major: BLACS "Row" order; each local matrix column-major, leading
  // dimension max(1, LOCr), RSRC = CSRC = 0), "root" the whole tensor row-major on rank 0,
  // "replicated" on every rank; a tensor not named (or "block") is in its shard as Shard
  // says (under the ProvideStorage contract). `data` holds one pointer per tensor in
  // tensors() order: this rank's storage of it in its layout (none needed on a rank that
  // holds nothing of it). The inputs are redistributed into the schedule's shards, the
  // schedule runs, and the output goes back into its layout (for `+=` what it held is added
  // to). Allocates the shards of the tensors it redistributes at each call. InvalidArgument
  // for a bad or unknown layout, a cyclic layout of a tensor that is not a matrix, or the
  // wrong number of pointers; FailedPrecondition when the schedule leaves ranks idle.
  // Collective.
  absl::Status ExecuteInLayouts(const std::map<std::string, std::string>& layouts,
                                const std::vector<void*>& data);

  // Helpers for applications that hold whole tensors on one rank. Scatter: `root`'s
  // `global` (the whole tensor, row-major; read on root only) becomes every rank's `shard`
  // (as Shard describes, under the ProvideStorage contract: only its extents are written).
  // Gather: every rank's `shard` assembled into `global` on `root` (a block held by several
  // ranks is the same on each; any copy lands). Collective; NotFound for a name not in
  // tensors(), InvalidArgument for a root outside the communicator.
  absl::Status Scatter(const std::string& tensor, const void* global, void* shard, int root);
  absl::Status Gather(const std::string& tensor, const void* shard, void* global, int root);

 private:
  Plan() = default;
  // Scatter (`in` the whole tensor, `out` the shard) or Gather (`in` the shard, `out` the
  // whole tensor) of `tensor` through `root`.
  absl::Status Move(const std::string& tensor, int root, bool gather, const void* in, void* out);
  // The same for a library plan's block-cyclic tensor `t` (plan_layouts.cc).
  absl::Status MoveCyclic(size_t t, int root, bool gather, const void* in, void* out);
  // ExecuteInLayouts of a library plan (plan_layouts.cc).
  absl::Status ExecuteLibraryInLayouts(const std::map<std::string, std::string>& layouts,
                                       const std::vector<void*>& data);
  // What a program of several statements cannot take: given layouts, result_on_layer
  // (plan_program.cc).
  static absl::Status CheckProgramOptions(const PlanOptions& o);
  // Sets this plan up as the program of several statements job_ holds, with its traces on
  // its mesh: every statement lowered on every rank, bound on the active ranks
  // (plan_program.cc). Collective.
  absl::Status BindStatements();
  // Sets this plan up as the library call `library` (a serialized meshtune.v1.LibraryRun)
  // for `problem` on comm_ (plan_library.cc). Collective.
  absl::Status BindLibrary(const std::string& library);
  // The library plan's shard of tensor `t`.
  ShardLayout LibraryShard(size_t t) const;
  // Tensor t's shard at its storage's strides (what the schedule runs on).
  ShardLayout StoredShard(size_t t) const;
  // Sets staging_ up from the shards and reads_/writes_, the plan's own storage kept
  // (plan_staging.cc); the lowest failing rank's status on every rank. Collective.
  absl::Status StageShards();
  // Runs the schedule (program_, statements_ or library_) on `shards` in tensors() order,
  // through staging_: shards[t] holds tensor t's storage when at_storage[t], else its
  // extents (plan_staging.cc).
  absl::Status RunStaged(const std::vector<void*>& shards, const std::vector<bool>& at_storage);
  // The schedule run once on `stored`, each tensor's storage in tensors() order.
  absl::Status RunSchedule(const std::vector<void*>& stored);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm active_comm_ = MPI_COMM_NULL;  // the first mesh-size ranks, when fewer than comm_'s
  int element_bytes_ = 4;
  double measured_s_ = -1;
  std::vector<std::vector<int64_t>> shapes_;  // each tensor's global shape
  std::vector<std::string> tensors_;
  std::string trace_, mesh_, dtype_;  // as trace(), mesh() and dtype() show them
  // The plan's values, read once in Create: the program as stated (without given layouts),
  // the schedule's mesh and a program's traces (plan.cc, JobOfChoice).
  std::unique_ptr<engine::ScheduleJob> job_;
  bool program_from_wisdom_ = false;
  std::unique_ptr<runtime::BoundProgram> program_;
  // A program of several statements instead: its statements bound on this rank (null when
  // idle), and their number (0 for one statement).
  std::unique_ptr<runtime::BoundStatements> statements_;
  int statement_count_ = 0;
  // A library plan: the calls bound to comm_ (one a statement), "PSGEMM 2x2, NB 64", the
  // grid and block size, and which of the chain's tensors each tensor is.
  std::unique_ptr<runtime::LibraryChain> library_;
  std::string library_text_;
  int64_t prow_ = 0, pcol_ = 0, nb_ = 0;
  std::vector<int> library_part_;
  // Per tensor: whether the schedule reads its values (an input, a `+=` output) and writes
  // it; this rank's shards as the application holds them and the plan's storage of the
  // ragged ones (plan_staging.cc); the ProvideStorage contract.
  std::vector<bool> reads_, writes_;
  std::unique_ptr<internal::ShardStaging> staging_;
  bool provides_storage_ = false;
};

}  // namespace meshtune

#endif  // MESHTUNE_PLAN_H_
