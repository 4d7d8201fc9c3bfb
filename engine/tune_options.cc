#include "engine/tune_options.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "base/status_macros.h"
#include "engine/requests.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "storage/hardware_profile.h"
#include "storage/machine_fingerprint.h"

namespace meshtune::engine {

namespace {

constexpr double kMaxBudgetS = 7 * 24 * 3600;
constexpr int kMaxTopK = 1000;

// `o.params` from numbers.params, or from the profile `profile` (the built-in numbers when
// the default profile was never calibrated and none was named; `warning` then says so), then
// numbers' alpha, beta and gamma over them. Errors as TuneOptionsFromRequest's for profiles.
absl::Status SetMachineNumbers(const MachineNumbers& numbers, const std::string& profile,
                               bool profile_given, search::TuneOptions& o, std::string* warning) {
  const bool overridden = numbers.alpha && numbers.beta && numbers.gamma;
  if (numbers.params) {
    o.params = *numbers.params;
  } else if (absl::StatusOr<v1::HardwareProfile> loaded = storage::LoadProfile(profile);
             loaded.ok()) {
    o.params = storage::ToCostParams(*loaded);
    // Gamma is per rank with every rank busy, and on a shared node it depends on how many
    // ranks share the cores: a profile from another rank count misjudges the trade-offs.
    const int64_t ranks = o.meshes.empty() ? 0 : o.meshes.front().Ranks();
    if (warning != nullptr && loaded->ranks() > 0 && ranks > 0 && loaded->ranks() != ranks &&
        !overridden) {
      *warning = absl::StrCat("hardware profile \"", profile, "\" was calibrated on ",
                              loaded->ranks(), " ranks, this tune runs on ", ranks,
                              ": for this rank count run `meshtune calibrate --ranks ", ranks,
                              " --name NAME` and tune with --profile NAME");
    }
  } else if (loaded.status().code() == absl::StatusCode::kNotFound && !profile_given) {
    o.params = BuiltinCostParams();
    if (warning != nullptr && !overridden) *warning = BuiltinNumbersNote(profile);
  } else {
    return loaded.status();
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
  std::set<std::string> taken(o.problem.indices.begin(), o.problem.indices.end());
  for (const std::string& t : o.problem.Tensors()) taken.insert(t);
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

std::string BuiltinNumbersNote(const std::string& profile) {
  return absl::StrCat("no hardware profile \"", profile,
                      "\": using built-in machine numbers; run `meshtune calibrate --ranks P` for "
                      "this machine's own numbers");
}

search::CostParams BuiltinCostParams() {
  search::CostParams p;
  p.alpha = 1e-6;
  p.beta = 2.5e-10;
  p.alpha_coll = 1e-6;
  p.beta_coll = 5e-10;
  p.gamma = 1.0 / 30e9;
  return p;
}

std::string ProfileMachine(const std::string& name) {
  const absl::StatusOr<v1::HardwareProfile> profile =
      storage::LoadProfile(name.empty() ? "default" : name);
  if (profile.ok()) return storage::MachineFingerprint(&*profile);
  if (profile.status().code() == absl::StatusCode::kNotFound)
    return storage::MachineFingerprint(nullptr);
  return "";
}

absl::StatusOr<search::CostParams> ProfileCostParams(const std::string& profile) {
  const std::string name = profile.empty() ? "default" : profile;
  absl::StatusOr<v1::HardwareProfile> loaded = storage::LoadProfile(name);
  if (loaded.ok()) return storage::ToCostParams(*loaded);
  if (loaded.status().code() == absl::StatusCode::kNotFound && name == "default") {
    return BuiltinCostParams();
  }
  return loaded.status();
}

absl::StatusOr<ir::Problem> InPlaceProblem(const v1::TuneRequest& request) {
  if (absl::Status s = InPlaceHasMesh(request); !s.ok()) return s;
  absl::StatusOr<ir::Problem> problem = ProblemOf(request.problem());
  if (!problem.ok()) return problem.status();
  problem->result_on_layer = false;
  return InPlaceOf(*problem, request);
}

absl::StatusOr<search::TuneOptions> TuneOptionsFromRequest(const v1::TuneRequest& request,
                                                           std::string* warning,
                                                           const MachineNumbers& numbers) {
  MT_ASSIGN_OR_RETURN(const ir::Problem stated, ProblemOf(request.problem()));
  return TuneOptionsFor(stated, request, warning, numbers);
}

absl::StatusOr<search::TuneOptions> TuneOptionsFor(const ir::Problem& stated,
                                                   const v1::TuneRequest& request,
                                                   std::string* warning,
                                                   const MachineNumbers& numbers) {
  if (HasMeshAxes(request.mesh()) && request.ranks() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("give exactly one of mesh (\"",
                                                   base::Excerpt(MeshText(request.mesh())),
                                                   "\") and ranks (", request.ranks(), ")"));
  }
  search::TuneOptions o;
  absl::StatusOr<ir::Problem> problem = TunedProblem(stated, request);
  if (!problem.ok()) return problem.status();
  o.problem = *std::move(problem);
  if (absl::Status s = SetMeshes(request, o); !s.ok()) return s;
  if (absl::Status s = SetLimits(request, numbers, o); !s.ok()) return s;
  const std::string profile = request.profile().empty() ? "default" : request.profile();
  if (absl::Status s = SetMachineNumbers(numbers, profile, !request.profile().empty(), o, warning);
      !s.ok()) {
    return s;
  }
  o.evolution.seed = request.has_seed() ? request.seed() : 1;
  o.space.allow_replication = request.allow_replication();
  o.space.split_distributed = request.split_distributed();
  o.space.rotation_steps = request.rotation_steps();
  o.space.all_to_all = request.all_to_all();
  return o;
}

}  // namespace meshtune::engine
