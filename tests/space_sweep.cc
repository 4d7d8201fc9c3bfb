#include "tests/space_sweep.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/lower.h"
#include "codegen/validate/validate.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/trace.h"
#include "ir/verdict.h"
#include "runtime/simulator.h"
#include "search/evaluator.h"
#include "search/space.h"

namespace meshtune::testing {

std::string SweepCase::Name() const {
  return absl::StrCat(expr, " ", extents, " on ", mesh, allow_replication ? " (replication)" : "",
                      split_distributed ? " (split)" : "", rotation_steps ? " (steps)" : "",
                      all_to_all ? " (all-to-all)" : "", rings_only ? " (rings)" : "",
                      result_on_layer ? " (result on layer)" : "",
                      layouts.empty() ? "" : " layouts ", absl::StrJoin(layouts, ","));
}

namespace {

// Every legal genome of the evaluator's space.
std::vector<search::Genome> LegalGenomes(search::Evaluator& ev) {
  std::vector<search::Genome> out;
  const search::Space& space = ev.space();
  for (int n = 0; n < static_cast<int>(space.nests().size()); ++n) {
    const search::NestChoices& nest = space.nests()[n];
    for (int r = 0; r < static_cast<int>(nest.rotations.size()); ++r) {
      const search::NestTable& table = ev.Table(n, r);
      if (!table.usable || table.legal_points == 0) continue;
      // The cartesian product of each tensor's legal options.
      std::vector<size_t> at(table.legal.size(), 0);
      bool empty = false;
      for (const auto& l : table.legal) empty |= l.empty();
      if (empty) continue;
      while (true) {
        search::Genome g;
        g.nest = n;
        g.rotation = r;
        for (size_t t = 0; t < at.size(); ++t) g.options.push_back(table.legal[t][at[t]]);
        if (ev.Legal(g)) out.push_back(std::move(g));
        size_t t = 0;
        while (t < at.size() && ++at[t] == table.legal[t].size()) at[t++] = 0;
        if (t == at.size()) break;
      }
    }
  }
  return out;
}

// Judges, lowers, checks and simulates one trace into `result`.
void CheckOne(const ir::Computation& base, const std::string& trace, const ProgramCheck& check,
              codegen::LoweringCache* cache, std::set<std::string>* programs, SweepResult* result) {
  ++result->checked;
  result->prefetched += trace.find("prefetch=1") != std::string::npos;
  result->stepped += trace.find("step=") != std::string::npos;
  auto fail = [&](std::string error) { result->failures.push_back({trace, std::move(error)}); };
  absl::StatusOr<ir::Trace> parsed = ir::ParseTrace(trace);
  if (!parsed.ok())
    return fail(absl::StrCat("the trace does not parse: ", parsed.status().message()));
  absl::StatusOr<ir::Verdict> verdict = ir::Judge(base, *parsed);
  if (!verdict.ok()) return fail(absl::StrCat("judging failed: ", verdict.status().message()));
  if (!verdict->legal) {
    return fail(absl::StrCat("judged illegal: [", verdict->reasons[0].code, "] ",
                             verdict->reasons[0].message));
  }
  codegen::LowerOptions lower;
  lower.cache = cache;
  absl::StatusOr<codegen::Program> program = codegen::LowerValidated(verdict->computation, lower);
  if (!program.ok()) {
    if (absl::IsUnimplemented(program.status())) {
      ++result->unlowerable;
      const std::string why(program.status().message());
      ++result->unlowerable_reasons[absl::StrContains(why, "is not a box of fixed size")
                                        ? "the data of a transfer is not a box of fixed size"
                                        : why];
      return;
    }
    return fail(absl::StrCat("lowering failed: ", program.status().message()));
  }
  programs->insert(search::Evaluator::ProgramKey(*program, verdict->computation));
  for (const codegen::TransferSummary& t : codegen::Summarize(*program)) {
    if (t.pattern.kind == codegen::CommPattern::Kind::kAllToAll) {
      ++result->all_to_all;
      break;
    }
  }
  for (const codegen::TensorInfo& t : program->tensors) {
    if (!codegen::LayerAxes(*program, t).empty()) ++result->onto_layer;
  }
  for (const codegen::TransferSummary& t : codegen::Summarize(*program)) {
    result->rings += t.pattern.kind == codegen::CommPattern::Kind::kRingReduce;
  }
  if (check) {
    std::string error = check(verdict->computation, *program);
    if (!error.empty()) return fail(std::move(error));
  }
  const runtime::RunStats m =
      runtime::Simulate(runtime::ProblemSpecOf(verdict->computation.problem()), *program);
  if (!m.verified) fail(m.error.empty() ? "not verified" : m.error);
}

}  // namespace

absl::StatusOr<ir::Computation> Base(const SweepCase& c) {
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(c.expr, c.extents);
  if (!problem.ok()) return problem.status();
  if (absl::Status s = ir::SetLayouts(c.layouts, &*problem); !s.ok()) return s;
  problem->result_on_layer = c.result_on_layer;
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(c.mesh);
  if (!mesh.ok()) return mesh.status();
  return ir::Computation::Create(*problem, *mesh);
}

namespace {

// Every legal genome when the space has at most `max` of them, else `max` distinct ones
// drawn with `seed`: a (nest, rotation) cell in proportion to its legal points, then each
// tensor's option uniformly among its legal ones. `*total` is the space's legal points.
std::vector<search::Genome> PickGenomes(search::Evaluator& ev, int64_t max, uint64_t seed,
                                        int64_t* total) {
  const search::Space& space = ev.space();
  std::vector<std::pair<int, int>> cells;
  std::vector<double> weights;
  *total = 0;
  for (int n = 0; n < static_cast<int>(space.nests().size()); ++n) {
    for (int r = 0; r < static_cast<int>(space.nests()[n].rotations.size()); ++r) {
      const search::NestTable& table = ev.Table(n, r);
      if (!table.usable || table.legal_points == 0) continue;
      cells.emplace_back(n, r);
      weights.push_back(static_cast<double>(table.legal_points));
      *total += table.legal_points;
    }
  }
  if (*total <= max) return LegalGenomes(ev);
  std::mt19937_64 rng(seed);
  std::discrete_distribution<size_t> pick_cell(weights.begin(), weights.end());
  std::set<std::vector<int>> seen;
  std::vector<search::Genome> out;
  for (int64_t attempts = 0; static_cast<int64_t>(out.size()) < max && attempts < 100 * max;
       ++attempts) {
    const auto [n, r] = cells[pick_cell(rng)];
    const search::NestTable& table = ev.Table(n, r);
    search::Genome g;
    g.nest = n;
    g.rotation = r;
    for (const std::vector<int>& legal : table.legal) {
      g.options.push_back(legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)]);
    }
    std::vector<int> key = {n, r};
    key.insert(key.end(), g.options.begin(), g.options.end());
    if (!ev.Legal(g) || !seen.insert(key).second) continue;
    out.push_back(std::move(g));
  }
  return out;
}

