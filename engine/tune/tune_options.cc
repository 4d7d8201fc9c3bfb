#include "engine/tune/tune_options.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "engine/job.h"
#include "engine/requests.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "ir/statement_program.h"

namespace meshtune::engine {

namespace {

constexpr double kMaxBudgetS = 7 * 24 * 3600;
constexpr int kMaxTopK = 1000;

// `o.params` from numbers.params, or from the profile ChooseProfile picks for the tune's rank
// count (calibrated on first use unless the request says no_calibrate; `warning` gets its
// note), then numbers' alpha, beta and gamma over them. ChooseProfile's errors.
absl::Status SetMachineNumbers(const MachineNumbers& numbers, const v1::TuneRequest& request,
                               search::TuneOptions& o, std::string* warning) {
  if (numbers.params) {
    o.params = *numbers.params;
  } else {
    int64_t ranks = request.ranks();
    for (const ir::Mesh& m : o.meshes) ranks = std::max(ranks, m.Ranks());
    MT_ASSIGN_OR_RETURN(
        const ChosenProfile chosen,
        ChooseProfile(request.profile(), ranks,
                      request.no_calibrate() ? FirstUse::kBuiltin : FirstUse::kCalibrate));
    o.params = chosen.params;
    const bool overridden = numbers.alpha && numbers.beta && numbers.gamma;
    if (warning != nullptr && (!overridden || chosen.calibrated_now)) *warning = chosen.note;
  }
  if (numbers.alpha) o.params.alpha = o.params.alpha_coll = *numbers.alpha;
  if (numbers.beta) o.params.beta = o.params.beta_coll = *numbers.beta;
  if (numbers.gamma) o.params.gamma = *numbers.gamma;
  return absl::OkStatus();
}

// InvalidArgument when an in-place tune has no mesh.
absl::Status InPlaceHasMesh(const v1::TuneRequest& request) {
  if (HasMeshAxes(request.mesh())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "--in-place needs --mesh: the cyclic layouts' process grid is the mesh's first two axes");
}

// The in-place form of `problem` on the request's mesh. Errors as InPlaceProblem's.
absl::StatusOr<ir::Problem> InPlaceOf(const ir::Problem& problem, const v1::TuneRequest& request) {
  if (absl::Status s = InPlaceHasMesh(request); !s.ok()) return s;
  absl::StatusOr<ir::Mesh> mesh = MeshAxesOf(request.mesh());
  if (!mesh.ok()) return mesh.status();
  absl::StatusOr<ir::Problem> in_place = ir::InPlaceForm(problem, *mesh);
  if (!in_place.ok()) return absl::InvalidArgumentError(in_place.status().message());
  return in_place;
}

// The problem the request tunes, from the problem it states (with its layouts): in its
// in-place form with in_place, without result_on_layer.
absl::StatusOr<ir::Problem> TunedProblem(ir::Problem stated, const v1::TuneRequest& request) {
  stated.result_on_layer = false;
  if (request.in_place()) return InPlaceOf(stated, request);
  return stated;
}

// `o.meshes`: the request's mesh, or every factorisation of its rank count (down to half of
// it with allow_idle_ranks), each with the memory budget. Errors as TuneOptionsFromRequest's.
absl::Status SetMeshes(const v1::TuneRequest& request, search::TuneOptions& o) {
  absl::StatusOr<std::optional<int64_t>> mem = MemPerRankOf(request.mesh());
  if (!mem.ok()) return mem.status();
  const int64_t ranks = request.ranks();
  if (!HasMeshAxes(request.mesh()) == (ranks == 0)) {
    return absl::InvalidArgumentError(
        "give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)");
  }
  if (ranks == 0) {
    if (request.allow_idle_ranks()) {
      return absl::InvalidArgumentError(
          "--allow-idle-ranks needs --ranks: a mesh given with --mesh uses all its ranks");
    }
    absl::StatusOr<ir::Mesh> mesh = MeshAxesOf(request.mesh());
    if (!mesh.ok()) return mesh.status();
    mesh->mem_per_rank_bytes = *mem;
    o.meshes.push_back(*std::move(mesh));
    return absl::OkStatus();
  }
  if (ranks < 1 || ranks > ir::kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ranks ", ranks, " is out of range: give 1 to ", ir::kMaxRanks, " ranks"));
  }
  std::set<std::string> taken;
  for (const ir::Problem& p : o.program.statements) {
    taken.insert(p.indices.begin(), p.indices.end());
    for (const std::string& t : p.Tensors()) taken.insert(t);
  }
  // With idle ranks allowed, fewer ranks down to half: the full count's meshes first.
  const int64_t fewest = request.allow_idle_ranks() ? (ranks + 1) / 2 : ranks;
  for (int64_t r = ranks; r >= std::max<int64_t>(fewest, 2); --r) {
    for (ir::Mesh& m : search::MeshFactorisations(r, *mem, taken)) o.meshes.push_back(std::move(m));
  }
  if (o.meshes.empty()) o.meshes = search::MeshFactorisations(ranks, *mem, taken);
  return absl::OkStatus();
}

// The search's limits: top-k, budget and evaluations (their defaults when the request
// leaves them unset), in range; and the machine numbers' overrides finite and >= 0.
absl::Status SetLimits(const v1::TuneRequest& request, const MachineNumbers& numbers,
                       search::TuneOptions& o) {
  const int top_k = request.has_top_k() ? request.top_k() : 4;
  const double budget_s = request.has_budget_s() ? request.budget_s() : 600;
  const int64_t max_evaluations = request.has_max_evaluations() ? request.max_evaluations() : 1000;
  if (top_k < 0 || top_k > kMaxTopK) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top-k ", top_k, " is out of range: 0 to ", kMaxTopK));
  }
  if (!(budget_s > 0) || budget_s > kMaxBudgetS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--budget-s ", budget_s, " is out of range: more than 0, at most ", kMaxBudgetS));
  }
  if (max_evaluations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-evaluations ", max_evaluations, " must be at least 1"));
  }
  for (const auto& [name, v] : {std::pair{"--alpha", numbers.alpha},
                                {"--beta", numbers.beta},
                                {"--gamma", numbers.gamma}}) {
    if (v.has_value() && !(*v >= 0 && std::isfinite(*v))) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " ", *v, " must be a finite number >= 0"));
    }
  }
  o.top_k = request.model_only() ? 0 : top_k;
  o.budget_s = budget_s;
  o.max_evaluations = max_evaluations;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Problem> InPlaceProblem(const v1::TuneRequest& request) {
  if (absl::Status s = InPlaceHasMesh(request); !s.ok()) return s;
  absl::StatusOr<ir::StatementProgram> program = ProgramOf(request.problem());
  if (!program.ok()) return program.status();
  if (!program->single()) return absl::InvalidArgumentError(std::string(kInPlaceTakesOneStatement));
  ir::Problem& problem = program->statements[0];
  problem.result_on_layer = false;
  return InPlaceOf(problem, request);
}

