#include "search/checker.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/bytes.h"
#include "base/status_macros.h"
#include "codegen/lower.h"
#include "codegen/pipeline.h"
#include "codegen/program.h"
#include "ir/reason.h"
#include "ir/trace.h"
#include "runtime/simulator.h"

namespace meshtune::search {

namespace {

struct Lowered {
  ir::Problem problem;  // as stated, at the extents lowered for (what a run is checked against)
  codegen::Program program;
  std::vector<std::string> patterns;  // per transfer "A@ko Broadcast(axes=[1])"
  std::vector<bool> multiple;         // per loop: more than one iteration
  int64_t instances = 1;              // statement instances
  int64_t bytes = 0;                  // every rank's shards and buffers
  // The oracle's coverage count: every rank adds a count over the whole output
  // (runtime/oracle.h), so its work is the output's size times the ranks.
  int64_t coverage = 0;
  // Per index, the least extent at which its loops keep their iterations: the loops' fixed
  // counts (distribute and divide parts) times the least divisor above 1 of its innermost
  // loop's extent when that is more than 1. Where scaling down starts.
  std::map<std::string, int64_t> least_extents;
};

// The smallest divisor of n above 1 (1 for n = 1).
int64_t LeastDivisor(int64_t n) {
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return d;
  }
  return n;
}

// `trace` on `problem` with `extents` and on `mesh`: judged, lowered with offsets.
absl::StatusOr<Lowered> LowerAt(const ir::Problem& problem,
                                const std::map<std::string, int64_t>& extents, const ir::Mesh& mesh,
                                const ir::Trace& trace) {
  ir::Problem p = problem;
  // Scaled down, the given layouts (their block sizes are the real extents') are dropped.
  if (extents != problem.extents) p.layouts.clear();
  p.extents = extents;
  MT_ASSIGN_OR_RETURN(ir::Computation base, ir::Computation::Create(p, mesh));
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, codegen::Prepare(base, trace));
  const ir::Verdict& verdict = prepared.verdict;
  if (!verdict.legal) return ir::IllegalSchedule(verdict.reasons[0]);
  Lowered out;
  out.problem = p;
  // Translation validation (codegen/validate/validate.h) refuses "lowering_unsound: ..." and what
  // it cannot decide, "unvalidated: ...".
  MT_ASSIGN_OR_RETURN(out.program, std::move(prepared.program));
  for (const codegen::TransferSummary& s : codegen::Summarize(out.program)) {
    out.patterns.push_back(codegen::PatternLabel(s.tensor, s.loop, s.pattern));
  }
  for (const ir::Loop& l : verdict.computation.loops()) out.multiple.push_back(l.extent > 1);
  for (const auto& [index, extent] : extents) {
    out.instances *= extent;
    int64_t inner = 1;  // the innermost loop's extent, which scaling the index shrinks
    for (const ir::Loop& l : verdict.computation.loops()) {
      if (l.origin == index && l.stride == 1) inner = l.extent;
    }
    out.least_extents[index] = extent / inner * LeastDivisor(inner);
  }
  out.bytes = prepared.footprint.total() * mesh.Ranks();
  out.coverage = mesh.Ranks();
  for (int64_t extent : p.Shape(p.output.tensor)) out.coverage *= extent;
  return out;
}

// Whether `a` and `b` (one trace lowered at two sizes) have the same transfers and patterns
// and the same loops of several iterations.
bool SameShape(const Lowered& a, const Lowered& b) {
  return a.patterns == b.patterns && a.multiple == b.multiple;
}

// The divisors of n, largest first.
std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  std::vector<int64_t> out(large.begin(), large.end());
  out.insert(out.end(), small.rbegin(), small.rend());
  return out;
}

// Meshes with the axes of `mesh`, each size a divisor of the real one (at least 2 where the
// real one is), of at most `max_ranks` ranks and no memory budget: the largest first, then
// the most even reduction (the least largest factor an axis is divided by).
std::vector<ir::Mesh> SmallerMeshes(const ir::Mesh& mesh, int64_t max_ranks) {
  std::vector<ir::Mesh> out = {ir::Mesh{}};
  for (const ir::MeshAxis& axis : mesh.axes) {
    std::vector<ir::Mesh> next;
    for (const ir::Mesh& m : out) {
      for (int64_t d : Divisors(axis.size)) {
        if (d == 1 && axis.size > 1) continue;
        ir::Mesh grown = m;
        grown.axes.push_back({axis.name, d});
        if (grown.Ranks() <= max_ranks) next.push_back(std::move(grown));
      }
    }
    out = std::move(next);
  }
  auto most_divided = [&](const ir::Mesh& m) {
    int64_t worst = 1;
    for (size_t a = 0; a < m.axes.size(); ++a)
      worst = std::max(worst, mesh.axes[a].size / m.axes[a].size);
    return worst;
  };
  std::stable_sort(out.begin(), out.end(), [&](const ir::Mesh& a, const ir::Mesh& b) {
    if (a.Ranks() != b.Ranks()) return a.Ranks() > b.Ranks();
    return most_divided(a) < most_divided(b);
  });
  return out;
}

class SimulatingChecker : public Checker {
 public:
  explicit SimulatingChecker(const SimulatingCheckerOptions& options) : options_(options) {}

