#include "engine/tune_options.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/layout.h"
#include "ir/mesh.h"
#include "ir/problem.h"
#include "storage/hardware_profile.h"
#include "storage/machine_fingerprint.h"

namespace meshtune::engine {

namespace {

constexpr double kMaxBudgetS = 7 * 24 * 3600;
constexpr int kMaxTopK = 1000;

// `o.params` from flags.params, or from the profile flags.profile (the built-in numbers
// when the default profile was never calibrated; `warning` then says so). Errors as
// MakeTuneOptions' for profiles.
absl::Status SetMachineNumbers(const TuneFlags& flags, search::TuneOptions& o,
                               std::string* warning) {
  if (flags.params) {
    o.params = *flags.params;
    return absl::OkStatus();
  }
  absl::StatusOr<v1::HardwareProfile> profile = storage::LoadProfile(flags.profile);
  if (profile.ok()) {
    o.params = storage::ToCostParams(*profile);
    // Gamma is per rank with every rank busy, and on a shared node it depends on how many
    // ranks share the cores: a profile from another rank count misjudges the trade-offs.
    const int64_t ranks = o.meshes.empty() ? 0 : o.meshes.front().Ranks();
    const bool overridden = flags.alpha && flags.beta && flags.gamma;
    if (warning != nullptr && profile->ranks() > 0 && ranks > 0 && profile->ranks() != ranks &&
        !overridden) {
      *warning = absl::StrCat("hardware profile \"", flags.profile, "\" was calibrated on ",
                              profile->ranks(), " ranks, this tune runs on ", ranks,
                              ": for this rank count run `meshtune calibrate --ranks ", ranks,
                              " --name NAME` and tune with --profile NAME");
    }
  } else if (profile.status().code() == absl::StatusCode::kNotFound && !flags.profile_given) {
    o.params = BuiltinCostParams();
    if (warning != nullptr && !(flags.alpha && flags.beta && flags.gamma)) {
      *warning = BuiltinNumbersNote(flags.profile);
    }
  } else {
    return profile.status();
  }
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

absl::StatusOr<ir::Problem> InPlaceProblem(const TuneFlags& flags) {
  if (flags.mesh.empty()) {
    return absl::InvalidArgumentError(
        "--in-place needs --mesh: the cyclic layouts' process grid is the mesh's first two axes");
  }
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(flags.expr, flags.extents, flags.dtype);
  if (!problem.ok()) return problem.status();
  if (absl::Status s = ir::SetLayouts(flags.layouts, &*problem); !s.ok()) return s;
  absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(flags.mesh);
  if (!mesh.ok()) return mesh.status();
  absl::StatusOr<ir::Problem> in_place = ir::InPlaceForm(*problem, *mesh);
  if (!in_place.ok()) return absl::InvalidArgumentError(in_place.status().message());
  return in_place;
}

absl::StatusOr<search::TuneOptions> MakeTuneOptions(const TuneFlags& flags, std::string* warning) {
  search::TuneOptions o;
  absl::StatusOr<ir::Problem> problem = ir::ParseProblem(flags.expr, flags.extents, flags.dtype);
  if (!problem.ok()) return problem.status();
  if (absl::Status s = ir::SetLayouts(flags.layouts, &*problem); !s.ok()) return s;
  if (flags.in_place) problem = InPlaceProblem(flags);
  if (!problem.ok()) return problem.status();
  o.problem = *std::move(problem);
  std::optional<int64_t> mem;
  if (!flags.mem_per_rank.empty()) {
    absl::StatusOr<int64_t> bytes = ir::ParseByteSize(flags.mem_per_rank);
    if (!bytes.ok()) return bytes.status();
    mem = *bytes;
  }
  if (flags.mesh.empty() == (flags.ranks == 0)) {
    return absl::InvalidArgumentError(
        "give exactly one of --mesh (e.g. x=2,y=2) and --ranks (e.g. 4)");
  }
  if (!flags.mesh.empty()) {
    if (flags.allow_idle_ranks) {
      return absl::InvalidArgumentError(
          "--allow-idle-ranks needs --ranks: a mesh given with --mesh uses all its ranks");
    }
    absl::StatusOr<ir::Mesh> mesh = ir::ParseMesh(flags.mesh);
    if (!mesh.ok()) return mesh.status();
    mesh->mem_per_rank_bytes = mem;
    o.meshes.push_back(*std::move(mesh));
  } else {
    if (flags.ranks < 1 || flags.ranks > ir::kMaxRanks) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--ranks ", flags.ranks, " is out of range: give 1 to ", ir::kMaxRanks, " ranks"));
    }
    std::set<std::string> taken(o.problem.indices.begin(), o.problem.indices.end());
    for (const std::string& t : o.problem.Tensors()) taken.insert(t);
    // With idle ranks allowed, fewer ranks down to half: the full count's meshes first.
    const int64_t fewest = flags.allow_idle_ranks ? (flags.ranks + 1) / 2 : flags.ranks;
    for (int64_t r = flags.ranks; r >= std::max<int64_t>(fewest, 2); --r) {
      for (ir::Mesh& m : search::MeshFactorisations(r, mem, taken))
        o.meshes.push_back(std::move(m));
    }
    if (o.meshes.empty()) o.meshes = search::MeshFactorisations(flags.ranks, mem, taken);
  }
  if (flags.top_k < 0 || flags.top_k > kMaxTopK) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top-k ", flags.top_k, " is out of range: 0 to ", kMaxTopK));
  }
  if (!(flags.budget_s > 0) || flags.budget_s > kMaxBudgetS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--budget-s ", flags.budget_s, " is out of range: more than 0, at most ", kMaxBudgetS));
  }
  if (flags.max_evaluations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-evaluations ", flags.max_evaluations, " must be at least 1"));
  }
  for (const auto& [name, v] :
       {std::pair{"--alpha", flags.alpha}, {"--beta", flags.beta}, {"--gamma", flags.gamma}}) {
    if (v.has_value() && !(*v >= 0 && std::isfinite(*v))) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " ", *v, " must be a finite number >= 0"));
    }
  }
  if (absl::Status numbers = SetMachineNumbers(flags, o, warning); !numbers.ok()) return numbers;
  if (flags.alpha) o.params.alpha = o.params.alpha_coll = *flags.alpha;
  if (flags.beta) o.params.beta = o.params.beta_coll = *flags.beta;
  if (flags.gamma) o.params.gamma = *flags.gamma;
  o.top_k = flags.model_only ? 0 : flags.top_k;
  o.budget_s = flags.budget_s;
  o.max_evaluations = flags.max_evaluations;
  o.evolution.seed = flags.seed;
  o.space.allow_replication = flags.allow_replication;
  o.space.split_distributed = flags.split_distributed;
  o.space.rotation_steps = flags.rotation_steps;
  o.space.all_to_all = flags.all_to_all;
  return o;
}

}  // namespace meshtune::engine