// The legal genomes that communicate the output at a rotated loop, all when there are at
// most `max`, else `max` of them drawn with `seed`; `*total` is how many there are.
std::vector<search::Genome> RotatedOutputs(search::Evaluator& ev, int64_t max, uint64_t seed,
                                           int64_t* total) {
  const std::string& out = ev.base().problem().output.tensor;
  std::vector<search::Genome> rotated;
  for (search::Genome& g : LegalGenomes(ev)) {
    for (const ir::Instruction& i : ev.space().ToTrace(g).instructions) {
      const auto* c = std::get_if<ir::CommunicateCall>(&i);
      if (c != nullptr && c->tensor == out && !c->rotate.empty()) {
        rotated.push_back(std::move(g));
        break;
      }
    }
  }
  *total = static_cast<int64_t>(rotated.size());
  if (*total <= max) return rotated;
  std::shuffle(rotated.begin(), rotated.end(), std::mt19937_64(seed));
  rotated.resize(static_cast<size_t>(max));
  return rotated;
}

}  // namespace

absl::StatusOr<SweepResult> CheckTrace(const SweepCase& c, const std::string& trace,
                                       const ProgramCheck& check) {
  absl::StatusOr<ir::Computation> base = Base(c);
  if (!base.ok()) return base.status();
  SweepResult result;
  std::set<std::string> programs;
  CheckOne(*base, trace, check, nullptr, &programs, &result);
  result.legal_points =
      result.failures.empty() || result.failures[0].error.rfind("judged illegal", 0) != 0;
  result.distinct_programs = static_cast<int64_t>(programs.size());
  return result;
}

absl::StatusOr<std::vector<std::string>> SampleTraces(const SweepCase& c, int64_t max_points,
                                                      uint64_t seed, int64_t* legal_points) {
  absl::StatusOr<ir::Computation> base = Base(c);
  if (!base.ok()) return base.status();
  search::SpaceOptions options;
  options.allow_replication = c.allow_replication;
  options.split_distributed = c.split_distributed;
  options.rotation_steps = c.rotation_steps;
  options.all_to_all = c.all_to_all;
  absl::StatusOr<search::Space> space = search::Space::Build(*base, options);
  if (!space.ok()) return space.status();
  cost::CostParams params;
  search::Evaluator ev(*base, *std::move(space), params);
  const std::vector<search::Genome> genomes =
      c.rings_only ? RotatedOutputs(ev, max_points, seed, legal_points)
                   : PickGenomes(ev, max_points, seed, legal_points);
  std::vector<std::string> traces;
  for (const search::Genome& g : genomes) traces.push_back(ev.space().ToTrace(g).ToString());
  return traces;
}

absl::StatusOr<SweepResult> SweepSpace(const SweepCase& c, int64_t max_points, uint64_t seed,
                                       const ProgramCheck& check) {
  absl::StatusOr<ir::Computation> base = Base(c);
  if (!base.ok()) return base.status();
  SweepResult result;
  absl::StatusOr<std::vector<std::string>> traces =
      SampleTraces(c, max_points, seed, &result.legal_points);
  if (!traces.ok()) return traces.status();
  codegen::LoweringCache cache;
  std::set<std::string> programs;
  for (const std::string& trace : *traces)
    CheckOne(*base, trace, check, &cache, &programs, &result);
  result.distinct_programs = static_cast<int64_t>(programs.size());
  return result;
}

}  // namespace meshtune::testing
