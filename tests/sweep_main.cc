// space_sweep: sweeps one space (tests/space_sweep.h) and prints its counts and failures.
//   bazel run -c opt //tests:space_sweep_main -- --expr 'C[m,n] += A[m,k] * B[k,n]'
//       --extents m=4,n=4,k=6 --mesh x=2,y=2 [--replication] [--split] [--steps] [--all-to-all]
//       [--rings] [--max 2000]
//       [--seed 1]
//       [--trace FILE: check this trace alone]
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "tests/space_sweep.h"

int main(int argc, char** argv) {
  CLI::App app{"sweep a schedule space through the mesh simulator"};
  meshtune::testing::SweepCase c;
  int64_t max_points = 2000;
  uint64_t seed = 1;
  int show = 5;
  app.add_option("--expr", c.expr)->required();
  app.add_option("--extents", c.extents)->required();
  app.add_option("--mesh", c.mesh)->required();
  app.add_flag("--replication", c.allow_replication);
  app.add_flag("--split", c.split_distributed, "distributed indices split further");
  app.add_flag("--steps", c.rotation_steps, "rotations in steps other than 1");
  app.add_flag("--all-to-all", c.all_to_all, "transfers from several ranks' shards");
  app.add_flag("--rings", c.rings_only,
               "only the points that communicate the output at a rotated loop");
  app.add_option("--max", max_points);
  app.add_option("--seed", seed);
  app.add_option("--show", show, "failures to print");
  std::string trace_path;
  app.add_option("--trace", trace_path, "check this trace file instead of sweeping the space");
  CLI11_PARSE(app, argc, argv);
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<meshtune::testing::SweepResult> r;
  if (trace_path.empty()) {
    r = meshtune::testing::SweepSpace(c, max_points, seed);
  } else {
    std::ifstream in(trace_path);
    std::stringstream text;
    text << in.rdbuf();
    r = meshtune::testing::CheckTrace(c, text.str());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) {
    std::cerr << r.status() << "\n";
    return 2;
  }
  std::cout << c.Name() << ": " << r->legal_points << " legal, " << r->checked << " checked ("
            << r->prefetched << " prefetched, " << r->stepped << " in steps, " << r->all_to_all
            << " all-to-all, " << r->onto_layer << " onto a layer, " << r->rings << " rings), "
            << r->distinct_programs << " distinct programs, " << r->unlowerable << " unlowerable, "
            << r->failures.size() << " failures, " << s << " s\n";
  for (int i = 0; i < show && i < static_cast<int>(r->failures.size()); ++i) {
    std::cout << "--- " << r->failures[i].error << "\n" << r->failures[i].trace << "\n";
  }
  return r->failures.empty() ? 0 : 1;
}
