// An MPI application that plans a program of several statements through meshtune's C++ API
// (meshtune/plan.h) and checks every tensor it writes against a serial reference of its
// own: the statements parsed here and evaluated element by element on the application's
// data, nothing of meshtune's.
//
//   plan_program_app --expr 'H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]'
//                    --extents b=7,d=5,e=3,f=11 --mode estimate|wisdom|measure [--wisdom FILE]
//                    [--mesh M]
//
// Each rank fills the inputs' shards where Plan::Shard says; Execute runs twice (a `+=`
// output refilled before each); after each, every written tensor (intermediates too) is
// checked on every rank where it holds its result, and gathered whole on rank 0 (every
// element present and right). A plan whose answer is the library holds its tensors
// block-cyclic (Plan::Shard's layout), placed here by ScaLAPACK's rule. Rank 0 prints
// "tensors: NAMES", "plan: MESH", "library: TEXT" when the plan is the library's chain, in
// measure mode "measured: SECONDS s" (the winner's time on the application's ranks), and
// "program: verified", or "program: error: ...". Exit status 0 when verified, 1 if not.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "meshtune/plan.h"
#include "tests/program_reference.h"

namespace {

using meshtune::testing::Elements;
using meshtune::testing::ForEach;
using meshtune::testing::Linear;
using meshtune::testing::ParseExtents;
using meshtune::testing::ParseProgram;
using meshtune::testing::Reference;
using meshtune::testing::Value;

std::string Arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (name == argv[i]) return argv[i + 1];
  }
  return fallback;
}

// The plan's process grid for a block-cyclic shard ("cyclic(NB,NB)", a plan whose answer is
// the library): P x Q ranks in row-major order, this rank's row and column; nb 0 for a box.
struct Grid {
  int64_t nb = 0, p = 1, q = 1, row = 0, col = 0;
};

Grid GridOf(const meshtune::Plan& plan, const meshtune::ShardLayout& l, int rank) {
  Grid g;
  long long nb = 0, p = 0, q = 0;
  if (std::sscanf(l.layout.c_str(), "cyclic(%lld,", &nb) != 1 ||
      std::sscanf(plan.mesh().c_str(), "x=%lld,y=%lld", &p, &q) != 2)
    return g;
  g.nb = nb;
  g.p = p;
  g.q = q;
  g.row = rank / q;
  g.col = rank % q;
  return g;
}

// Calls `f(global index, offset in the storage)` for every element `l` holds: a box from its
// start, or block-cyclic on `grid` (ScaLAPACK's rule, from the layout's definition: local
// block b of a dim lies at global block b * P + this rank's coordinate).
void ForEachHeld(const meshtune::ShardLayout& l, const Grid& grid,
                 const std::function<void(const std::vector<int64_t>&, int64_t)>& f) {
  ForEach(l.extents, [&](const std::vector<int64_t>& local) {
    std::vector<int64_t> g(local.size());
    int64_t at = 0;
    for (size_t d = 0; d < local.size(); ++d) {
      if (grid.nb > 0) {
        const int64_t ranks = d == 0 ? grid.p : grid.q, mine = d == 0 ? grid.row : grid.col;
        g[d] = ((local[d] / grid.nb) * ranks + mine) * grid.nb + local[d] % grid.nb;
      } else {
        g[d] = l.start[d] + local[d];
      }
      at += local[d] * l.strides[d];
    }
    f(g, at);
  });
}

