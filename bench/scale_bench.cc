// Search quality at scale: model-only tunes of C[m,n] += A[m,k] * B[k,n] for rank counts P
// and four shapes, one markdown table row per (P, shape): what the tuner chose (mesh,
// schedule class, family), its predicted time and words per rank against the lower bound,
// and the best candidate it costed of each schedule class (search/schedule_class.h), so a
// class the search missed or misjudged shows.
//
//   bazel build -c opt //bench:scale_bench
//   bazel-bin/bench/scale_bench [--ranks 64,256,1024,4096,16384,65536]
//       [--shapes square,tall,flat,k-heavy] [--size 8192] [--budget-s 600]
//
// Each tune is `meshtune tune --model-only --ranks P`'s: every mesh of P ranks
// (MeshFactorisations), top_k 0, the default max_evaluations (1000) and max_exhaustive, with
// --budget-s for the whole tune (the search gets half). The shapes, for --size N (a power of
// two, at least 64), all of N^3 multiply-adds:
//   square   m = n = k = N
//   tall     m = 16N, n = k = N/4     (m = 64 n = 64 k)
//   flat     m = n = 4N, k = N/16     (k = m / 64)
//   k-heavy  m = n = N/4, k = 16N     (k = 64 m = 64 n)
// Machine numbers are fixed as in search_bench (alpha 1 us, beta 1 ns/B, for point-to-point
// and collectives alike, gamma 30 GFLOP/s, no overlap) so runs compare; `meshtune tune`'s
// built-in numbers differ (beta 0.25 ns/B point-to-point, 0.5 ns/B collectives).
//
// Columns: P; shape; extents; wall seconds of the tune; peak RSS of the process so far
// (getrusage); strategy with points evaluated of legal; chosen mesh, class and family
// (FamilyOf without the mesh); predicted time; the winner's words per rank / the lower bound
// (search/lower_bound.h) = ratio; then per class the best predicted time and its words /
// lower bound ratio ("-" when the search costed none of the class). A tune that fails has
// its error in the chosen column.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "search/explorer.h"
#include "search/runner.h"
#include "search/schedule_class.h"
#include "search/space.h"
#include "search/tuner.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace search = meshtune::search;
namespace ir = meshtune::ir;

constexpr char kExpr[] = "C[m,n] += A[m,k] * B[k,n]";
const std::vector<std::string> kShapes = {"square", "tall", "flat", "k-heavy"};

struct Flags {
  std::vector<int64_t> ranks = {64, 256, 1024, 4096, 16384, 65536};
  std::vector<std::string> shapes = kShapes;
  int64_t size = 8192;
  double budget_s = 600;
};

absl::StatusOr<std::vector<int64_t>> ParseRanks(const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t p = 0;
    if (!absl::SimpleAtoi(part, &p) || p < 2 || p > ir::kMaxRanks) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ranks: '", part, "' is not a rank count from 2 to ", ir::kMaxRanks));
    }
    out.push_back(p);
  }
  if (out.empty()) return absl::InvalidArgumentError("--ranks: no rank count");
  return out;
}

absl::StatusOr<std::vector<std::string>> ParseShapes(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    if (std::find(kShapes.begin(), kShapes.end(), part) == kShapes.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--shapes: unknown shape '", part, "' (give ",
                                                     absl::StrJoin(kShapes, ","), ")"));
    }
    out.emplace_back(part);
  }
  if (out.empty()) return absl::InvalidArgumentError("--shapes: no shape");
  return out;
}

// The flags `--name value`; InvalidArgument naming the flag for anything else.
absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; i += 2) {
    const std::string name = argv[i];
    if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(name, ": no value"));
    const std::string value = argv[i + 1];
    if (name == "--ranks") {
      absl::StatusOr<std::vector<int64_t>> r = ParseRanks(value);
      if (!r.ok()) return r.status();
      f.ranks = *r;
    } else if (name == "--shapes") {
      absl::StatusOr<std::vector<std::string>> s = ParseShapes(value);
      if (!s.ok()) return s.status();
      f.shapes = *s;
    } else if (name == "--size") {
      if (!absl::SimpleAtoi(value, &f.size) || f.size < 64 || (f.size & (f.size - 1)) != 0)
        return absl::InvalidArgumentError("--size: give a power of two, at least 64");
    } else if (name == "--budget-s") {
      if (!absl::SimpleAtod(value, &f.budget_s) || !(f.budget_s > 0))
        return absl::InvalidArgumentError("--budget-s: give a positive number of seconds");
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", name));
    }
  }
  return f;
}

// The extents of `shape` for base extent n (see the file comment).
std::string ShapeExtents(const std::string& shape, int64_t n) {
  int64_t m = n, nn = n, k = n;
  if (shape == "tall") m = 16 * n, nn = k = n / 4;
  if (shape == "flat") m = nn = 4 * n, k = n / 16;
  if (shape == "k-heavy") m = nn = n / 4, k = 16 * n;
  return absl::StrCat("m=", m, ",n=", nn, ",k=", k);
}

double PeakRssMiB() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // KiB on Linux
}

std::string Seconds(double s) { return absl::StrFormat("%.4g s", s); }

std::string Ratio(const std::optional<double>& r) {
  return r.has_value() ? absl::StrFormat("%.2f", *r) : "-";
}

