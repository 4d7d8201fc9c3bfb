// An MPI application that computes through meshtune's C++ API (meshtune/plan.h) on its own
// data: C[m,n] += A[m,k] * B[k,n] (m=32, n=24, k=16) and y[i] += M[i,j] * x[j] (i=24,
// j=16), each planned with --mode wisdom (--wisdom FILE), estimate or measure (--wisdom
// FILE: where the winner goes), optionally with --mesh M and --allow-idle 1, executed twice
// on shards filled where Plan::Shard says, and checked against a serial reference after
// each call. Rank 0 prints "plan NAME: MESH verified" per statement (MESH followed by
// " (measured)" for a measured schedule, " (K idle ranks)" when the mesh is smaller than
// the job) after a line saying whether the plan runs "the wisdom record's program" or
// "trace lowered", or the error, e.g.
// "plan gemm: error: no tuning record for ...". Then the GEMM again from whole matrices on
// rank 0 through Plan::Scatter and Plan::Gather ("scatter/gather: verified"). Exit status 0
// when all verified, 1 if not. With --only-plan-gemm EXTENTS, it only plans the GEMM at
// those extents and prints "plan: MESH" or "plan: error: ..." (status 0 or 1).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "meshtune/plan.h"

namespace {

// A global element's value: small, distinct per tensor, exact in f32.
float Value(const std::string& tensor, const std::vector<int64_t>& idx) {
  int64_t h = tensor[0] * 5;
  for (int64_t i : idx) h = h * 7 + i * 3;
  return static_cast<float>(((h % 11) + 11) % 11 - 5) / 4.0f;
}

int64_t Elements(const std::vector<int64_t>& extents) {
  int64_t n = 1;
  for (int64_t e : extents) n *= e;
  return n;
}

// Calls `f(global index, offset in the shard's storage)` for every element `l` holds.
void ForEachHeld(const meshtune::ShardLayout& l,
                 const std::function<void(const std::vector<int64_t>&, int64_t)>& f) {
  const int64_t n = Elements(l.extents);
  for (int64_t i = 0; i < n; ++i) {  // row-major over the held box
    std::vector<int64_t> g(l.extents.size());
    int64_t r = i, at = 0;
    for (int d = static_cast<int>(g.size()) - 1; d >= 0; --d) {
      g[d] = l.start[d] + r % l.extents[d];
      at += (r % l.extents[d]) * l.strides[d];
      r /= l.extents[d];
    }
    f(g, at);
  }
}

struct Statement {
  std::string name, expr, extents;
  // The reference value of the output at `idx` after `calls` calls.
  std::function<double(const std::vector<int64_t>& idx, int calls)> reference;
};

// Plans, runs twice and checks `s`; "" or what went wrong (on rank 0: the same everywhere
// for errors of Create).
std::string RunStatement(const Statement& s, const meshtune::PlanOptions& options,
                         std::string* mesh) {
  absl::StatusOr<std::unique_ptr<meshtune::Plan>> plan =
      meshtune::Plan::Create(s.expr, s.extents, MPI_COMM_WORLD, options);
  if (!plan.ok()) return "error: " + std::string(plan.status().message());
  *mesh = (*plan)->mesh();
  if ((*plan)->measured_seconds() >= 0) *mesh += " (measured)";
  int idle = (*plan)->active() ? 0 : 1, idle_ranks = 0;
  MPI_Allreduce(&idle, &idle_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (idle_ranks > 0) *mesh += " (" + std::to_string(idle_ranks) + " idle ranks)";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::printf("plan %s: %s\n", s.name.c_str(),
                (*plan)->program_from_wisdom() ? "the wisdom record's program" : "trace lowered");
  }
  std::map<std::string, std::vector<float>> shards;
  std::map<std::string, meshtune::ShardLayout> layouts;
  std::vector<void*> pointers;
  for (const std::string& t : (*plan)->tensors()) {
    absl::StatusOr<meshtune::ShardLayout> l = (*plan)->Shard(t);
    if (!l.ok()) return "error: " + std::string(l.status().message());
    layouts[t] = *l;
    // The shard's storage (a short last block stores the full block), its held elements
    // at the layout's strides.
    std::vector<float>& v = shards[t];
    v.assign(static_cast<size_t>(Elements(l->storage)), -99.0f);  // padding: scratch
    ForEachHeld(*l, [&](const std::vector<int64_t>& g, int64_t at) { v[at] = Value(t, g); });
    pointers.push_back(v.data());
  }
  const std::string& out = (*plan)->tensors()[0];
  for (int call = 1; call <= 2; ++call) {
    const absl::Status ran = (*plan)->Execute(pointers);
    if (!ran.ok()) return "error: " + std::string(ran.message());
    const meshtune::ShardLayout& l = layouts[out];
    const std::vector<float>& v = shards[out];
    std::string wrong;
    ForEachHeld(l, [&](const std::vector<int64_t>& g, int64_t at) {
      const double expected = s.reference(g, call);
      if (!wrong.empty() || std::fabs(v[at] - expected) <= 1e-3 * (1 + std::fabs(expected))) {
        return;
      }
      char buf[160];
      std::snprintf(buf, sizeof(buf), "call %d: %s element %lld is %g, the reference %g", call,
                    out.c_str(), static_cast<long long>(at), v[at], expected);
      wrong = std::string(buf) + " (mesh " + (*plan)->mesh() + ", trace " + (*plan)->trace() + ")";
    });
    if (!wrong.empty()) return wrong;
  }
  return "";
}

// The GEMM with whole matrices on rank 0: Plan::Scatter of C, A and B from rank 0, one
// Execute, Plan::Gather of C to rank 0, checked there. "" or what went wrong.
std::string RunScattered(const meshtune::PlanOptions& options) {
  constexpr int64_t kM = 32, kN = 24, kK = 16;
  absl::StatusOr<std::unique_ptr<meshtune::Plan>> plan = meshtune::Plan::Create(
      "C[m,n] += A[m,k] * B[k,n]", "m=32,n=24,k=16", MPI_COMM_WORLD, options);
  if (!plan.ok()) return "error: " + std::string(plan.status().message());
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::map<std::string, std::vector<int64_t>> shape = {
      {"C", {kM, kN}}, {"A", {kM, kK}}, {"B", {kK, kN}}};
  std::map<std::string, std::vector<float>> global, shard;
  std::vector<void*> pointers;
  for (const std::string& t : (*plan)->tensors()) {
    std::vector<float>& g = global[t];
    g.resize(static_cast<size_t>(shape[t][0] * shape[t][1]));
    for (int64_t i = 0; i < shape[t][0]; ++i)
      for (int64_t j = 0; j < shape[t][1]; ++j) g[i * shape[t][1] + j] = Value(t, {i, j});
    const meshtune::ShardLayout l = *(*plan)->Shard(t);
    shard[t].assign(static_cast<size_t>(Elements(l.storage)), -99.0f);
    if (!(*plan)->Scatter(t, rank == 0 ? g.data() : nullptr, shard[t].data(), 0).ok())
      return "scatter failed";
    pointers.push_back(shard[t].data());
  }
  if (!(*plan)->Execute(pointers).ok()) return "execute failed";
  std::vector<float> c(global["C"].size(), -99.0f);
  if (!(*plan)->Gather("C", shard["C"].data(), c.data(), 0).ok()) return "gather failed";
  if (rank != 0) return "";
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double p = 0;
      for (int64_t k = 0; k < kK; ++k) p += Value("A", {i, k}) * Value("B", {k, j});
      const double expected = Value("C", {i, j}) + p;
      if (std::fabs(c[i * kN + j] - expected) > 1e-3 * (1 + std::fabs(expected))) {
        char buf[120];
        std::snprintf(buf, sizeof(buf), "gathered C[%lld, %lld] is %g, the reference %g",
                      static_cast<long long>(i), static_cast<long long>(j), c[i * kN + j],
                      expected);
        return buf;
      }
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  meshtune::PlanOptions options;
  std::string only_plan_gemm;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--mode") {
      options.mode = value == "estimate"  ? meshtune::PlanMode::kEstimate
                     : value == "measure" ? meshtune::PlanMode::kMeasure
                                          : meshtune::PlanMode::kWisdom;
    }
    if (flag == "--wisdom") options.wisdom_file = value;
    if (flag == "--mesh") options.mesh = value;
    if (flag == "--allow-idle") options.allow_idle_ranks = value == "1";
    if (flag == "--only-plan-gemm") only_plan_gemm = value;
  }
  if (!only_plan_gemm.empty()) {  // plans the GEMM at these extents, runs nothing
    absl::StatusOr<std::unique_ptr<meshtune::Plan>> plan = meshtune::Plan::Create(
        "C[m,n] += A[m,k] * B[k,n]", only_plan_gemm, MPI_COMM_WORLD, options);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const std::string said =
        plan.ok() ? (*plan)->mesh() : "error: " + std::string(plan.status().message());
    if (rank == 0) std::printf("plan: %s\n", said.c_str());
    const int status = plan.ok() ? 0 : 1;
    plan = absl::InternalError("destroyed");  // plans go before MPI_Finalize
    MPI_Finalize();
    return status;
  }
  const std::vector<Statement> statements = {
      {"gemm", "C[m,n] += A[m,k] * B[k,n]", "m=32,n=24,k=16",
       [](const std::vector<int64_t>& g, int calls) {
         double p = 0;
         for (int64_t k = 0; k < 16; ++k) p += Value("A", {g[0], k}) * Value("B", {k, g[1]});
         return Value("C", g) + calls * p;
       }},
      {"matvec", "y[i] += M[i,j] * x[j]", "i=24,j=16",
       [](const std::vector<int64_t>& g, int calls) {
         double p = 0;
         for (int64_t j = 0; j < 16; ++j) p += Value("M", {g[0], j}) * Value("x", {j});
         return Value("y", g) + calls * p;
       }},
  };
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int failed = 0;
  for (const Statement& s : statements) {
    std::string mesh;
    const std::string error = RunStatement(s, options, &mesh);
    int bad = error.empty() ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!error.empty() && (rank == 0 || error.rfind("error: ", 0) != 0))
      std::printf("plan %s: rank %d: %s\n", s.name.c_str(), rank, error.c_str());
    if (rank == 0 && !any) std::printf("plan %s: %s verified\n", s.name.c_str(), mesh.c_str());
    failed |= any;
  }
  const std::string scattered = RunScattered(options);
  int bad = scattered.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!scattered.empty()) std::printf("scatter/gather: rank %d: %s\n", rank, scattered.c_str());
  if (rank == 0 && !any) std::printf("scatter/gather: verified\n");
  failed |= any;
  MPI_Finalize();
  return failed;
}
