#include "tests/mpi_sweep.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower.h"
#include "codegen/program.h"
#include "ir/trace.h"
#include "ir/verdict.h"

namespace meshtune::testing {

namespace {

// The pattern kinds of `trace` on `base`'s problem and mesh ("Shift", "Shift prefetched").
absl::StatusOr<std::set<std::string>> KindsOf(const ir::Computation& base,
                                              const std::string& trace) {
  absl::StatusOr<ir::Trace> parsed = ir::ParseTrace(trace);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<ir::Verdict> verdict = ir::Judge(base, *parsed);
  if (!verdict.ok()) return verdict.status();
  if (!verdict->legal) return absl::InternalError("a sampled point is illegal:\n" + trace);
  codegen::LowerOptions options;
  options.offsets = false;  // patterns only
  absl::StatusOr<codegen::Program> program = codegen::Lower(verdict->computation, options);
  if (!program.ok()) return program.status();
  std::set<std::string> kinds;
  for (const codegen::TransferSummary& s : codegen::Summarize(*program)) {
    const codegen::CommPattern::Kind k = s.pattern.kind;
    if (k == codegen::CommPattern::Kind::kLocal) continue;
    kinds.insert(absl::StrCat(s.pattern.Name(), s.prefetch ? " prefetched" : ""));
  }
  return kinds;
}

}  // namespace

absl::StatusOr<std::vector<MpiPoint>> DrawMpiPoints(const std::vector<SweepCase>& spaces,
                                                    int64_t per_space, uint64_t seed) {
  std::vector<MpiPoint> out;
  std::set<std::string> covered;
  for (const SweepCase& c : spaces) {
    absl::StatusOr<ir::Computation> base = Base(c);
    if (!base.ok()) return base.status();
    int64_t legal = 0;
    absl::StatusOr<std::vector<std::string>> traces = SampleTraces(c, 4 * per_space, seed, &legal);
    if (!traces.ok()) return traces.status();
    std::vector<MpiPoint> sample;
    for (const std::string& t : *traces) {
      absl::StatusOr<std::set<std::string>> kinds = KindsOf(*base, t);
      if (!kinds.ok()) return kinds.status();
      sample.push_back({c, t, *std::move(kinds)});
    }
    std::vector<bool> taken(sample.size(), false);
    int64_t chosen = 0;
    // First the points that bring a kind not yet covered...
    for (size_t i = 0; i < sample.size() && chosen < per_space; ++i) {
      bool brings = false;
      for (const std::string& k : sample[i].kinds) brings = brings || covered.count(k) == 0;
      if (!brings) continue;
      covered.insert(sample[i].kinds.begin(), sample[i].kinds.end());
      taken[i] = true;
      ++chosen;
      out.push_back(sample[i]);
    }
    // ...then the sample in its order.
    for (size_t i = 0; i < sample.size() && chosen < per_space; ++i) {
      if (taken[i]) continue;
      ++chosen;
      out.push_back(sample[i]);
    }
  }
  return out;
}

absl::StatusOr<MpiSweepResult> RunMpiSweep(const std::string& worker, int ranks,
                                           const std::vector<MpiPoint>& points,
                                           const std::string& dir) {
  const std::string file = dir + "/mpi_sweep_points.txt", log = dir + "/mpi_sweep_out.txt";
  {
    std::ofstream f(file);
    for (const MpiPoint& p : points) {
      f << "point " << p.space.expr << "\nextents " << p.space.extents << "\nmesh " << p.space.mesh
        << "\nresult_on_layer " << (p.space.result_on_layer ? 1 : 0) << "\ntrace\n"
        << p.trace << (absl::EndsWith(p.trace, "\n") ? "" : "\n") << "end\n";
    }
    if (!f) return absl::InternalError("cannot write " + file);
  }
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const std::string cmd = absl::StrCat("timeout 600 mpirun -n ", ranks, " --oversubscribe ", worker,
                                       " ", file, " >", log, " 2>&1");
  const int rc = std::system(cmd.c_str());
  MpiSweepResult r;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  r.output = text.str();
  if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    return absl::InternalError(absl::StrCat("`", cmd, "` exited with ", rc, ":\n", r.output));
  }
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    size_t n = 0;
    const size_t colon = line.find(": ");
    if (!absl::StartsWith(line, "point ") || colon == std::string::npos ||
        !absl::SimpleAtoi(line.substr(6, colon - 6), &n) || n >= points.size())
      continue;
    ++r.points;
    for (const std::string& k : points[n].kinds) ++r.kinds[k];
    if (line.substr(colon + 2) == "verified") {
      ++r.verified;
    } else {
      r.failures.push_back(absl::StrCat(line, "\n", points[n].space.Name(), "\n", points[n].trace));
    }
  }
  if (r.points != static_cast<int64_t>(points.size())) {
    return absl::InternalError(
        absl::StrCat("the job reported ", r.points, " of ", points.size(), " points:\n", r.output));
  }
  return r;
}

}  // namespace meshtune::testing