// Every written tensor against the reference on this rank and, gathered, on rank 0; "" or
// the first difference.
std::string Check(meshtune::Plan& plan, const Reference& ref, std::vector<std::vector<float>>& data,
                  int rank) {
  std::string error;
  for (size_t t = 0; t < plan.tensors().size(); ++t) {
    const std::string& name = plan.tensors()[t];
    if (!ref.written.at(name)) continue;
    const meshtune::ShardLayout l = *plan.Shard(name);
    const std::vector<int64_t>& shape = ref.shapes.at(name);
    const std::vector<double>& want = ref.values.at(name);
    auto differs = [](double got, double expected) {
      return std::fabs(got - expected) > 1e-3 * (1 + std::fabs(expected));
    };
    if (l.holds_result) {
      ForEachHeld(l, GridOf(plan, l, rank), [&](const std::vector<int64_t>& g, int64_t at) {
        const double got = data[t][at], expected = want[Linear(shape, g)];
        if (error.empty() && differs(got, expected)) {
          error = "rank " + std::to_string(rank) + ": " + name + "[" +
                  std::to_string(Linear(shape, g)) + "] is " + std::to_string(got) + ", not " +
                  std::to_string(expected);
        }
      });
    }
    std::vector<float> whole(rank == 0 ? Elements(shape) : 0, std::nanf(""));
    const absl::Status gathered = plan.Gather(name, data[t].data(), whole.data(), 0);
    if (!gathered.ok() && error.empty()) error = std::string(gathered.message());
    for (size_t i = 0; i < whole.size() && error.empty(); ++i) {
      if (std::isnan(whole[i]) || differs(whole[i], want[i])) {
        error = "gathered " + name + "[" + std::to_string(i) + "] is " + std::to_string(whole[i]) +
                ", not " + std::to_string(want[i]);
      }
    }
  }
  return error;
}

// Rank 0's error, or any rank's when rank 0 has none, on every rank.
std::string Agree(const std::string& mine, int rank) {
  int bad = mine.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any == 0) return "";
  std::vector<char> text(256, '\0');
  if (!mine.empty()) std::strncpy(text.data(), mine.c_str(), text.size() - 1);
  int first = mine.empty() ? 1 << 30 : rank, lowest = 0;
  MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, lowest, MPI_COMM_WORLD);
  return text.data();
}

int Run(int argc, char** argv, int rank) {
  const std::string expr = Arg(argc, argv, "--expr", "");
  const std::string extents = Arg(argc, argv, "--extents", "");
  const std::string mode = Arg(argc, argv, "--mode", "estimate");
  meshtune::PlanOptions o;
  o.mode = mode == "wisdom"    ? meshtune::PlanMode::kWisdom
           : mode == "measure" ? meshtune::PlanMode::kMeasure
                               : meshtune::PlanMode::kEstimate;
  o.wisdom_file = Arg(argc, argv, "--wisdom", "");
  o.mesh = Arg(argc, argv, "--mesh", "");
  o.calibrate = false;
  auto plan = meshtune::Plan::Create(expr, extents, MPI_COMM_WORLD, o);
  if (!plan.ok()) {
    if (rank == 0)
      std::printf("program: error: %s\n", std::string(plan.status().message()).c_str());
    return 1;
  }
  meshtune::Plan& p = **plan;
  if (rank == 0) {
    std::string names;
    for (const std::string& t : p.tensors()) names += (names.empty() ? "" : " ") + t;
    std::printf("tensors: %s\nplan: %s\n", names.c_str(), p.mesh().c_str());
    if (!p.library().empty()) std::printf("library: %s\n", p.library().c_str());
    if (p.measured_seconds() > 0) std::printf("measured: %.3g s\n", p.measured_seconds());
  }
  const Reference ref(ParseProgram(expr), ParseExtents(extents));
  std::vector<std::vector<float>> data;
  std::vector<void*> shards;
  for (const std::string& t : p.tensors()) {
    const meshtune::ShardLayout l = *p.Shard(t);
    data.emplace_back(Elements(l.storage), 0.0f);
  }
  std::string error;
  for (int call = 0; call < 2 && error.empty(); ++call) {
    shards.clear();
    for (size_t t = 0; t < p.tensors().size(); ++t) {
      const std::string& name = p.tensors()[t];
      if (!ref.written.at(name) || ref.accumulated.at(name)) {
        const meshtune::ShardLayout l = *p.Shard(name);
        ForEachHeld(l, GridOf(p, l, rank), [&](const std::vector<int64_t>& g, int64_t at) {
          data[t][at] = static_cast<float>(Value(name, g));
        });
      }
      shards.push_back(data[t].data());
    }
    const absl::Status run = p.Execute(shards);
    error = run.ok() ? Check(p, ref, data, rank) : std::string(run.message());
    error = Agree(error, rank);
  }
  if (rank == 0) {
    std::printf("program: %s\n", error.empty() ? "verified" : ("error: " + error).c_str());
  }
  return error.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int status = Run(argc, argv, rank);
  MPI_Finalize();
  return status;
}
