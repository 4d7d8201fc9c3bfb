// RankRuntime: what one rank of a distributed schedule does, as plain calls.
//
// Shards filled from runtime/fill.h, transfer buffers, the communication patterns over a
// Comm (runtime/comm.h: MPI, or the in-process simulator's virtual ranks), local kernels,
// verification against an f64 reference, and the timing loop. The Program executor
// (executor.h), the simulator (simulator.h) and the C++ programs codegen/emit/emit_cpp.h writes
// all drive a RankRuntime, so the three have the same semantics. One object per rank; not
// thread-safe.
#ifndef MESHTUNE_RUNTIME_RANK_RANK_H_
#define MESHTUNE_RUNTIME_RANK_RANK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm.h"
#include "runtime/launch/repetitions.h"
#include "runtime/oracle.h"

namespace meshtune::runtime {

// A function of a rank's mesh coordinates (a source rank, a slice offset, a block start).
using CoordsFn = std::function<std::vector<int64_t>(const Coords&)>;

// A tensor the application holds in a layout of its own (codegen::TensorInfo::given): a
// timed run (Measure) starts from it, for an input or a `+=` output, and ends in it, for
// the output; the redistributions are part of the time.
struct GivenSpec {
  std::string layout;  // the spec, "cyclic(64,64)"
  // This rank's storage in that layout: per slot, the row-major global index of the
  // element it holds (-1: a slot no element uses).
  std::vector<int64_t> global;
  // Moves `from` (this rank's storage in one distribution) into `to` (in the other): a
  // collective of every rank over `comm`. `in`: given storage to shard (unset for an
  // output assigned with `=`); `out`: shard to given storage (unset for an input).
  using Move = std::function<void(const void* from, void* to, Comm& comm)>;
  Move in, out;
  int64_t in_bytes_sent = 0, out_bytes_sent = 0;  // by this rank, to other ranks
};

struct TensorSpec {
  std::string name;
  std::vector<std::string> dims;  // the index of each dim
  // The shard is stored at local_shape on every rank; its element l is the tensor's element
  // block_start + l when that lies within `shape`, else padding (blocks that do not divide
  // an extent, codegen/program.h): zero in shards this runtime fills, never filled from
  // runtime/fill.h, checked or counted; pieces taken from holders are clipped to `shape`.
  std::vector<int64_t> shape, local_shape;
  bool is_output = false;
  CoordsFn block_start;  // global index of the shard's first element on a rank
  // An input's axes it is replicated along (codegen::ReplicatedAxes): at each timed run
  // (Measure) the ranks off coordinate 0 of them get their copy by a broadcast from it.
  // An output's axes it ends on one layer along (codegen::LayerAxes): only the ranks at
  // coordinate 0 of them hold its result; reductions add into those alone.
  std::vector<int> replicated_axes;
  // Set when the application holds the tensor in a layout of its own; an input's
  // replicated_axes is then empty (the redistribution makes the copies).
  std::shared_ptr<const GivenSpec> given;
};

// Whether the rank at `coords` sits at coordinate 0 of every axis of t.replicated_axes: it
// holds the copy of input `t` the others are made from, or the result of output `t`.
bool AtCoordinateZero(const TensorSpec& t, const Coords& coords);

struct BufferSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// One operand of a kernel call: a tensor's shard (buffer == tensor) or a transfer buffer.
struct OperandSpec {
  std::string tensor, buffer;
  std::vector<std::string> dims;
  std::vector<int64_t> offset;
};

struct RunStats {
  bool verified = false;
  std::vector<double> seconds;         // per timed repetition, max over ranks
  std::vector<double> kernel_seconds;  // per timed repetition, max over ranks of local kernel time
  int64_t kernel_calls = 0;            // kernel calls per rank and repetition (rank 0)
  int64_t bytes_sent_max = 0;
  // Bytes the busiest rank packed or copied locally in one repetition (shard to buffer,
  // packing for a collective, unpacking after one); 0 when every transfer moved data
  // straight between shards, buffers and the network.
  int64_t bytes_copied_max = 0;
  double checksum = 0;
  std::string error;  // the lowest failing rank's message, on every rank
  // The timed repetitions form samples of `batch` consecutive repetitions each (the
  // sample's time the mean of its repetitions: runtime/launch/repetitions.h, SamplesOf).
  int batch = 1;
  // A program's statements (RunResult.statements): above 1, bytes_sent_max counts the moves
  // between them alone, and kernel_seconds and bytes_copied_max are not measured.
  int statements = 1;
};

class RankRuntimeBase {
 public:
  virtual ~RankRuntimeBase() = default;
  virtual const Coords& coords() const = 0;
  virtual void Zero(const std::string& buffer) = 0;
  virtual void Local(const std::string& tensor, const std::string& buffer,
                     const std::vector<int64_t>& offset) = 0;
  virtual void Broadcast(const std::string& tensor, const std::string& buffer,
                         const std::vector<int64_t>& offset, const std::vector<int>& axes,
                         const Coords& root) = 0;
  // Fills `buffer` (the global box at `offset`) from every rank along `axes`, each
  // contributing the part of the box it holds.
  virtual void AllGather(const std::string& tensor, const std::string& buffer,
                         const std::vector<int64_t>& offset, const std::vector<int>& axes) = 0;
  // Replaces `buffer` with the one of the neighbour at +shift along `axis` (a ring).
  virtual void ShiftStep(const std::string& buffer, int axis, int shift) = 0;
  // Fills `buffer` (on each rank the global box at offset(its coords)) piece by piece from
  // the ranks that hold it: a piece this rank's shard holds is copied locally, each other
  // from the rank holding that block that shares the most mesh coordinates with this one
  // (the lowest-numbered on ties); every rank of the mesh takes part (an all-to-all
  // exchange).
  virtual void AllToAll(const std::string& tensor, const std::string& buffer,
                        const CoordsFn& offset) = 0;
  // General transfer: every rank's source and source-side offset as functions of coords.
  virtual void PointToPoint(const std::string& tensor, const std::string& buffer,
                            const CoordsFn& source, const CoordsFn& offset) = 0;
  // Sums `buffer` (the global box at `offset`) into the holders: kind is "AllReduce",
  // "Reduce", "ReduceScatter" over `axes`, or "Local".
  virtual void ReduceInto(const std::string& kind, const std::string& tensor,
                          const std::string& buffer, const std::vector<int64_t>& offset,
                          const std::vector<int>& axes) = 0;
  // Double buffering, for prefetched transfers. After Async(buffer), the next transfer into
  // `buffer` (Local, Broadcast, AllGather, AllToAll, ShiftStep, PointToPoint) fills the buffer's
  // other half and may return before the data has arrived; kernels and transfers keep reading the
  // current half until Wait(buffer) completes the transfer and makes the filled half
  // current. For a partial-result buffer, after Async(buffer) the next ReduceInto from it
  // may return before the sum has landed in the holders, and Zero and kernels then use the
  // buffer's other half; Wait(buffer) completes that reduction. At most one transfer or
  // reduction per buffer is pending; Wait with none pending does nothing.
  virtual void Async(const std::string& buffer) = 0;
  virtual void Wait(const std::string& buffer) = 0;
  // out += in[0] * in[1] ... (or the sum) over the tile; "matmul*" kernels use BLAS.
  virtual void Kernel(const std::string& kernel, bool sum, const std::vector<std::string>& indices,
                      const std::vector<int64_t>& extents, const OperandSpec& out,
                      const std::vector<OperandSpec>& in) = 0;
  // Runs `body` warmup + reps times (output reset before each), then verifies the output
  // the ranks hold against the problem's reference and checks its coverage
  // (runtime/oracle.h); collective.
  // `inject_fault` "wrong" perturbs one output element on rank 0 (tests of the launcher).
  // `gate` (when not nullptr) decides the repetitions instead of warmup and reps
  // (runtime/launch/repetitions.h).
  virtual RunStats Measure(const std::function<void()>& body, int warmup, int reps,
                           const std::string& inject_fault, RepetitionGate* gate) = 0;
  // A runtime from MakeBoundRankRuntime works on the caller's memory: Bind makes `data`
  // (dense, row-major, the tensor's local shape, padding included; const for inputs in
  // spirit: inputs are only read) `tensor`'s shard on this rank until bound again.
  virtual void Bind(const std::string& tensor, void* data) = 0;
  // Runs `body` once on the bound shards, the output zeroed first unless the statement
  // accumulates (+=), and completes every transfer it started. Returns "" or what is
  // wrong: a tensor not bound, or a runtime that owns its shards (MakeRankRuntime). Not
  // collective on error: every rank must bind alike.
  virtual std::string Run(const std::function<void()>& body) = 0;
};

// A runtime for f32 (dtype_bytes 4) or f64 (8) over `comm` (one rank of the mesh).
// `accumulate` is the program's ('+=': the output starts from its filled values); Measure
// checks the output against `problem` (the problem as stated, not as lowered) filled from
// `seed`.
std::unique_ptr<RankRuntimeBase> MakeRankRuntime(int dtype_bytes, std::unique_ptr<Comm> comm,
                                                 const std::vector<std::string>& axis_names,
                                                 std::vector<TensorSpec> tensors,
                                                 std::vector<BufferSpec> buffers,
                                                 ProblemSpec problem, bool accumulate,
                                                 uint64_t seed);

// A runtime over the caller's memory (Bind, Run): no shards allocated or filled, no
// verification; transfer buffers allocated once, here.
std::unique_ptr<RankRuntimeBase> MakeBoundRankRuntime(int dtype_bytes, std::unique_ptr<Comm> comm,
                                                      const std::vector<std::string>& axis_names,
                                                      std::vector<TensorSpec> tensors,
                                                      std::vector<BufferSpec> buffers,
                                                      bool accumulate);

}  // namespace meshtune::runtime

#endif  // MESHTUNE_RUNTIME_RANK_RANK_H_
