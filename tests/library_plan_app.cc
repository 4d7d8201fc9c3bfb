// An MPI application whose wisdom record's answer is the library (meshtune.v1.Record.library),
// or whose tune on its own ranks finds the library fastest (`--mode measure`): plans
// C[m,n] (+)= A * B at `--mnk M,N,K` from `--wisdom FILE` (or by measuring) through
// meshtune's C++ API, and checks
// that the plan is ScaLAPACK's GEMM (Plan::library()) on block-cyclic shards that Plan::Shard
// describes; fills each rank's local matrices from the global formula below, where the
// block-cyclic layout puts each element (computed here from the layout's definition, not by
// meshtune), runs Execute twice and checks the output against a serial reference computed
// here; then Scatter from rank `--root R` and Gather back (the whole tensors), and
// ExecuteInLayouts with every tensor on rank 0 ("root"). Rank 0 prints "library: TEXT on MESH"
// and "verified" or the first error; exit status 0 when verified.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "meshtune/plan.h"

namespace {

// A global element's value: small, distinct per tensor, exact in f32.
float Value(const std::string& tensor, int64_t i, int64_t j) {
  const int64_t h = (tensor[0] * 5 * 7 + i * 3) * 7 + j * 3;
  return static_cast<float>(((h % 11) + 11) % 11 - 5) / 4.0f;
}

// The statement's indices: C[i,j] (=|+=) A * B with A and B in either orientation.
struct Gemm {
  std::string c, a, b;
  bool a_transposed = false, b_transposed = false, accumulate = false;
  int64_t m = 0, n = 0, k = 0;

