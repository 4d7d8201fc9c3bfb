// RankRuntime on shards whose blocks do not divide an extent (codegen/program.h, "ragged"),
// on hand-written programs over the in-process mesh: pieces taken from holders (an
// all-gather, the parts a reduce-scatter adds into) are clipped to the tensor's shape, so a
// holder of a short block sends its elements only and a holder of an empty block nothing;
// padding is neither checked, nor counted in the checksum, nor where an injected fault lands.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm.h"
#include "runtime/fill.h"
#include "runtime/rank/rank.h"
#include "runtime/sim_comm.h"

namespace meshtune::runtime {
namespace {

constexpr uint64_t kSeed = 7;

// What every rank sent, by call: per rank, the elements it passed to each Allgatherv, and
// the counts each ReduceScatterSum was given.
struct Traffic {
  std::mutex mu;
  std::map<int, std::vector<int64_t>> gathered;
  std::map<int, std::vector<std::vector<int>>> scattered;
};

// A Comm that records into `traffic` and forwards every call to `inner` (the non-blocking
// forms are the base class's, which call the blocking ones here).
class RecordingComm : public Comm {
 public:
  RecordingComm(std::unique_ptr<Comm> inner, Traffic* traffic)
      : Comm(inner->axis_sizes()), inner_(std::move(inner)), traffic_(traffic) {}
  int rank() const override { return inner_->rank(); }
  void Bcast(void* data, int64_t count, DataType type, const std::vector<int>& axes,
             const Coords& root) override {
    inner_->Bcast(data, count, type, axes, root);
  }
  void Allgatherv(const void* send, int64_t send_count, void* recv, const std::vector<int>& counts,
                  const std::vector<int>& displs, DataType type,
                  const std::vector<int>& axes) override {
    {
      std::lock_guard<std::mutex> lock(traffic_->mu);
      traffic_->gathered[rank()].push_back(send_count);
    }
    inner_->Allgatherv(send, send_count, recv, counts, displs, type, axes);
  }
  void SendrecvReplace(void* data, int64_t count, DataType type, int dest, int source) override {
    inner_->SendrecvReplace(data, count, type, dest, source);
  }
  void Exchange(const std::vector<Message>& sends, const Message& recv, DataType type) override {
    inner_->Exchange(sends, recv, type);
  }
  void Alltoallv(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                 DataType type) override {
    inner_->Alltoallv(sends, recvs, type);
  }
  void Allreduce(void* data, int64_t count, DataType type, ReduceOp op,
                 const std::vector<int>& axes) override {
    inner_->Allreduce(data, count, type, op, axes);
  }
  void ReduceSum(const void* send, void* recv, int64_t count, DataType type,
                 const std::vector<int>& axes, const Coords& root) override {
    inner_->ReduceSum(send, recv, count, type, axes, root);
  }
  void ReduceScatterSum(const void* send, void* recv, const std::vector<int>& counts, DataType type,
                        const std::vector<int>& axes) override {
    {
      std::lock_guard<std::mutex> lock(traffic_->mu);
      traffic_->scattered[rank()].push_back(counts);
    }
    inner_->ReduceScatterSum(send, recv, counts, type, axes);
  }
  void Barrier() override { inner_->Barrier(); }
  double Now() const override { return inner_->Now(); }

