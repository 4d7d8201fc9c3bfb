// An MPI application that computes through meshtune's C++ API (meshtune/plan.h), in the
// two ways an application holds its data:
//
//   1. GEMM C[m,n] += A[m,k] * B[k,n]: every rank fills its own shards where the plan says
//      (Plan::Shard), runs the plan twice, and checks its block of C against a serial
//      reference computed from the same formula.
//   2. A batched matrix-vector contraction y[b,i] = M[b,i,j] * x[b,j]: rank 0 holds the
//      whole tensors, Plan::Scatter hands out the shards, Plan::Gather brings y back, and
//      rank 0 checks it against a serial reference.
//
//   mpirun -n 4 api_app [--mode estimate|measure|wisdom] [--wisdom FILE]
//
// estimate (the default) asks the cost model, measure tunes on these ranks (and merges the
// winner into --wisdom FILE when given), wisdom reads the schedule from FILE (written by
// `meshtune records export`, or by an earlier measure run). Rank 0 prints one line per
// statement, e.g. "gemm: x=2,y=2, max error 0, verified"; exit status 0 when both verified.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "meshtune/plan.h"

namespace {

// An input element's value from its global index: small integers / 8, exact in f32.
float Value(int tensor, const std::vector<int64_t>& index) {
  int64_t h = 17 * tensor;
  for (int64_t i : index) h = h * 31 + i;
  return static_cast<float>(h % 9 - 4) / 8.0f;
}

int64_t Elements(const std::vector<int64_t>& extents) {
  int64_t n = 1;
  for (int64_t e : extents) n *= e;
  return n;
}

// The global index of the `i`th element a shard holds (row-major over its extents), and
// (`at`) where it lies in the shard's storage: at the layout's strides, since a short last
// block is stored as the full block.
std::vector<int64_t> GlobalIndex(const meshtune::ShardLayout& s, int64_t i, int64_t* at) {
  std::vector<int64_t> g(s.extents.size());
  *at = 0;
  for (int d = static_cast<int>(g.size()) - 1; d >= 0; --d) {
    g[d] = s.start[d] + i % s.extents[d];
    *at += i % s.extents[d] * s.strides[d];
    i /= s.extents[d];
  }
  return g;
}

// Rank 0 prints what failed; returns 1.
int Fail(const std::string& what, const absl::Status& status) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("%s: %s\n", what.c_str(), std::string(status.message()).c_str());
  return 1;
}

// Rank 0 prints the verdict over every rank's largest error; returns 0 when verified.
int Report(const std::string& what, const meshtune::Plan& plan, double error) {
  double worst = 0;
  MPI_Reduce(&error, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int ok = worst <= 1e-4 ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("%s: %s, max error %g, %s\n", what.c_str(), plan.mesh().c_str(), worst,
                ok ? "verified" : "WRONG");
  }
  return ok ? 0 : 1;
}

// 1. Shards filled in place.
int Gemm(const meshtune::PlanOptions& options) {
  constexpr int64_t kK = 128;
  absl::StatusOr<std::unique_ptr<meshtune::Plan>> plan = meshtune::Plan::Create(
      "C[m,n] += A[m,k] * B[k,n]", "m=256,n=192,k=128", MPI_COMM_WORLD, options);
  if (!plan.ok()) return Fail("gemm", plan.status());
  std::vector<meshtune::ShardLayout> layout;  // C, A, B: the plan's tensors() order
  std::vector<std::vector<float>> shard;
  std::vector<void*> pointers;
  for (size_t t = 0; t < (*plan)->tensors().size(); ++t) {
    layout.push_back(*(*plan)->Shard((*plan)->tensors()[t]));
    shard.emplace_back(Elements(layout[t].storage));  // allocate the storage
    int64_t at = 0;
    for (int64_t i = 0; i < Elements(layout[t].extents); ++i) {
      const std::vector<int64_t> g = GlobalIndex(layout[t], i, &at);
      shard[t][at] = Value(static_cast<int>(t), g);
    }
    pointers.push_back(shard[t].data());
  }
  for (int call = 0; call < 2; ++call) {
    if (absl::Status s = (*plan)->Execute(pointers); !s.ok()) return Fail("gemm", s);
  }
  double error = 0;  // C += A*B twice: C0 + 2 * sum_k A[m,k] B[k,n]
  for (int64_t i = 0, at = 0; i < Elements(layout[0].extents); ++i) {
    const std::vector<int64_t> g = GlobalIndex(layout[0], i, &at);
    double p = 0;
    for (int64_t k = 0; k < kK; ++k) p += Value(1, {g[0], k}) * Value(2, {k, g[1]});
    error = std::max(error, std::fabs(shard[0][at] - (Value(0, g) + 2 * p)));
  }
  return Report("gemm", **plan, error);
}