  std::vector<int64_t> Shape(const std::string& t) const {
    if (t == c) return {m, n};
    if (t == a) return a_transposed ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
    return b_transposed ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  }
  // C[i,j] after `calls` calls, from the formula.
  double Reference(int64_t i, int64_t j, int calls) const {
    double p = 0;
    for (int64_t x = 0; x < k; ++x) {
      p += static_cast<double>(a_transposed ? Value(a, x, i) : Value(a, i, x)) *
           (b_transposed ? Value(b, j, x) : Value(b, x, j));
    }
    return (accumulate ? Value(c, i, j) : 0.0) + (accumulate ? calls : 1) * p;
  }
};

// The global index of local row `l` of a rank at grid coordinate `me` of `procs`, blocks `nb`
// dealt from 0: ScaLAPACK's block-cyclic layout.
int64_t GlobalOf(int64_t l, int64_t nb, int64_t me, int64_t procs) {
  return ((l / nb) * procs + me) * nb + l % nb;
}

struct Grid {
  int64_t prow = 0, pcol = 0, nb = 0, row = 0, col = 0;
};

// "x=P,y=Q" and "cyclic(NB,NB)" read back, with this rank's coordinates.
Grid GridOf(const meshtune::Plan& plan, const meshtune::ShardLayout& l, int rank) {
  Grid g;
  long long p = 0, q = 0, nb = 0, nb2 = 0;
  std::sscanf(plan.mesh().c_str(), "x=%lld,y=%lld", &p, &q);
  std::sscanf(l.layout.c_str(), "cyclic(%lld,%lld)", &nb, &nb2);
  g.prow = p;
  g.pcol = q;
  g.nb = nb;
  g.row = rank / q;
  g.col = rank % q;
  return g;
}

bool Near(double got, double expected) {
  return std::fabs(got - expected) <= 1e-3 * (1 + std::fabs(expected));
}

std::string Check(const Gemm& s, const meshtune::PlanOptions& options, int root) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string expr = s.c + "[i,j] " + (s.accumulate ? "+=" : "=") + " " + s.a +
                           (s.a_transposed ? "[k,i]" : "[i,k]") + " * " + s.b +
                           (s.b_transposed ? "[j,k]" : "[k,j]");
  const std::string extents =
      "i=" + std::to_string(s.m) + ",j=" + std::to_string(s.n) + ",k=" + std::to_string(s.k);
  absl::StatusOr<std::unique_ptr<meshtune::Plan>> plan =
      meshtune::Plan::Create(expr, extents, MPI_COMM_WORLD, options);
  if (!plan.ok()) return "error: " + std::string(plan.status().message());
  if (rank == 0)
    std::printf("library: %s on %s\n", (*plan)->library().c_str(), (*plan)->mesh().c_str());
  if ((*plan)->library().empty()) return "the plan is not the library";
  std::map<std::string, std::vector<float>> local;
  std::map<std::string, meshtune::ShardLayout> layouts;
  std::vector<void*> pointers;
  for (const std::string& t : (*plan)->tensors()) {
    const meshtune::ShardLayout l = *(*plan)->Shard(t);
    layouts[t] = l;
    const Grid g = GridOf(**plan, l, rank);
    if (l.layout.empty() || g.nb < 1) return "tensor " + t + " is not block-cyclic";
    std::vector<float>& v = local[t];
    v.assign(static_cast<size_t>(l.storage[0] * l.storage[1]), -99.0f);
    for (int64_t lj = 0; lj < l.extents[1]; ++lj) {
      for (int64_t li = 0; li < l.extents[0]; ++li) {
        v[li * l.strides[0] + lj * l.strides[1]] =
            Value(t, GlobalOf(li, g.nb, g.row, g.prow), GlobalOf(lj, g.nb, g.col, g.pcol));
      }
    }
    pointers.push_back(v.data());
  }
  const meshtune::ShardLayout& lc = layouts[s.c];
  const Grid g = GridOf(**plan, lc, rank);
  for (int call = 1; call <= 2; ++call) {
    if (!(*plan)->Execute(pointers).ok()) return "execute failed";
    for (int64_t lj = 0; lj < lc.extents[1]; ++lj) {
      for (int64_t li = 0; li < lc.extents[0]; ++li) {
        const int64_t i = GlobalOf(li, g.nb, g.row, g.prow), j = GlobalOf(lj, g.nb, g.col, g.pcol);
        const float got = local[s.c][li * lc.strides[0] + lj * lc.strides[1]];
        if (!Near(got, s.Reference(i, j, call))) {
          char buf[160];
          std::snprintf(buf, sizeof(buf), "call %d: %s[%lld,%lld] is %g, the reference %g", call,
                        s.c.c_str(), static_cast<long long>(i), static_cast<long long>(j), got,
                        s.Reference(i, j, call));
          return buf;
        }
      }
    }
  }
  // Every local element of C is counted once over the ranks: coverage.
  int64_t held = lc.extents[0] * lc.extents[1], total = 0;
  MPI_Allreduce(&held, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (total != s.m * s.n) return "the ranks hold " + std::to_string(total) + " elements of C";
  // Whole tensors through `root`: scatter, one call, gather.
  std::map<std::string, std::vector<float>> whole;
  for (const std::string& t : (*plan)->tensors()) {
    const std::vector<int64_t> shape = s.Shape(t);
    std::vector<float>& w = whole[t];
    w.assign(static_cast<size_t>(shape[0] * shape[1]), 0.0f);
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j) w[i * shape[1] + j] = Value(t, i, j);
    std::fill(local[t].begin(), local[t].end(), -99.0f);
    if (!(*plan)->Scatter(t, rank == root ? w.data() : nullptr, local[t].data(), root).ok())
      return "scatter failed";
  }
  if (!(*plan)->Execute(pointers).ok()) return "execute failed";
  std::vector<float> c(whole[s.c].size(), -99.0f);
  if (!(*plan)->Gather(s.c, local[s.c].data(), rank == root ? c.data() : nullptr, root).ok())
    return "gather failed";
  if (rank == root) {
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j)
        if (!Near(c[i * s.n + j], s.Reference(i, j, 1))) return "scatter/gather: wrong C";
  }
  // Every tensor whole on rank 0.
  std::map<std::string, std::string> on_root;
  std::vector<void*> data;
  for (const std::string& t : (*plan)->tensors()) {
    on_root[t] = "root";
    data.push_back(whole[t].data());
  }
  if (absl::Status s2 = (*plan)->ExecuteInLayouts(on_root, data); !s2.ok())
    return "ExecuteInLayouts: " + std::string(s2.message());
  if (rank == 0) {
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j)
        if (!Near(whole[s.c][i * s.n + j], s.Reference(i, j, 1)))
          return "ExecuteInLayouts: wrong C";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  meshtune::PlanOptions options;
  Gemm s{"C", "A", "B"};
  int root = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--wisdom") options.wisdom_file = value;
    if (flag == "--mode" && value == "measure") {  // tune on these ranks, the library measured too
      options.mode = meshtune::PlanMode::kMeasure;
      options.top_k = 2;
      options.allow_library = true;
    }
    if (flag == "--root") root = std::stoi(value);
    if (flag == "--transposed") s.a_transposed = s.b_transposed = value == "1";
    if (flag == "--accumulate") s.accumulate = value == "1";
    if (flag == "--mnk") {
      long long m = 0, n = 0, k = 0;
      std::sscanf(value.c_str(), "%lld,%lld,%lld", &m, &n, &k);
      s.m = m;
      s.n = n;
      s.k = k;
    }
  }
  const std::string error = Check(s, options, root);
  int rank = 0, bad = error.empty() ? 0 : 1, any = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!error.empty()) std::printf("rank %d: %s\n", rank, error.c_str());
  if (rank == 0 && any == 0) std::printf("verified\n");
  MPI_Finalize();
  return any;
}