  CheckResult Check(const ir::Problem& problem, const ir::Mesh& mesh,
                    const ir::Trace& trace) override {
    CheckResult result;
    std::map<std::string, int64_t> extents = problem.extents;
    absl::StatusOr<Lowered> real = LowerAt(problem, extents, mesh, trace);
    if (!real.ok()) {
      result.error = std::string(real.status().message());
      return result;
    }
    Lowered run = *std::move(real);
    ir::Mesh sim_mesh = mesh;
    if (mesh.Ranks() > options_.max_ranks && !ScaleMesh(problem, trace, &sim_mesh, &run)) {
      result.error = absl::StrCat("too many ranks to simulate (", mesh.Ranks(),
                                  "): on no mesh of at most ", options_.max_ranks,
                                  " ranks does the schedule keep its transfers and patterns");
      return result;
    }
    if (!Small(run, options_.scale_above)) ScaleExtents(problem, trace, sim_mesh, &extents, &run);
    const bool scaled = extents != problem.extents || sim_mesh.Ranks() != mesh.Ranks();
    result.how = scaled ? "simulated-scaled" : "simulated";
    if (scaled) {
      std::vector<std::string> parts;
      for (const auto& [index, extent] : extents) parts.push_back(absl::StrCat(index, "=", extent));
      result.scaled = absl::StrJoin(parts, ",");
      if (sim_mesh.Ranks() != mesh.Ranks())
        absl::StrAppend(&result.scaled, " on ", sim_mesh.ToString());
    }
    if (!Small(run, options_.max_instances)) {
      result.error = absl::StrCat(
          "too large to simulate", scaled ? " even scaled down to " + result.scaled : "", " (",
          run.instances, " instances, ", base::FormatBytes(run.bytes), " over all ranks)");
      return result;
    }
    runtime::SimOptions sim;
    sim.seed = options_.seed;
    const runtime::RunStats m =
        runtime::Simulate(runtime::ProblemSpecOf(run.problem), run.program, sim);
    result.ok = m.verified;
    if (!m.verified) {
      result.error = absl::StrCat(result.how, result.scaled.empty() ? "" : " at " + result.scaled,
                                  ": ", m.error.empty() ? "not verified" : m.error);
    }
    return result;
  }

 private:
  // Whether `l` has at most `limit` instances and coverage counts and fits max_bytes.
  bool Small(const Lowered& l, int64_t limit) const {
    return l.instances <= limit && l.coverage <= limit && l.bytes <= options_.max_bytes;
  }

  // Whether the trace, lowered as `*run` on `*mesh` at the problem's extents, keeps its
  // transfers and patterns on a smaller mesh (SmallerMeshes, the first 16 tried); if so,
  // sets `*mesh` and `*run` to it.
  bool ScaleMesh(const ir::Problem& problem, const ir::Trace& trace, ir::Mesh* mesh,
                 Lowered* run) const {
    int tries = 0;
    for (const ir::Mesh& m : SmallerMeshes(*mesh, options_.max_ranks)) {
      if (++tries > 16) break;
      absl::StatusOr<Lowered> scaled = LowerAt(problem, problem.extents, m, trace);
      if (scaled.ok() && SameShape(*scaled, *run)) {
        *run = *std::move(scaled);
        *mesh = m;
        return true;
      }
    }
    return false;
  }

  // Scaled extents at which the trace still applies on `mesh` and lowers to the same
  // transfers and patterns, with every loop of several iterations still of several: every
  // index at its least extent (Lowered::least_extents) when that keeps them, which is
  // usual, else each index in turn at the smallest extent, from its least, that does.
  // Updates `*extents` and `*run`.
  void ScaleExtents(const ir::Problem& problem, const ir::Trace& trace, const ir::Mesh& mesh,
                    std::map<std::string, int64_t>* extents, Lowered* run) const {
    const std::map<std::string, int64_t> least = run->least_extents;
    if (least == *extents) return;  // nothing to scale
    absl::StatusOr<Lowered> all = LowerAt(problem, least, mesh, trace);
    if (all.ok() && SameShape(*all, *run)) {
      *run = *std::move(all);
      *extents = least;
      return;
    }
    for (auto& [index, extent] : *extents) {
      const int64_t full = extent;
      int tries = 0;
      for (int64_t d : Divisors(full)) {
        if (d == 1) break;
        if (full / d < least.at(index)) continue;
        if (++tries > 16) break;
        extent = full / d;
        absl::StatusOr<Lowered> scaled = LowerAt(problem, *extents, mesh, trace);
        if (scaled.ok() && SameShape(*scaled, *run)) {
          *run = *std::move(scaled);
          break;
        }
        extent = full;
      }
    }
  }

  SimulatingCheckerOptions options_;
};

}  // namespace

absl::StatusOr<Runnable> PrepareCandidate(const ir::Problem& problem, const ir::Mesh& mesh,
                                          const ir::Trace& trace) {
  MT_ASSIGN_OR_RETURN(ir::Computation base, ir::Computation::Create(problem, mesh));
  MT_ASSIGN_OR_RETURN(codegen::Prepared prepared, codegen::Prepare(base, trace));
  if (!prepared.verdict.legal) return ir::IllegalSchedule(prepared.verdict.reasons[0]);
  MT_ASSIGN_OR_RETURN(codegen::Program program, std::move(prepared.program));
  return Runnable{std::move(program), prepared.footprint};
}

absl::StatusOr<Runnable> Checker::Validate(const ir::Problem& problem, const ir::Mesh& mesh,
                                           const ir::Trace& trace) {
  return PrepareCandidate(problem, mesh, trace);
}

std::unique_ptr<Checker> NewSimulatingChecker(const SimulatingCheckerOptions& options) {
  return std::make_unique<SimulatingChecker>(options);
}

}  // namespace meshtune::search