absl::StatusOr<search::TuneOptions> TuneOptionsFromRequest(const v1::TuneRequest& request,
                                                           std::string* warning,
                                                           const MachineNumbers& numbers) {
  MT_ASSIGN_OR_RETURN(const ir::StatementProgram stated, ProgramOf(request.problem()));
  return TuneOptionsFor(stated, request, warning, numbers);
}

absl::StatusOr<search::TuneOptions> TuneOptionsFor(const ir::StatementProgram& stated,
                                                   const v1::TuneRequest& request,
                                                   std::string* warning,
                                                   const MachineNumbers& numbers) {
  if (HasMeshAxes(request.mesh()) && request.ranks() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("give exactly one of mesh (\"",
                                                   base::Excerpt(MeshText(request.mesh())),
                                                   "\") and ranks (", request.ranks(), ")"));
  }
  search::TuneOptions o;
  if (stated.single()) {
    MT_ASSIGN_OR_RETURN(ir::Problem problem, TunedProblem(stated.statements[0], request));
    o.program = ir::ProgramOf(problem);
  } else if (request.in_place()) {
    return absl::InvalidArgumentError(std::string(kInPlaceTakesOneStatement));
  } else {
    o.program = stated;
  }
  if (absl::Status s = SetMeshes(request, o); !s.ok()) return s;
  if (absl::Status s = SetLimits(request, numbers, o); !s.ok()) return s;
  if (absl::Status s = SetMachineNumbers(numbers, request, o, warning); !s.ok()) return s;
  o.evolution.seed = request.has_seed() ? request.seed() : 1;
  o.space.allow_replication = request.allow_replication();
  o.space.split_distributed = request.split_distributed();
  o.space.rotation_steps = request.rotation_steps();
  o.space.all_to_all = request.all_to_all();
  return o;
}

}  // namespace meshtune::engine
