#include "engine/tune/machine_profile.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "engine/tune/calibration.h"
#include "storage/calibration_fit.h"
#include "storage/hardware_profile.h"
#include "storage/machine_fingerprint.h"

namespace meshtune::engine {

namespace {

// Serializes calibrations on first use within the process (the daemon's concurrent tunes).
std::mutex& FirstUseMutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// `loaded` as the chosen profile named `name`.
ChosenProfile Chosen(const std::string& name, const v1::HardwareProfile& loaded) {
  ChosenProfile c;
  c.params = storage::ToCostParams(loaded);
  c.name = name;
  c.profile = loaded;
  return c;
}

ChosenProfile Builtin(const std::string& note) {
  ChosenProfile c;
  c.params = BuiltinCostParams();
  c.note = note;
  return c;
}

std::string OtherRanksNote(const std::string& name, int64_t calibrated, int64_t ranks) {
  return absl::StrCat("hardware profile \"", name, "\" was calibrated on ", calibrated,
                      " ranks, this tune runs on ", ranks,
                      ": for this rank count run `meshtune calibrate --ranks ", ranks,
                      " --name NAME` and tune with --profile NAME");
}

// The note of a profile made on first use.
std::string FirstUseNote(const v1::HardwareProfile& made, double seconds) {
  return absl::StrFormat(
      "no hardware profile for %d ranks on %s: calibrated one in %.1f s (quick form) and saved it "
      "as \"%s\"; `meshtune calibrate --ranks %d` measures it fully, --no-calibrate keeps "
      "built-in numbers",
      made.ranks(), made.host(), seconds, made.name(), made.ranks());
}

// Calibrates the automatic profile of `ranks` ranks (the quick form) and stores it.
absl::StatusOr<ChosenProfile> CalibrateOnFirstUse(int64_t ranks) {
  CalibrationJob job;
  job.ranks = ranks;
  job.name = AutomaticProfileName(ranks);
  job.quick = true;
  job.timeout_s = 120;
  job.automatic = true;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::HardwareProfile> made = Calibrate(job);
  if (!made.ok()) return made.status();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ChosenProfile c = Chosen(job.name, *made);
  c.calibrated_now = true;
  c.note = FirstUseNote(*made, seconds);
  return c;
}

}  // namespace

FirstUse FirstUseFromEnvironment(FirstUse wanted) {
  const char* env = std::getenv("MESHTUNE_CALIBRATE");
  if (env != nullptr && std::string(env) == "0") return FirstUse::kBuiltin;
  return wanted;
}

int64_t MaxFirstUseRanks() {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return 2 * std::max<int64_t>(1, cores);
}

absl::StatusOr<ChosenProfile> ChooseProfile(const std::string& requested, int64_t ranks,
                                            FirstUse first_use) {
  if (!requested.empty()) {
    absl::StatusOr<v1::HardwareProfile> loaded = storage::LoadProfile(requested);
    if (!loaded.ok()) return loaded.status();
    ChosenProfile c = Chosen(requested, *loaded);
    if (loaded->ranks() > 0 && ranks > 0 && loaded->ranks() != ranks) {
      c.note = OtherRanksNote(requested, loaded->ranks(), ranks);
    }
    return c;
  }
  absl::StatusOr<v1::HardwareProfile> fallback = storage::LoadProfile("default");
  if (!fallback.ok() && !absl::IsNotFound(fallback.status())) return fallback.status();
  if (fallback.ok() && (ranks <= 0 || fallback->ranks() <= 0 || fallback->ranks() == ranks)) {
    return Chosen("default", *fallback);
  }
  std::string failure;
  if (ranks > 0) {
    const std::string automatic = AutomaticProfileName(ranks);
    std::lock_guard<std::mutex> lock(FirstUseMutex());
    absl::StatusOr<v1::HardwareProfile> loaded = storage::LoadProfile(automatic);
    if (loaded.ok() && loaded->host() == HostName()) return Chosen(automatic, *loaded);
    if (!loaded.ok() && !absl::IsNotFound(loaded.status())) return loaded.status();
    if (FirstUseFromEnvironment(first_use) == FirstUse::kCalibrate && ranks >= 2) {
      if (ranks > MaxFirstUseRanks()) {
        failure = absl::StrCat("no hardware profile for ", ranks, " ranks, more than this node (",
                               MaxFirstUseRanks() / 2, " cores) calibrates on first use");
      } else {
        absl::StatusOr<ChosenProfile> made = CalibrateOnFirstUse(ranks);
        if (made.ok()) return made;
        failure = absl::StrCat("could not calibrate on first use (", made.status().message(), ")");
      }
    }
  }
  if (fallback.ok()) {
    ChosenProfile c = Chosen("default", *fallback);
    c.note = OtherRanksNote("default", fallback->ranks(), ranks);
    if (!failure.empty()) c.note = absl::StrCat(failure, "; ", c.note);
    return c;
  }
  return Builtin(failure.empty() ? BuiltinNumbersNote("default")
                                 : absl::StrCat(failure, ": using built-in machine numbers"));
}

bool HasProfileFor(int64_t ranks) {
  absl::StatusOr<v1::HardwareProfile> p = storage::LoadProfile("default");
  if (p.ok() && (p->ranks() <= 0 || p->ranks() == ranks)) return true;
  p = storage::LoadProfile(AutomaticProfileName(ranks));
  return p.ok() && p->host() == HostName();
}

absl::StatusOr<ChosenProfile> StoreFirstUseProfile(const v1::HardwareProfile& measured,
                                                   double seconds) {
  MT_ASSIGN_OR_RETURN(v1::HardwareProfile profile, storage::FitProfile(measured));
  profile.set_name(AutomaticProfileName(measured.ranks()));
  profile.set_automatic(true);
  MT_RETURN_IF_ERROR(storage::SaveProfile(profile));
  ChosenProfile c = Chosen(profile.name(), profile);
  c.calibrated_now = true;
  c.note = FirstUseNote(profile, seconds);
  return c;
}

std::string BuiltinNumbersNote(const std::string& profile) {
  return absl::StrCat("no hardware profile \"", profile,
                      "\": using built-in machine numbers; run `meshtune calibrate --ranks P` for "
                      "this machine's own numbers");
}

cost::CostParams BuiltinCostParams() {
  cost::CostParams p;
  p.alpha = 1e-6;
  p.beta = 2.5e-10;
  p.alpha_coll = 1e-6;
  p.beta_coll = 5e-10;
  p.gamma = 1.0 / 30e9;
  return p;
}

std::string ProfileMachine(const std::string& name, int64_t ranks) {
  const absl::StatusOr<ChosenProfile> chosen =
      ChooseProfile(name == "default" ? "" : name, ranks, FirstUse::kBuiltin);
  if (!chosen.ok()) {
    return absl::IsNotFound(chosen.status()) ? storage::MachineFingerprint(nullptr) : "";
  }
  return storage::MachineFingerprint(chosen->profile ? &*chosen->profile : nullptr);
}

absl::StatusOr<cost::CostParams> ProfileCostParams(const std::string& profile, int64_t ranks) {
  MT_ASSIGN_OR_RETURN(const ChosenProfile chosen, ChooseProfile(profile == "default" ? "" : profile,
                                                                ranks, FirstUse::kBuiltin));
  return chosen.params;
}

}  // namespace meshtune::engine
