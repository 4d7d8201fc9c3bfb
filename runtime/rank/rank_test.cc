// RankRuntime over the in-process mesh (runtime/sim_comm.h), one thread a rank: each
// communication pattern (broadcast, all-gather, reductions, ring shifts, point-to-point)
// on a tiny hand-written program whose output verifies only if the pattern moved the right
// data; the checksum and bytes sent against values worked out by hand; and schedules that
// are wrong on purpose (no reduction, a shift the wrong way, a tampered output, a mis-set
// reference) reported as not verified, naming the first failing rank and element.
#include "runtime/rank/rank.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/fill.h"
#include "runtime/sim_comm.h"

namespace meshtune::runtime {
namespace {

constexpr uint64_t kSeed = 7;

// A tiny program for every rank of a mesh: its tensors, buffers and statement, and what
// each rank does per repetition (`body`, given its runtime).
struct MeshProgram {
  std::vector<int64_t> axis_sizes;
  std::vector<std::string> axis_names;
  std::vector<TensorSpec> tensors;
  std::vector<BufferSpec> buffers;
  ProblemSpec statement;  // its extents come from the tensors' shapes, accumulate from below
  bool accumulate = false;
  int warmup = 0, reps = 1;
  std::string fault;
  std::function<void(RankRuntimeBase&)> body;
};

// Runs `program` on every rank of a simulated mesh with `dtype_bytes` elements (4 or 8);
// returns rank 0's RunStats, or one whose error is the simulated world's when a rank
// aborted.
RunStats RunOnMesh(const MeshProgram& program, int dtype_bytes) {
  ProblemSpec problem = program.statement;
  problem.accumulate = program.accumulate;
  for (const TensorSpec& t : program.tensors) {
    for (size_t d = 0; d < t.dims.size(); ++d) problem.extents[t.dims[d]] = t.shape[d];
  }
  SimWorld world(program.axis_sizes, /*timeout_s=*/5);
  std::vector<RunStats> results(world.ranks());
  std::vector<std::thread> threads;
  for (int r = 0; r < world.ranks(); ++r) {
    threads.emplace_back([&, r] {
      try {
        std::unique_ptr<RankRuntimeBase> rt =
            MakeRankRuntime(dtype_bytes, world.CommFor(r), program.axis_names, program.tensors,
                            program.buffers, problem, program.accumulate, kSeed);
        RankRuntimeBase* runtime = rt.get();
        results[r] = rt->Measure([&] { program.body(*runtime); }, program.warmup, program.reps,
                                 program.fault, nullptr);
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
  // Every rank agrees on the verdict, the checksum and the worst bytes sent.
  for (const RunStats& m : results) {
    EXPECT_EQ(m.verified, results[0].verified);
    EXPECT_EQ(m.error, results[0].error);
    EXPECT_EQ(m.checksum, results[0].checksum);
    EXPECT_EQ(m.bytes_sent_max, results[0].bytes_sent_max);
  }
  return results[0];
}

// A tensor of global `shape` whose shard on a rank is `local` elements from block_start.
TensorSpec Tensor(const std::string& name, std::vector<std::string> dims,
                  std::vector<int64_t> shape, std::vector<int64_t> local, CoordsFn block_start,
                  bool is_output = false) {
  return TensorSpec{name,      std::move(dims),       std::move(shape), std::move(local),
                    is_output, std::move(block_start)};
}

// The value the runtime fills element `index` of `tensor` with, in the runtime's type.
double Value(const std::string& tensor, int64_t index, int dtype_bytes) {
  const double v = ElementValue(kSeed, tensor, index);
  return dtype_bytes == 4 ? static_cast<double>(static_cast<float>(v)) : v;
}

// The sum of the first `n` elements of `tensor`.
double Sum(const std::string& tensor, int64_t n, int dtype_bytes) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += Value(tensor, i, dtype_bytes);
  return s;
}

// C[i,j] (or C[i]) += A[i,j]: the copy statement that checks a transfer.
ProblemSpec Copy(std::vector<std::string> dims) {
  ProblemSpec s;
  s.output = {"C", dims};
  s.operands = {{"A", dims}};
  s.sum = true;
  return s;
}

// The kernel that adds `buffer` (a tile of `extents` over `dims`) into C at `c_offset`.
void AddInto(RankRuntimeBase& rt, const std::string& buffer, const std::vector<std::string>& dims,
             const std::vector<int64_t>& extents, const std::vector<int64_t>& c_offset) {
  rt.Kernel("copy", /*sum=*/true, dims, extents, OperandSpec{"C", "C", dims, c_offset},
            {OperandSpec{"A", buffer, dims, std::vector<int64_t>(dims.size(), 0)}});
}

// Matches a verification error: "rank (<coords>): C[<index>] = <got> but the reference is <ref>".
void ExpectVerificationError(const RunStats& m, const std::string& coords) {
  EXPECT_FALSE(m.verified);
  EXPECT_TRUE(std::regex_match(
      m.error,
      std::regex("rank \\(" + coords + "\\): C\\[[0-9, ]+\\] = \\S+ but the reference is \\S+")))
      << m.error;
}

class RankRuntimeTest : public ::testing::TestWithParam<int> {
 protected:
  int dtype() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Dtypes, RankRuntimeTest, ::testing::Values(4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 4 ? "f32" : "f64";
                         });

// A[2,6] split over a 2x2 mesh (i@x, j@y); C[2,6] split over y only. Each rank gets both
// rows of its columns by a broadcast along x from each root in turn.
MeshProgram BroadcastSetup() {
  MeshProgram s;
  s.axis_sizes = {2, 2};
  s.axis_names = {"x", "y"};
  s.tensors = {Tensor("A", {"i", "j"}, {2, 6}, {1, 3},
                      [](const Coords& c) {
                        return Coords{c[0], 3 * c[1]};
                      }),
               Tensor(
                   "C", {"i", "j"}, {2, 6}, {2, 3},
                   [](const Coords& c) {
                     return Coords{0, 3 * c[1]};
                   },
                   true)};
  s.buffers = {{"TA", {1, 3}}};
  s.statement = Copy({"i", "j"});
  s.body = [](RankRuntimeBase& rt) {
    for (int64_t root = 0; root < 2; ++root) {
      rt.Broadcast("A", "TA", {0, 0}, {0}, Coords{root, rt.coords()[1]});
      AddInto(rt, "TA", {"i", "j"}, {1, 3}, {root, 0});
    }
  };
  return s;
}

TEST_P(RankRuntimeTest, BroadcastFromEachRootFillsTheGroup) {
  const RunStats m = RunOnMesh(BroadcastSetup(), dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_EQ(m.error, "");
  // C is held twice (along x): the checksum is twice A's sum.
  EXPECT_NEAR(m.checksum, 2 * Sum("A", 12, dtype()), 1e-5);
  // Each rank is the root once and sends its 3 elements straight from its shard.
  EXPECT_EQ(m.bytes_sent_max, 3 * dtype());
  EXPECT_EQ(m.bytes_copied_max, 0);
  EXPECT_EQ(m.kernel_calls, 2);
  EXPECT_EQ(m.seconds.size(), 1u);
}

TEST_P(RankRuntimeTest, APrefetchedBroadcastFillsTheOtherHalfUntilWait) {
  // Root r+1's block is started (Async) before root r's is added: the kernel must still
  // read root r's block, and Wait must make root r+1's current.
  MeshProgram s = BroadcastSetup();
  s.body = [](RankRuntimeBase& rt) {
    auto fetch = [&rt](int64_t root) {
      rt.Async("TA");
      rt.Broadcast("A", "TA", {0, 0}, {0}, Coords{root, rt.coords()[1]});
    };
    fetch(0);
    for (int64_t root = 0; root < 2; ++root) {
      rt.Wait("TA");
      if (root + 1 < 2) fetch(root + 1);
      AddInto(rt, "TA", {"i", "j"}, {1, 3}, {root, 0});
    }
    rt.Wait("TA");  // nothing pending: does nothing
  };
  const RunStats m = RunOnMesh(s, dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, 2 * Sum("A", 12, dtype()), 1e-5);
  // Without the Wait the kernel reads the half that was current: root 0's block twice.
  s.body = [](RankRuntimeBase& rt) {
    rt.Broadcast("A", "TA", {0, 0}, {0}, Coords{0, rt.coords()[1]});
    AddInto(rt, "TA", {"i", "j"}, {1, 3}, {0, 0});
    rt.Async("TA");
    rt.Broadcast("A", "TA", {0, 0}, {0}, Coords{1, rt.coords()[1]});
    AddInto(rt, "TA", {"i", "j"}, {1, 3}, {1, 0});
  };
  ExpectVerificationError(RunOnMesh(s, dtype()), "x=0, y=0");
}

TEST_P(RankRuntimeTest, ABroadcastOfABoxNotContiguousInTheShardIsPackedByTheRoot) {
  // A[2,4] split over y=2 by columns (2x2 shards); each root broadcasts its two columns
  // one at a time — a [2,1] box, not contiguous in the shard, so the root packs it — and
  // every rank adds them into C[2,4] (whole on every rank).
  MeshProgram s;
  s.axis_sizes = {1, 2};
  s.axis_names = {"x", "y"};
  s.tensors = {Tensor("A", {"i", "j"}, {2, 4}, {2, 2},
                      [](const Coords& c) {
                        return Coords{0, 2 * c[1]};
                      }),
               Tensor(
                   "C", {"i", "j"}, {2, 4}, {2, 4},
                   [](const Coords&) {
                     return Coords{0, 0};
                   },
                   true)};
  s.buffers = {{"TA", {2, 1}}};
  s.statement = Copy({"i", "j"});
  s.body = [](RankRuntimeBase& rt) {
    for (int64_t root = 0; root < 2; ++root) {
      for (int64_t col = 0; col < 2; ++col) {
        rt.Broadcast("A", "TA", {0, col}, {1}, Coords{0, root});
        AddInto(rt, "TA", {"i", "j"}, {2, 1}, {0, 2 * root + col});
      }
    }
  };
  const RunStats m = RunOnMesh(s, dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, 2 * Sum("A", 8, dtype()), 1e-5);
  EXPECT_EQ(m.bytes_sent_max, 4 * dtype());
  EXPECT_EQ(m.bytes_copied_max, 4 * dtype());  // the root's 2 columns, packed
}

TEST_P(RankRuntimeTest, AnInjectedWrongElementIsReportedOnRankZero) {
  const RunStats clean = RunOnMesh(BroadcastSetup(), dtype());
  MeshProgram s = BroadcastSetup();
  s.fault = "wrong";
  const RunStats m = RunOnMesh(s, dtype());
  ExpectVerificationError(m, "x=0, y=0");
  // One element of rank 0's shard is off by one.
  EXPECT_NEAR(m.checksum, clean.checksum + 1, 1e-5);
}

TEST_P(RankRuntimeTest, BroadcastFromTheWrongRootIsNotVerified) {
  MeshProgram s = BroadcastSetup();
  s.body = [](RankRuntimeBase& rt) {
    for (int64_t root = 0; root < 2; ++root) {
      rt.Broadcast("A", "TA", {0, 0}, {0}, Coords{1 - root, rt.coords()[1]});  // rows swapped
      AddInto(rt, "TA", {"i", "j"}, {1, 3}, {root, 0});
    }
  };
  ExpectVerificationError(RunOnMesh(s, dtype()), "x=0, y=0");
}

TEST_P(RankRuntimeTest, AllGatherOfAlignedBlocks) {
  // A[4,6] split over 2x2 (i@x, j@y); C[4,6] split over y: gather whole columns along x.
  MeshProgram s;
  s.axis_sizes = {2, 2};
  s.axis_names = {"x", "y"};
  s.tensors = {Tensor("A", {"i", "j"}, {4, 6}, {2, 3},
                      [](const Coords& c) {
                        return Coords{2 * c[0], 3 * c[1]};
                      }),
               Tensor(
                   "C", {"i", "j"}, {4, 6}, {4, 3},
                   [](const Coords& c) {
                     return Coords{0, 3 * c[1]};
                   },
                   true)};
  s.buffers = {{"TA", {4, 3}}};
  s.statement = Copy({"i", "j"});
  s.body = [](RankRuntimeBase& rt) {
    rt.AllGather("A", "TA", {0, 3 * rt.coords()[1]}, {0});
    AddInto(rt, "TA", {"i", "j"}, {4, 3}, {0, 0});
  };
  const RunStats m = RunOnMesh(s, dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, 2 * Sum("A", 24, dtype()), 1e-5);
  EXPECT_EQ(m.bytes_sent_max, 6 * dtype());
  // Whole shards, landing as whole rows of the buffer: sent and received in place.
  EXPECT_EQ(m.bytes_copied_max, 0);
}

TEST_P(RankRuntimeTest, AllGatherOfColumnBlocksUnpacksThem) {
  // A[4,6] split over x=2 by columns (j@x); every rank gathers all of A. A rank's shard is
  // contiguous (sent in place) but its part of the buffer is not: received into a staging
  // array, then each of the 2 parts (12 elements) copied to its columns.
  MeshProgram s;
  s.axis_sizes = {2};
  s.axis_names = {"x"};
  s.tensors = {Tensor("A", {"i", "j"}, {4, 6}, {4, 3},
                      [](const Coords& c) {
                        return Coords{0, 3 * c[0]};
                      }),
               Tensor(
                   "C", {"i", "j"}, {4, 6}, {4, 6},
                   [](const Coords&) {
                     return Coords{0, 0};
                   },
                   true)};
  s.buffers = {{"TA", {4, 6}}};
  s.statement = Copy({"i", "j"});
  s.body = [](RankRuntimeBase& rt) {
    rt.AllGather("A", "TA", {0, 0}, {0});
    AddInto(rt, "TA", {"i", "j"}, {4, 6}, {0, 0});
  };
  const RunStats m = RunOnMesh(s, dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, 2 * Sum("A", 24, dtype()), 1e-5);
  EXPECT_EQ(m.bytes_sent_max, 12 * dtype());
  EXPECT_EQ(m.bytes_copied_max, 24 * dtype());
}

TEST_P(RankRuntimeTest, AllGatherOfBoxesAcrossShardBoundaries) {
  // A[4] split over x=2 (2 elements each), C[4] on every rank, gathered as the boxes
  // [0,1) (rank 0 only), [1,3) (one element from each) and [3,4) (rank 1 only).
  MeshProgram s;
  s.axis_sizes = {2};
  s.axis_names = {"x"};
  s.tensors = {Tensor("A", {"i"}, {4}, {2}, [](const Coords& c) { return Coords{2 * c[0]}; }),
               Tensor(
                   "C", {"i"}, {4}, {4}, [](const Coords&) { return Coords{0}; }, true)};
  s.buffers = {{"T0", {1}}, {"T1", {2}}, {"T2", {1}}};
  s.statement = Copy({"i"});
  s.body = [](RankRuntimeBase& rt) {
    const std::vector<std::pair<int64_t, int64_t>> boxes = {{0, 1}, {1, 2}, {3, 1}};
    for (size_t b = 0; b < boxes.size(); ++b) {
      const std::string buffer = "T" + std::to_string(b);
      rt.AllGather("A", buffer, {boxes[b].first}, {0});
      AddInto(rt, buffer, {"i"}, {boxes[b].second}, {boxes[b].first});
    }
  };
  const RunStats m = RunOnMesh(s, dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, 2 * Sum("A", 4, dtype()), 1e-5);
  EXPECT_EQ(m.bytes_sent_max, 2 * dtype());  // each rank contributes 2 elements in all
  EXPECT_EQ(m.bytes_copied_max, 0);          // 1-D boxes: all in place
}

// C[j] += A[i,j] with A's rows split over x=3: each rank sums its row into P, then `kind`
// combines the partial sums into C, replicated ([6] on every rank) or split (2 each).
MeshProgram ReduceSetup(const std::string& kind, bool split_output) {
  MeshProgram s;
  s.axis_sizes = {3};
  s.axis_names = {"x"};
  s.tensors = {Tensor("A", {"i", "j"}, {3, 6}, {1, 6}, [](const Coords& c) {
    return Coords{c[0], 0};
  })};
  if (split_output) {
    s.tensors.push_back(Tensor(
        "C", {"j"}, {6}, {2}, [](const Coords& c) { return Coords{2 * c[0]}; }, true));
  } else {
    s.tensors.push_back(Tensor(
        "C", {"j"}, {6}, {6}, [](const Coords&) { return Coords{0}; }, true));
  }
  s.buffers = {{"P", {6}}};
  s.statement.output = {"C", {"j"}};
  s.statement.operands = {{"A", {"i", "j"}}};
  s.statement.sum = true;
  s.body = [kind](RankRuntimeBase& rt) {
    rt.Zero("P");
    rt.Kernel("sum", true, {"i", "j"}, {1, 6}, OperandSpec{"C", "P", {"j"}, {0}},
              {OperandSpec{"A", "A", {"i", "j"}, {0, 0}}});
    rt.ReduceInto(kind, "C", "P", {0}, {0});
  };
  return s;
}

TEST_P(RankRuntimeTest, ReductionsSumThePartialsIntoTheHolders) {
  struct Case {
    std::string kind;
    bool split_output;
    int copies;         // how many ranks hold each element of C
    int elements_sent;  // per rank
  };
  for (const Case& c : {Case{"AllReduce", false, 3, 6}, Case{"Reduce", false, 3, 18},
                        Case{"ReduceScatter", true, 1, 6}}) {
    const RunStats m = RunOnMesh(ReduceSetup(c.kind, c.split_output), dtype());
    EXPECT_TRUE(m.verified) << c.kind << ": " << m.error;
    EXPECT_NEAR(m.checksum, c.copies * Sum("A", 18, dtype()), 1e-4) << c.kind;
    EXPECT_EQ(m.bytes_sent_max, c.elements_sent * dtype()) << c.kind;
    EXPECT_EQ(m.bytes_copied_max, 0) << c.kind;  // contiguous pieces go in place
  }
}

TEST_P(RankRuntimeTest, APrefetchedReductionLeavesTheOtherHalfToTheNextStep) {
  // C[j] in two halves of 3 columns: each step sums its half into P and starts the
  // reduction (Async); the next step's Zero and kernel must use P's other half.
  for (const std::string kind : {"AllReduce", "Reduce", "ReduceScatter"}) {
    MeshProgram s = ReduceSetup(kind, kind == "ReduceScatter");
    s.buffers = {{"P", {3}}};
    s.body = [kind](RankRuntimeBase& rt) {
      for (int64_t h = 0; h < 2; ++h) {
        rt.Zero("P");
        rt.Kernel("sum", true, {"i", "j"}, {1, 3}, OperandSpec{"C", "P", {"j"}, {0}},
                  {OperandSpec{"A", "A", {"i", "j"}, {0, 3 * h}}});
        rt.Wait("P");
        rt.Async("P");
        rt.ReduceInto(kind, "C", "P", {3 * h}, {0});
      }
      rt.Wait("P");
    };
    const RunStats m = RunOnMesh(s, dtype());
    EXPECT_TRUE(m.verified) << kind << ": " << m.error;
  }
}

TEST_P(RankRuntimeTest, AMissingReductionIsNotVerified) {
  // "Local" adds only this rank's partial sum: C misses the other rows.
  ExpectVerificationError(RunOnMesh(ReduceSetup("Local", true), dtype()), "x=0");
}

// A[3,4] split by rows over x=3, C[3,4] likewise but each rank holding row (x + `held`) % 3;
// the body copies the own row to TA, applies `step` and adds TA to C.
MeshProgram RingSetup(int64_t held, std::function<void(RankRuntimeBase&)> step) {
  MeshProgram s;
  s.axis_sizes = {3};
  s.axis_names = {"x"};
  s.tensors = {Tensor("A", {"i", "j"}, {3, 4}, {1, 4},
                      [](const Coords& c) {
                        return Coords{c[0], 0};
                      }),
               Tensor(
                   "C", {"i", "j"}, {3, 4}, {1, 4},
                   [held](const Coords& c) {
                     return Coords{(c[0] + held) % 3, 0};
                   },
                   true)};
  s.buffers = {{"TA", {1, 4}}};
  s.statement = Copy({"i", "j"});
  s.body = [step](RankRuntimeBase& rt) {
    rt.Local("A", "TA", {0, 0});
    step(rt);
    AddInto(rt, "TA", {"i", "j"}, {1, 4}, {0, 0});
  };
  return s;
}

TEST_P(RankRuntimeTest, ShiftStepBringsTheNeighboursBlock) {
  for (const int shift : {1, -1, 2}) {
    const RunStats m = RunOnMesh(
        RingSetup((shift + 3) % 3, [shift](RankRuntimeBase& rt) { rt.ShiftStep("TA", 0, shift); }),
        dtype());
    EXPECT_TRUE(m.verified) << "shift " << shift << ": " << m.error;
    EXPECT_NEAR(m.checksum, Sum("A", 12, dtype()), 1e-5);
    EXPECT_EQ(m.bytes_sent_max, 4 * dtype());
    // The Local reads the row in place, the shift sends it from there and receives into
    // the buffer: nothing is copied.
    EXPECT_EQ(m.bytes_copied_max, 0);
  }
}

TEST_P(RankRuntimeTest, APrefetchedShiftKeepsTheCurrentBlockUntilWait) {
  // Async shift: the kernel after it still reads the own row (C holds row x), and the
  // neighbour's row becomes current only at Wait.
  MeshProgram s = RingSetup(0, [](RankRuntimeBase& rt) {
    rt.Async("TA");
    rt.ShiftStep("TA", 0, 1);
  });
  const RunStats m = RunOnMesh(s, dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_EQ(m.bytes_sent_max, 4 * dtype());
  s = RingSetup(1, [](RankRuntimeBase& rt) {
    rt.Async("TA");
    rt.ShiftStep("TA", 0, 1);
    rt.Wait("TA");
  });
  EXPECT_TRUE(RunOnMesh(s, dtype()).verified);
}

TEST_P(RankRuntimeTest, AShiftTheWrongWayIsNotVerified) {
  const RunStats m =
      RunOnMesh(RingSetup(1, [](RankRuntimeBase& rt) { rt.ShiftStep("TA", 0, -1); }), dtype());
  ExpectVerificationError(m, "x=0");
}

TEST_P(RankRuntimeTest, ALocalCopyWithoutTheTransferIsNotVerified) {
  ExpectVerificationError(RunOnMesh(RingSetup(1, [](RankRuntimeBase&) {}), dtype()), "x=0");
  // The control: a copy where the block is the rank's own verifies.
  EXPECT_TRUE(RunOnMesh(RingSetup(0, [](RankRuntimeBase&) {}), dtype()).verified);
}

TEST_P(RankRuntimeTest, PointToPointFetchesFromEachRanksSource) {
  // Rank x needs row (2x) % 3: rank 0 its own, ranks 1 and 2 each other's.
  MeshProgram s = RingSetup(0, [](RankRuntimeBase&) {});
  s.tensors[1].block_start = [](const Coords& c) { return Coords{(2 * c[0]) % 3, 0}; };
  s.body = [](RankRuntimeBase& rt) {
    rt.PointToPoint(
        "A", "TA", [](const Coords& c) { return Coords{(2 * c[0]) % 3}; },
        [](const Coords&) {
          return std::vector<int64_t>{0, 0};
        });
    AddInto(rt, "TA", {"i", "j"}, {1, 4}, {0, 0});
  };
  const RunStats m = RunOnMesh(s, dtype());
  EXPECT_TRUE(m.verified) << m.error;
  EXPECT_NEAR(m.checksum, Sum("A", 12, dtype()), 1e-5);
  EXPECT_EQ(m.bytes_sent_max, 4 * dtype());  // rank 0 sends nothing, 1 and 2 one row each
}

// C[m,n] (+)= A[m,k] * B[k,n] on one rank in two k tiles through the "matmul" kernel (BLAS).
MeshProgram MatmulSetup(bool accumulate) {
  MeshProgram s;
  s.axis_sizes = {1};
  s.axis_names = {"x"};
  const CoordsFn origin = [](const Coords&) { return Coords{0, 0}; };
  s.tensors = {Tensor("A", {"m", "k"}, {4, 6}, {4, 6}, origin),
               Tensor("B", {"k", "n"}, {6, 5}, {6, 5}, origin),
               Tensor("C", {"m", "n"}, {4, 5}, {4, 5}, origin, true)};
  s.statement.output = {"C", {"m", "n"}};
  s.statement.operands = {{"A", {"m", "k"}}, {"B", {"k", "n"}}};
  s.accumulate = accumulate;
  s.body = [](RankRuntimeBase& rt) {
    for (int64_t k0 : {0, 3}) {
      rt.Kernel(
          "matmul", false, {"m", "n", "k"}, {4, 5, 3}, OperandSpec{"C", "C", {"m", "n"}, {0, 0}},
          {OperandSpec{"A", "A", {"m", "k"}, {0, k0}}, OperandSpec{"B", "B", {"k", "n"}, {k0, 0}}});
    }
  };
  return s;
}

TEST_P(RankRuntimeTest, MatmulTilesVerifyAndRepetitionsStartFromAFreshOutput) {
  for (const bool accumulate : {false, true}) {
    MeshProgram s = MatmulSetup(accumulate);
    s.warmup = 2;
    s.reps = 3;
    const RunStats m = RunOnMesh(s, dtype());
    // Without the reset before each repetition C would hold 5 products (or 5 starts).
    EXPECT_TRUE(m.verified) << "accumulate " << accumulate << ": " << m.error;
    EXPECT_EQ(m.seconds.size(), 3u);
    EXPECT_EQ(m.kernel_seconds.size(), 3u);
    EXPECT_EQ(m.kernel_calls, 2);
    EXPECT_EQ(m.bytes_sent_max, 0);
  }
}

TEST_P(RankRuntimeTest, AZeroedBufferIsOverwrittenByTheFirstGemmThatCoversIt) {
  // C = A * B through a partial buffer P: Zero, then two k tiles into P (the first with
  // beta 0, over whatever P held from the last repetition), then P added into C.
  for (const bool covering : {true, false}) {
    MeshProgram s = MatmulSetup(false);
    s.warmup = 1;
    s.reps = 2;
    s.buffers = {{"P", {4, 5}}};
    s.body = [covering](RankRuntimeBase& rt) {
      rt.Zero("P");
      // Not covering: the first tile writes rows 0-1 only, so P must be zeroed first.
      const std::vector<std::pair<int64_t, int64_t>> tiles =
          covering ? std::vector<std::pair<int64_t, int64_t>>{{0, 4}}
                   : std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 2}};
      for (int64_t k0 : {0, 3}) {
        for (const auto& [m0, rows] : tiles) {
          rt.Kernel("matmul", false, {"m", "n", "k"}, {rows, 5, 3},
                    OperandSpec{"C", "P", {"m", "n"}, {m0, 0}},
                    {OperandSpec{"A", "A", {"m", "k"}, {m0, k0}},
                     OperandSpec{"B", "B", {"k", "n"}, {k0, 0}}});
        }
      }
      rt.ReduceInto("Local", "C", "P", {0, 0}, {0});
    };
    const RunStats m = RunOnMesh(s, dtype());
    EXPECT_TRUE(m.verified) << "covering " << covering << ": " << m.error;
    EXPECT_EQ(m.bytes_copied_max, 0);
  }
}

TEST_P(RankRuntimeTest, AMisSetReferenceIsNotVerified) {
  // The kernels compute a product; the reference is told it is a sum.
  MeshProgram s = MatmulSetup(false);
  s.statement.sum = true;
  ExpectVerificationError(RunOnMesh(s, dtype()), "x=0");
}

}  // namespace
}  // namespace meshtune::runtime
