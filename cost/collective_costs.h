// CollectiveCosts: what one collective call costs, from lines `meshtune calibrate` fitted to
// calls of that collective itself (HardwareProfile.collectives), per group size measured.
//
// A call over g ranks on a box of w bytes (the whole box: what an all-gather gathers, what
// a reduction reduces, what a broadcast sends) costs alpha + beta * w with the line of
// group size g when g was measured. Otherwise the line of the nearest measured group size
// g0 (the largest below g, else the smallest) is carried to g by the algorithm's form:
// alpha * L(g) / L(g0) + beta * V(g) / V(g0) * w, with latency terms L and volume terms V
//
//   broadcast, reduce   L = log2 g        V = 1              (trees)
//   all-gather          L = g - 1         V = (g - 1) / g    (a ring)
//   reduce-scatter      L = g - 1         V = (g - 1) / g    (a ring)
//   all-reduce          L = 2 log2 g      V = 2 (g - 1) / g  (reduce-scatter, all-gather)
//   all-to-all          L = g - 1         V = (g - 1) / g    (a piece to each other rank;
//                                                            w: a rank's whole send box)
//
// Each collective has a blocking and a nonblocking form (MPI_Bcast, MPI_Ibcast, ...; the
// profile names the latter with an "i" before the name): a prefetched statement's
// collective is the nonblocking one, whose cost may differ (MPI progresses it only inside
// MPI calls). A form without lines falls back to the other form's. A group of one rank
// costs nothing. Plain value; thread-safe to read.
#ifndef MESHTUNE_COST_COLLECTIVE_COSTS_H_
#define MESHTUNE_COST_COLLECTIVE_COSTS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace meshtune::cost {

enum class Collective { kBroadcast, kReduce, kAllGather, kReduceScatter, kAllReduce, kAllToAll };
inline constexpr int kCollectives = 6;

// The profile's name of `c`: "bcast", "reduce", "allgather", "reduce_scatter", "allreduce",
// "alltoall".
const char* CollectiveName(Collective c);

// The collective named `name` (CollectiveName's inverse), nonblocking when the name is
// CollectiveName's with an "i" before it ("ireduce"); nullopt for another name.
struct CollectiveForm {
  Collective collective;
  bool nonblocking = false;
};
std::optional<CollectiveForm> ParseCollective(absl::string_view name);

// The profile's name of `form`: CollectiveName, with an "i" before it when nonblocking.
std::string CollectiveFormName(const CollectiveForm& form);

// One fitted line: a call over `group` ranks on w bytes takes alpha + beta * w seconds.
struct CollectiveLine {
  int64_t group = 0;
  double alpha = 0, beta = 0;
};

class CollectiveCosts {
 public:
  CollectiveCosts() = default;  // nothing measured: Has() is false for every collective

  // The costs of `lines` (pairs of a collective and a line). InvalidArgument naming the
  // problem for a group below 2, a negative or non-finite coefficient, or a collective
  // with two lines of the same group size.
  static absl::StatusOr<CollectiveCosts> Create(
      const std::vector<std::pair<CollectiveForm, CollectiveLine>>& lines);

  // Whether `c` has at least one measured line in either form.
  bool Has(Collective c) const { return !Lines(c, false).empty() || !Lines(c, true).empty(); }
  bool Empty() const;

  // Seconds of one call of `c` (its nonblocking form when `nonblocking`, or the other form
  // when that one has no line) over `g` ranks on `bytes` (the file comment); 0 for g <= 1 or
  // when `c` has no line.
  double Seconds(Collective c, int64_t g, double bytes, bool nonblocking = false) const;

  // The lines of one form of `c`, by group size ascending.
  const std::vector<CollectiveLine>& Lines(Collective c, bool nonblocking) const {
    return lines_[nonblocking ? 1 : 0][static_cast<int>(c)];
  }

 private:
  std::array<std::array<std::vector<CollectiveLine>, kCollectives>, 2> lines_;
};

// The latency and volume terms L(g) and V(g) of `c` (the file comment).
double LatencyTerm(Collective c, int64_t g);
double VolumeTerm(Collective c, int64_t g);

}  // namespace meshtune::cost

#endif  // MESHTUNE_COST_COLLECTIVE_COSTS_H_
