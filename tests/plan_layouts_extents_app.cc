// The C++ API's default contract (meshtune/plan.h, ShardLayout) beyond Execute, at shapes
// whose blocks do not divide (ragged) on however many ranks it runs on: every array the
// application hands over is exactly what it was told to provide — a shard Elements(extents)
// elements, a whole tensor its shape's — and ends at a guard page (tests/guarded_array.h),
// so a write past it faults even from the uninstrumented library. Built with
// AddressSanitizer (tests/BUILD). For each GEMM C[m,n] += A[m,k] * B[k,n]:
//   scatter:  Scatter of A, B and C from rank 0 into the shards, Execute, Gather of C;
//   whole:    ExecuteInLayouts with A and C "root", B "replicated";
//   shards:   ExecuteInLayouts with C "root", A and B in their shards (scattered);
// C on rank 0 checked against a serial reference. Rank 0 prints "CHECK MNK on MESH verified"
// (or "WRONG", or the error) per check and "layouts app: N checks verified on P ranks"; exit
// 0 when all did.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "meshtune/plan.h"
#include "tests/guarded_array.h"

namespace {

struct Gemm {
  int64_t m, n, k;
  std::string Extents() const {
    return "m=" + std::to_string(m) + ",n=" + std::to_string(n) + ",k=" + std::to_string(k);
  }
};

float Value(int tensor, int64_t linear) {
  const int64_t h = (tensor * 7 + linear * 3) * 7 + linear % 13;
  return static_cast<float>(((h % 11) + 11) % 11 - 5) / 4.0f;
}

// A float array of exactly `elements` ending at a guard page, freed with it.
class Floats {
 public:
  explicit Floats(int64_t elements)
      : a_(guarded_array(sizeof(float) * static_cast<size_t>(elements), 1)) {}
  ~Floats() { guarded_array_free(&a_); }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  float* data() { return static_cast<float*>(a_.data); }

 private:
  GuardedArray a_;
};

// Tensor t (0 C, 1 A, 2 B) of `g` whole with its initial values where `here`, else an
// array of no elements.
std::unique_ptr<Floats> Whole(const Gemm& g, int t, bool here) {
  const int64_t elements = !here ? 0 : t == 0 ? g.m * g.n : t == 1 ? g.m * g.k : g.k * g.n;
  auto w = std::make_unique<Floats>(elements);
  for (int64_t i = 0; i < elements; ++i) w->data()[i] = Value(t, i);
  return w;
}

// The largest error of C (whole, on rank 0) after one C += A * B.
double Error(const Gemm& g, const float* c) {
  double worst = 0;
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double want = Value(0, i * g.n + j);
      for (int64_t k = 0; k < g.k; ++k) want += Value(1, i * g.k + k) * Value(2, k * g.n + j);
      worst = std::max(worst, std::fabs(c[i * g.n + j] - want) / (1 + std::fabs(want)));
    }
  }
  return worst;
}

// This rank's shards of C, A and B (the plan's tensors() order), each exactly its extents,
// scattered from the whole tensors on rank 0.
absl::Status Scattered(meshtune::Plan& plan, const Gemm& g, int rank,
                       std::vector<std::unique_ptr<Floats>>* shards) {
  for (int t = 0; t < 3; ++t) {
    absl::StatusOr<meshtune::ShardLayout> l = plan.Shard(plan.tensors()[t]);
    if (!l.ok()) return l.status();
    int64_t elements = 1;
    for (int64_t e : l->extents) elements *= e;
    shards->push_back(std::make_unique<Floats>(elements));
    const std::unique_ptr<Floats> whole = Whole(g, t, rank == 0);
    absl::Status s = plan.Scatter(plan.tensors()[t], whole->data(), shards->back()->data(), 0);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Runs check `how` of `g` on `plan`; C whole into `c` on rank 0.
absl::Status RunCheck(const std::string& how, meshtune::Plan& plan, const Gemm& g, int rank,
                      float* c) {
  if (how == "whole") {
    const std::unique_ptr<Floats> a = Whole(g, 1, rank == 0), b = Whole(g, 2, true);
    const std::unique_ptr<Floats> initial = Whole(g, 0, rank == 0);
    for (int64_t i = 0; rank == 0 && i < g.m * g.n; ++i) c[i] = initial->data()[i];
    return plan.ExecuteInLayouts({{"A", "root"}, {"B", "replicated"}, {"C", "root"}},
                                 {c, a->data(), b->data()});
  }
  std::vector<std::unique_ptr<Floats>> shards;
  if (absl::Status s = Scattered(plan, g, rank, &shards); !s.ok()) return s;
  if (how == "shards") {
    const std::unique_ptr<Floats> initial = Whole(g, 0, rank == 0);
    for (int64_t i = 0; rank == 0 && i < g.m * g.n; ++i) c[i] = initial->data()[i];
    return plan.ExecuteInLayouts({{"C", "root"}}, {c, shards[1]->data(), shards[2]->data()});
  }
  const absl::Status ran = plan.Execute({shards[0]->data(), shards[1]->data(), shards[2]->data()});
  if (!ran.ok()) return ran;
  return plan.Gather("C", shards[0]->data(), c, 0);
}

// Plans `g` and runs every check; the number that failed.
int CheckGemm(const Gemm& g, int rank) {
  meshtune::PlanOptions o;
  o.mode = meshtune::PlanMode::kEstimate;
  o.calibrate = false;
  absl::StatusOr<std::unique_ptr<meshtune::Plan>> plan =
      meshtune::Plan::Create("C[m,n] += A[m,k] * B[k,n]", g.Extents(), MPI_COMM_WORLD, o);
  if (!plan.ok()) {
    if (rank == 0)
      std::printf("%s: error: %s\n", g.Extents().c_str(), plan.status().ToString().c_str());
    return 3;
  }
  int failed = 0;
  for (const std::string how : {"scatter", "whole", "shards"}) {
    Floats c(rank == 0 ? g.m * g.n : 0);
    const absl::Status s = RunCheck(how, **plan, g, rank, c.data());
    const double error = s.ok() && rank == 0 ? Error(g, c.data()) : 0;
    int bad = !s.ok() || error > 1e-4 ? 1 : 0;
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    failed += bad;
    if (rank == 0) {
      std::printf("%s %s on %s %s\n", how.c_str(), g.Extents().c_str(), (*plan)->mesh().c_str(),
                  !s.ok() ? s.ToString().c_str()
                  : bad   ? "WRONG"
                          : "verified");
    }
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, failed = 0, checks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (const Gemm& g : {Gemm{38, 29, 22}, Gemm{19, 31, 10}}) {
    failed += CheckGemm(g, rank);
    checks += 3;
  }
  if (rank == 0) {
    std::printf("layouts app: %d checks verified on %d ranks\n", checks - failed, size);
  }
  MPI_Finalize();
  return failed > 0 ? 1 : 0;
}
