// Sweeps of the MPI path: points drawn from whole spaces (tests/space_sweep.h), chosen so
// that every communication pattern kind the spaces hold runs, with and without prefetch,
// then run as one MPI job (tests/mpi_sweep_worker.cc: many programs in one mpirun, so a
// sweep costs seconds, not minutes) through the executor over MpiComm and checked against
// the problem as stated. Test-only.
#ifndef MESHTUNE_TESTS_MPI_SWEEP_H_
#define MESHTUNE_TESTS_MPI_SWEEP_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/space_sweep.h"

namespace meshtune::testing {

struct MpiPoint {
  SweepCase space;
  std::string trace;
  // Its transfers' and reductions' pattern kinds, "Shift" or "Shift prefetched".
  std::set<std::string> kinds;
};

// Up to `per_space` points of each space: drawn from a sample of 4 * per_space legal
// points (`seed`), first one point for each pattern kind (and prefetch) not yet covered by
// the points chosen so far, then the sample's first others. Lowering failures are errors.
absl::StatusOr<std::vector<MpiPoint>> DrawMpiPoints(const std::vector<SweepCase>& spaces,
                                                    int64_t per_space, uint64_t seed);

struct MpiSweepResult {
  int64_t points = 0, verified = 0;
  std::map<std::string, int64_t> kinds;  // points per pattern kind
  std::vector<std::string> failures;     // "point N: why\ntrace"
  std::string output;                    // what the job printed
};

// Runs `points` in one job of `ranks` ranks: `mpirun -n ranks --oversubscribe worker
// FILE` under `timeout 600`, the points file written into `dir`. Error when the job did
// not report every point.
absl::StatusOr<MpiSweepResult> RunMpiSweep(const std::string& worker, int ranks,
                                           const std::vector<MpiPoint>& points,
                                           const std::string& dir);

}  // namespace meshtune::testing

#endif  // MESHTUNE_TESTS_MPI_SWEEP_H_
