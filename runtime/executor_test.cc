// The executor's calls of the runtime: a prefetched transfer starts the next step's fetch
// (Async) after waiting for its own, before the kernel; a prefetched reduction waits for
// the previous step's and the loop waits for the last (codegen/program.h). A runtime that
// records its calls stands in for RankRuntime.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "codegen/lower.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "tests/lower_text.h"
#include "tests/test_util.h"

namespace meshtune::runtime {
namespace {

using ::meshtune::testing::LowerText;
using ::meshtune::testing::ReadFile;

// Records each call as one line; computes nothing.
class Recorder : public RankRuntimeBase {
 public:
  explicit Recorder(Coords coords) : coords_(std::move(coords)) {}
  const Coords& coords() const override { return coords_; }
  void Zero(const std::string& buffer) override { Log("Zero ", buffer); }
  void Local(const std::string& tensor, const std::string& buffer,
             const std::vector<int64_t>& offset) override {
    Log("Local ", tensor, " at [", absl::StrJoin(offset, ","), "] -> ", buffer);
  }
  void Broadcast(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes,
                 const Coords& root) override {
    Log("Broadcast ", tensor, " at [", absl::StrJoin(offset, ","), "] from (",
        absl::StrJoin(root, ","), ") along [", absl::StrJoin(axes, ","), "] -> ", buffer);
  }
  void AllGather(const std::string& tensor, const std::string& buffer,
                 const std::vector<int64_t>& offset, const std::vector<int>& axes) override {
    Log("AllGather ", tensor, " at [", absl::StrJoin(offset, ","), "] along [",
        absl::StrJoin(axes, ","), "] -> ", buffer);
  }
  void AllToAll(const std::string& tensor, const std::string& buffer,
                const CoordsFn& offset) override {
    Log("AllToAll ", tensor, " at [", absl::StrJoin(offset(coords_), ","), "] -> ", buffer);
  }
  void ShiftStep(const std::string& buffer, int axis, int shift) override {
    Log("ShiftStep ", buffer, " along ", axis, " by ", shift);
  }
  void PointToPoint(const std::string& tensor, const std::string& buffer, const CoordsFn& source,
                    const CoordsFn& offset) override {
    Log("PointToPoint ", tensor, " at [", absl::StrJoin(offset(coords_), ","), "] from (",
        absl::StrJoin(source(coords_), ","), ") -> ", buffer);
  }
  void ReduceInto(const std::string& kind, const std::string& tensor, const std::string& buffer,
                  const std::vector<int64_t>& offset, const std::vector<int>& axes) override {
    Log(kind, " ", buffer, " -> ", tensor, " at [", absl::StrJoin(offset, ","), "] along [",
        absl::StrJoin(axes, ","), "]");
  }
  void Async(const std::string& buffer) override { Log("Async ", buffer); }
  void Wait(const std::string& buffer) override { Log("Wait ", buffer); }
  void Kernel(const std::string& kernel, bool, const std::vector<std::string>&,
              const std::vector<int64_t>&, const OperandSpec& out,
              const std::vector<OperandSpec>& in) override {
    std::vector<std::string> ins;
    for (const OperandSpec& o : in)
      ins.push_back(absl::StrCat(o.buffer, "[", absl::StrJoin(o.offset, ","), "]"));
    Log(kernel, " ", out.buffer, "[", absl::StrJoin(out.offset, ","), "] <- ",
        absl::StrJoin(ins, ", "));
  }
  RunStats Measure(const std::function<void()>& body, int, int, const std::string&,
                   RepetitionGate*) override {
    body();
    return {};
  }
  void Bind(const std::string& tensor, void*) override { Log("Bind ", tensor); }
  std::string Run(const std::function<void()>& body) override {
    body();
    return "";
  }
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  template <typename... Args>
  void Log(const Args&... args) {
    calls_.push_back(absl::StrCat(args...));
  }
  Coords coords_;
  std::vector<std::string> calls_;
};

std::vector<std::string> Calls(const codegen::Program& p, const Coords& rank) {
  Recorder r(rank);
  Interpret(p, &r);
  return r.calls();
}

std::string Example(const std::string& name, const std::string& from, const std::string& to) {
  return absl::StrReplaceAll(ReadFile("examples/" + name + ".trace"), {{from, to}});
}

TEST(ExecutorTest, PrefetchedSummaStartsTheNextBroadcastsBeforeTheKernel) {
  const codegen::Program p =
      LowerText("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=2,y=2",
                Example("summa_prefetch", "divide(k, ko, ki, 8)", "divide(k, ko, ki, 2)"));
  // Rank (x=1, y=0), ko in 0..1: A's root is (1, ko), B's (ko, 0).
  EXPECT_EQ(Calls(p, {1, 0}), (std::vector<std::string>{
                                  "Broadcast A at [0,0] from (1,0) along [1] -> TransA",
                                  "Wait TransA",
                                  "Async TransA",
                                  "Broadcast A at [0,0] from (1,1) along [1] -> TransA",
                                  "Broadcast B at [0,0] from (0,0) along [0] -> TransB",
                                  "Wait TransB",
                                  "Async TransB",
                                  "Broadcast B at [0,0] from (1,0) along [0] -> TransB",
                                  "matmul C[0,0] <- TransA[0,0], TransB[0,0]",
                                  "Wait TransA",
                                  "Wait TransB",
                                  "matmul C[0,0] <- TransA[0,0], TransB[0,0]",
                              }));
  // Without prefetch: one broadcast of each per step, no Async or Wait.
  const codegen::Program plain =
      LowerText("C[m,n] += A[m,k] * B[k,n]", "m=8,n=8,k=8", "x=2,y=2",
                Example("summa", "divide(k, ko, ki, 8)", "divide(k, ko, ki, 2)"));
  EXPECT_EQ(Calls(plain, {1, 0}), (std::vector<std::string>{
                                      "Broadcast A at [0,0] from (1,0) along [1] -> TransA",
                                      "Broadcast B at [0,0] from (0,0) along [0] -> TransB",
                                      "matmul C[0,0] <- TransA[0,0], TransB[0,0]",
                                      "Broadcast A at [0,0] from (1,1) along [1] -> TransA",
                                      "Broadcast B at [0,0] from (1,0) along [0] -> TransB",
                                      "matmul C[0,0] <- TransA[0,0], TransB[0,0]",
                                  }));
}

TEST(ExecutorTest, APrefetchedRingStartsWithAFetchThenStepsAhead) {
  const codegen::Program p =
      LowerText("C[m,n] = A[k,m] * B[k,n]", "m=8,k=4,n=8", "x=2",
                Example("allgather_gemm_prefetch", "divide(n, no, ni, 4)", "divide(n, no, ni, 2)"));
  // Rank 1, no in 0..1: the first block is fetched point to point (its own, block 1), the
  // ring step for no = 1 is started (sending the current half) before no = 0's kernel.
  EXPECT_EQ(Calls(p, {1}), (std::vector<std::string>{
                               "PointToPoint B at [0,0] from (1) -> TransB",
                               "Wait TransB",
                               "Async TransB",
                               "ShiftStep TransB along 0 by 1",
                               "matmul_ta C[0,4] <- A[0,0], TransB[0,0]",
                               "Wait TransB",
                               "matmul_ta C[0,0] <- A[0,0], TransB[0,0]",
                           }));
}

TEST(ExecutorTest, APrefetchedReductionWaitsForThePreviousStepAndAfterTheLoop) {
  const codegen::Program p =
      LowerText("C[m,n] = A[m,k] * B[k,n]", "m=8,k=8,n=8", "x=2",
                Example("gemm_reducescatter", "divide(n, no, ni, 4)", "divide(n, no, ni, 2)"));
  EXPECT_EQ(Calls(p, {1}), (std::vector<std::string>{
                               "Zero PartC",
                               "matmul PartC[0,0] <- A[0,0], B[0,0]",
                               "Wait PartC",
                               "Async PartC",
                               "ReduceScatter PartC -> C at [0,0] along [0]",
                               "Zero PartC",
                               "matmul PartC[0,0] <- A[0,0], B[0,4]",
                               "Wait PartC",
                               "Async PartC",
                               "ReduceScatter PartC -> C at [0,4] along [0]",
                               "Wait PartC",
                           }));
}

}  // namespace
}  // namespace meshtune::runtime
