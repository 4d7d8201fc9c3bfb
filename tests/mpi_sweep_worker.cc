// mpi_sweep_worker POINTS_FILE: one MPI job that runs many schedules, for the sweeps of
// the MPI path (tests/mpi_sweep.h). Every rank reads the file; for each point it judges,
// lowers and validates the trace (engine::LowerTrace), runs the Program through the
// executor over MPI on the first mesh-size ranks (the others wait), and checks it against
// the problem as stated (runtime/oracle.h). Rank 0 prints one line a point:
//   "point N: verified" or "point N: FAILED <why>"
// then "points: N". A point file holds blocks of
//   point <expr>
//   extents <extents>
//   mesh <mesh>
//   result_on_layer <0|1>
//   trace
//   <trace lines>
//   end
// Exit status 0 when the file was read (the points' outcomes are in the lines), 2 when not.
#include <mpi.h>
#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/job.h"
#include "engine/prepare.h"
#include "engine/requests.h"
#include "runtime/mpi_executor.h"

namespace {

struct Point {
  std::string expr, extents, mesh, trace;
  bool result_on_layer = false;
};

// The points of `path`, or an empty list with *error set.
std::vector<Point> ReadPoints(const std::string& path, std::string* error) {
  std::ifstream in(path);
  std::vector<Point> points;
  if (!in) {
    *error = "cannot read " + path;
    return points;
  }
  Point p;
  bool in_trace = false;
  for (std::string line; std::getline(in, line);) {
    if (in_trace) {
      if (line == "end") {
        points.push_back(p);
        p = Point{};
        in_trace = false;
      } else {
        absl::StrAppend(&p.trace, line, "\n");
      }
    } else if (absl::StartsWith(line, "point ")) {
      p.expr = line.substr(6);
    } else if (absl::StartsWith(line, "extents ")) {
      p.extents = line.substr(8);
    } else if (absl::StartsWith(line, "mesh ")) {
      p.mesh = line.substr(5);
    } else if (absl::StartsWith(line, "result_on_layer ")) {
      p.result_on_layer = line.substr(16) == "1";
    } else if (line == "trace") {
      in_trace = true;
    }
  }
  if (in_trace) *error = "the last point's trace has no end";
  return points;
}

// The point's problem as stated and its validated Program (engine::LowerTrace: judged,
// lowered, translation-validated), or the reason there is none (the same on every rank:
// lowering is deterministic).
absl::StatusOr<std::pair<meshtune::ir::Problem, meshtune::codegen::Program>> Prepare(
    const Point& p) {
  using namespace meshtune;
  v1::Problem problem;
  problem.set_expr(p.expr);
  problem.set_extents(p.extents);
  problem.set_result_on_layer(p.result_on_layer);
  v1::Mesh mesh;
  mesh.set_axes(p.mesh);
  v1::Trace trace;
  trace.set_text(p.trace);
  absl::StatusOr<ir::Problem> stated = engine::ProblemOf(problem);
  if (!stated.ok()) return stated.status();
  absl::StatusOr<codegen::Program> program = engine::LowerTrace(problem, mesh, trace);
  if (!program.ok()) return program.status();
  return std::make_pair(*std::move(stated), *std::move(program));
}

}  // namespace

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string error = argc < 2 ? "usage: mpi_sweep_worker POINTS_FILE" : "";
  const std::vector<Point> points =
      error.empty() ? ReadPoints(argv[1], &error) : std::vector<Point>{};
  if (!error.empty()) {
    if (rank == 0) std::fprintf(stderr, "mpi_sweep_worker: %s\n", error.c_str());
    MPI_Finalize();
    return 2;
  }
  for (size_t i = 0; i < points.size(); ++i) {
    auto prepared = Prepare(points[i]);
    std::string outcome;
    if (!prepared.ok()) {
      outcome = absl::StrCat("FAILED ", prepared.status().message());
    } else if (prepared->second.Ranks() > size) {
      outcome = absl::StrCat("FAILED the mesh has ", prepared->second.Ranks(),
                             " ranks but the job has ", size);
    } else {
      const int64_t ranks = prepared->second.Ranks();
      MPI_Comm active = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, rank < ranks ? 0 : MPI_UNDEFINED, rank, &active);
      meshtune::runtime::RunStats stats;
      if (active != MPI_COMM_NULL) {
        meshtune::runtime::ExecOptions options;
        options.warmup = 0;
        options.reps = 1;
        options.seed = i + 1;
        stats = meshtune::runtime::Execute(meshtune::runtime::ProblemSpecOf(prepared->first),
                                           prepared->second, active, options);
        MPI_Comm_free(&active);
      }
      outcome = stats.verified ? "verified" : "FAILED " + stats.error;
    }
    if (rank == 0) std::printf("point %zu: %s\n", i, outcome.c_str());
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0) std::printf("points: %zu\n", points.size());
  MPI_Finalize();
  return 0;
}