// One table cell per schedule class: "best predicted (words / lower bound)", or "-".
std::vector<std::string> ClassCells(const search::SearchResult& r) {
  std::vector<std::string> cells;
  for (const char* cls : search::kScheduleClasses) {
    std::string cell = "-";
    for (const search::ClassBest& b : r.class_bests) {
      if (b.schedule_class == cls)
        cell = absl::StrCat(Seconds(b.best.cost.seconds), " (", Ratio(b.lower_bound_ratio), ")");
    }
    cells.push_back(cell);
  }
  return cells;
}

// The cells after the common ones of a tune's row: strategy, chosen, predicted, words / lower
// bound, then the classes.
std::vector<std::string> ResultCells(const search::TuneOptions& o, const search::SearchResult& r) {
  const ir::Mesh& mesh = o.meshes[r.best.mesh];
  std::string family = search::FamilyOf(r.best, mesh);
  const std::string prefix = mesh.ToString() + ": ";
  if (family.rfind(prefix, 0) == 0) family = family.substr(prefix.size());
  std::string cls = "?";
  if (absl::StatusOr<ir::Trace> t = ir::ParseTrace(r.best.trace); t.ok())
    cls = search::ScheduleClassOfTrace(*t, o.program.statements[0], mesh).value_or("?");
  std::string words = absl::StrFormat("%.3g", static_cast<double>(r.best.cost.comm_words_per_rank));
  if (r.lower_bound.has_value()) {
    absl::StrAppend(&words, absl::StrFormat(" / %.3g = ", *r.lower_bound),
                    Ratio(r.lower_bound_ratio));
  }
  std::vector<std::string> cells = {
      absl::StrCat(r.strategy, ", ", r.counts.evaluated, " of ", r.counts.legal, " legal"),
      absl::StrCat(r.mesh.ToString(), " ", cls, ": ", family), Seconds(r.best.cost.seconds), words};
  for (std::string& c : ClassCells(r)) cells.push_back(std::move(c));
  return cells;
}

// The model-only tune of `extents` on every mesh of `ranks` ranks, its options in `*o`.
absl::StatusOr<search::SearchResult> RunTune(const Flags& flags, int64_t ranks,
                                             const std::string& extents, search::TuneOptions* o) {
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(kExpr, extents);
  if (!problem.ok()) return problem.status();
  o->program = ir::ProgramOf(*problem);
  std::set<std::string> taken(problem->indices.begin(), problem->indices.end());
  for (const std::string& t : problem->Tensors()) taken.insert(t);
  o->meshes = search::MeshFactorisations(ranks, std::nullopt, taken);
  o->params.alpha = o->params.alpha_coll = 1e-6;
  o->params.beta = o->params.beta_coll = 1e-9;
  o->params.gamma = 1.0 / 30e9;
  o->top_k = 0;
  o->budget_s = flags.budget_s;
  std::unique_ptr<search::Runner> runner = search::NewModelOnlyRunner();
  return search::Tune(*o, *runner);
}

// The row of (ranks, shape) as table cells (the error in the chosen column when the tune
// fails).
std::vector<std::string> TuneRow(const Flags& flags, int64_t ranks, const std::string& shape) {
  const std::string extents = ShapeExtents(shape, flags.size);
  std::vector<std::string> cells = {absl::StrCat(ranks), shape, extents};
  search::TuneOptions o;
  const Clock::time_point start = Clock::now();
  const absl::StatusOr<search::SearchResult> result = RunTune(flags, ranks, extents, &o);
  cells.push_back(
      absl::StrFormat("%.1f", std::chrono::duration<double>(Clock::now() - start).count()));
  cells.push_back(absl::StrFormat("%.0f MiB", PeakRssMiB()));
  if (!result.ok()) {
    const std::string error =
        absl::StrReplaceAll(result.status().ToString(), {{"|", "/"}, {"\n", " "}});
    cells.push_back("-");
    cells.push_back("error: " + error);
    cells.resize(cells.size() + 2 + search::kScheduleClasses.size(), "-");
    return cells;
  }
  for (std::string& c : ResultCells(o, *result)) cells.push_back(std::move(c));
  return cells;
}

void PrintRow(const std::vector<std::string>& cells) {
  std::printf("| %s |\n", absl::StrJoin(cells, " | ").c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<Flags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::fprintf(stderr,
                 "scale_bench: %s\nusage: scale_bench [--ranks 64,256] [--shapes square,tall,flat,"
                 "k-heavy] [--size 8192] [--budget-s 600]\n",
                 std::string(flags.status().message()).c_str());
    return 2;
  }
  std::printf(
      "%s, model-only, every mesh of P ranks, size %lld, budget %g s; alpha 1 us, beta 1 ns/B, "
      "gamma 30 GFLOP/s. Class cells: best predicted time (words per rank / lower bound).\n\n",
      kExpr, static_cast<long long>(flags->size), flags->budget_s);
  std::vector<std::string> header = {"P",      "shape",     "extents",
                                     "tune s", "peak RSS",  "strategy",
                                     "chosen", "predicted", "words / lower bound"};
  for (const char* cls : search::kScheduleClasses) header.push_back(cls);
  PrintRow(header);
  PrintRow(std::vector<std::string>(header.size(), "---"));
  for (int64_t ranks : flags->ranks) {
    for (const std::string& shape : flags->shapes) PrintRow(TuneRow(*flags, ranks, shape));
  }
  return 0;
}