 private:
  std::unique_ptr<Comm> inner_;
  Traffic* traffic_;
};

struct MeshProgram {
  std::vector<int64_t> axis_sizes;
  std::vector<std::string> axis_names;
  std::vector<TensorSpec> tensors;
  std::vector<BufferSpec> buffers;
  ProblemSpec statement;  // its extents come from the tensors' shapes
  std::string fault;
  std::function<void(RankRuntimeBase&)> body;
};

// Runs `program` once on every rank of a simulated mesh, recording into `traffic`; rank 0's
// RunStats, or the simulated world's error.
RunStats RunOnMesh(const MeshProgram& program, int dtype_bytes, Traffic* traffic) {
  ProblemSpec problem = program.statement;
  for (const TensorSpec& t : program.tensors) {
    for (size_t d = 0; d < t.dims.size(); ++d) problem.extents[t.dims[d]] = t.shape[d];
  }
  SimWorld world(program.axis_sizes, /*timeout_s=*/5);
  std::vector<RunStats> results(world.ranks());
  std::vector<std::thread> threads;
  for (int r = 0; r < world.ranks(); ++r) {
    threads.emplace_back([&, r] {
      try {
        std::unique_ptr<RankRuntimeBase> rt = MakeRankRuntime(
            dtype_bytes, std::make_unique<RecordingComm>(world.CommFor(r), traffic),
            program.axis_names, program.tensors, program.buffers, problem, false, kSeed);
        RankRuntimeBase* runtime = rt.get();
        results[r] = rt->Measure([&] { program.body(*runtime); }, 0, 1, program.fault, nullptr);
      } catch (const SimAborted&) {
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (!world.error().empty()) {
    RunStats m;
    m.error = world.error();
    return m;
  }
  return results[0];
}

TensorSpec Tensor(const std::string& name, std::vector<std::string> dims,
                  std::vector<int64_t> shape, std::vector<int64_t> local, CoordsFn block_start,
                  bool is_output = false) {
  return TensorSpec{name,      std::move(dims),       std::move(shape), std::move(local),
                    is_output, std::move(block_start)};
}

double Sum(const std::string& tensor, int64_t n, int dtype_bytes) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = ElementValue(kSeed, tensor, i);
    s += dtype_bytes == 4 ? static_cast<double>(static_cast<float>(v)) : v;
  }
  return s;
}

// C[i] = A[i] (the copy statement).
ProblemSpec Copy() {
  ProblemSpec s;
  s.output = {"C", {"i"}};
  s.operands = {{"A", {"i"}}};
  s.sum = true;
  return s;
}

class RaggedRankTest : public ::testing::TestWithParam<int> {
 protected:
  int dtype() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Dtypes, RaggedRankTest, ::testing::Values(4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 4 ? "f32" : "f64";
                         });

TEST_P(RaggedRankTest, AnAllGatherTakesOnlyTheElementsOfEachBlock) {
  // A[5] in blocks of 2 over x=4: 2, 2, 1 and an empty block. Every rank gathers the whole
  // box [0, 8) (its storage past the shape) and copies its 5 elements into C, whole on every
  // rank (stored at 8: padding past 5).
  MeshProgram s;
  s.axis_sizes = {4};
  s.axis_names = {"x"};
  s.tensors = {Tensor("A", {"i"}, {5}, {2}, [](const Coords& c) { return Coords{2 * c[0]}; }),
               Tensor(
                   "C", {"i"}, {5}, {8}, [](const Coords&) { return Coords{0}; }, true)};
  s.buffers = {{"TA", {8}}};
  s.statement = Copy();
  s.body = [](RankRuntimeBase& rt) {
    rt.AllGather("A", "TA", {0}, {0});
    rt.Kernel("copy", true, {"i"}, {5}, OperandSpec{"C", "C", {"i"}, {0}},
              {OperandSpec{"A", "TA", {"i"}, {0}}});
  };
  Traffic traffic;
  const RunStats m = RunOnMesh(s, dtype(), &traffic);
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, 4 * Sum("A", 5, dtype()), 1e-5);  // 4 copies, no padding
  EXPECT_EQ(m.bytes_sent_max, 2 * dtype());
  const std::vector<int64_t> sent = {2, 2, 1, 0};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(traffic.gathered[r], std::vector<int64_t>{sent[r]}) << r;
}

TEST_P(RaggedRankTest, AReduceScatterAddsOnlyIntoTheElementsOfEachBlock) {
  // C[i] = sum over r of A[r, i]: rank x holds row x of A (stored at 8 columns, 5 of them
  // data), adds it into a partial buffer of 8, and the buffers are reduce-scattered onto C
  // in blocks of 2 (2, 2, 1 and an empty block).
  MeshProgram s;
  s.axis_sizes = {4};
  s.axis_names = {"x"};
  s.tensors = {Tensor("A", {"r", "i"}, {4, 5}, {1, 8},
                      [](const Coords& c) {
                        return Coords{c[0], 0};
                      }),
               Tensor(
                   "C", {"i"}, {5}, {2}, [](const Coords& c) { return Coords{2 * c[0]}; }, true)};
  s.buffers = {{"PartC", {8}}};
  s.statement.output = {"C", {"i"}};
  s.statement.operands = {{"A", {"r", "i"}}};
  s.body = [](RankRuntimeBase& rt) {
    rt.Zero("PartC");
    rt.Kernel("copy", true, {"i"}, {5}, OperandSpec{"C", "PartC", {"i"}, {0}},
              {OperandSpec{"A", "A", {"r", "i"}, {0, 0}}});
    rt.ReduceInto("ReduceScatter", "C", "PartC", {0}, {0});
  };
  Traffic traffic;
  const RunStats m = RunOnMesh(s, dtype(), &traffic);
  EXPECT_TRUE(m.verified) << m.error;
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(traffic.scattered[r], (std::vector<std::vector<int>>{{2, 2, 1, 0}})) << r;
}

// A[5] and C[5] in blocks of 3 over x=2 (3 and 2 + 1 of padding); C += A by a view of the
// whole block, padding and all.
MeshProgram ShortBlock() {
  MeshProgram s;
  s.axis_sizes = {2};
  s.axis_names = {"x"};
  s.tensors = {Tensor("A", {"i"}, {5}, {3}, [](const Coords& c) { return Coords{3 * c[0]}; }),
               Tensor(
                   "C", {"i"}, {5}, {3}, [](const Coords& c) { return Coords{3 * c[0]}; }, true)};
  s.buffers = {{"TA", {3}}};
  s.statement = Copy();
  s.body = [](RankRuntimeBase& rt) {
    rt.Local("A", "TA", {0});
    rt.Kernel("copy", true, {"i"}, {3}, OperandSpec{"C", "C", {"i"}, {0}},
              {OperandSpec{"A", "TA", {"i"}, {0}}});
  };
  return s;
}

TEST_P(RaggedRankTest, PaddingIsNeitherCheckedNorCounted) {
  Traffic traffic;
  const RunStats m = RunOnMesh(ShortBlock(), dtype(), &traffic);
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, Sum("A", 5, dtype()), 1e-5);
}

TEST_P(RaggedRankTest, AnInjectedFaultLandsOnAnElement) {
  // Rank 0's middle slot is an element; on a mesh whose rank 0 holds 1 element in 3 slots
  // (C stored at 3 but of 1 element) the fault still lands on it.
  MeshProgram s = ShortBlock();
  s.fault = "wrong";
  Traffic traffic;
  RunStats m = RunOnMesh(s, dtype(), &traffic);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error.rfind("rank (x=0): C[1] = ", 0), 0u) << m.error;
  s.tensors = {Tensor("A", {"i"}, {1}, {3}, [](const Coords& c) { return Coords{3 * c[0]}; }),
               Tensor(
                   "C", {"i"}, {1}, {3}, [](const Coords& c) { return Coords{3 * c[0]}; }, true)};
  m = RunOnMesh(s, dtype(), &traffic);
  EXPECT_FALSE(m.verified);
  EXPECT_EQ(m.error.rfind("rank (x=0): C[0] = ", 0), 0u) << m.error;
}

}  // namespace
}  // namespace meshtune::runtime