// 2. Whole tensors on rank 0, scattered and gathered.
int Contraction(const meshtune::PlanOptions& options) {
  constexpr int64_t kB = 8, kI = 64, kJ = 48;
  absl::StatusOr<std::unique_ptr<meshtune::Plan>> plan = meshtune::Plan::Create(
      "y[b,i] = M[b,i,j] * x[b,j]", "b=8,i=64,j=48", MPI_COMM_WORLD, options);
  if (!plan.ok()) return Fail("contraction", plan.status());
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int64_t whole_on = rank == 0 ? 1 : 0;  // the whole tensors live on rank 0 only
  std::vector<float> y(whole_on * kB * kI), m(whole_on * kB * kI * kJ), x(whole_on * kB * kJ);
  if (rank == 0) {  // the application's input, on rank 0 only
    for (int64_t b = 0; b < kB; ++b) {
      for (int64_t i = 0; i < kI; ++i)
        for (int64_t j = 0; j < kJ; ++j) m[(b * kI + i) * kJ + j] = Value(1, {b, i, j});
      for (int64_t j = 0; j < kJ; ++j) x[b * kJ + j] = Value(2, {b, j});
    }
  }
  const std::vector<std::string>& names = (*plan)->tensors();  // y, M, x
  const std::vector<float*> whole = {y.data(), m.data(), x.data()};
  std::vector<std::vector<float>> shard;
  std::vector<void*> pointers;
  for (size_t t = 0; t < names.size(); ++t) {
    shard.emplace_back(Elements((*plan)->Shard(names[t])->storage));
    if (t > 0) {  // the output is written, not read: nothing to scatter
      if (absl::Status s = (*plan)->Scatter(names[t], whole[t], shard[t].data(), 0); !s.ok())
        return Fail("contraction", s);
    }
    pointers.push_back(shard[t].data());
  }
  if (absl::Status s = (*plan)->Execute(pointers); !s.ok()) return Fail("contraction", s);
  if (absl::Status s = (*plan)->Gather("y", shard[0].data(), y.data(), 0); !s.ok())
    return Fail("contraction", s);
  double error = 0;
  if (rank == 0) {
    for (int64_t b = 0; b < kB; ++b) {
      for (int64_t i = 0; i < kI; ++i) {
        double p = 0;
        for (int64_t j = 0; j < kJ; ++j) p += m[(b * kI + i) * kJ + j] * x[b * kJ + j];
        error = std::max(error, std::fabs(y[b * kI + i] - p));
      }
    }
  }
  return Report("contraction", **plan, error);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  meshtune::PlanOptions options;
  options.mode = meshtune::PlanMode::kEstimate;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mode")) {
      const std::string mode = argv[i + 1];
      options.mode = mode == "measure"  ? meshtune::PlanMode::kMeasure
                     : mode == "wisdom" ? meshtune::PlanMode::kWisdom
                                        : meshtune::PlanMode::kEstimate;
    } else if (!std::strcmp(argv[i], "--wisdom")) {
      options.wisdom_file = argv[i + 1];
    }
  }
  int failed = Gemm(options);
  failed |= Contraction(options);
  MPI_Finalize();
  return failed;
}
