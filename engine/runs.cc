#include "engine/runs.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "cost/cost_model.h"
#include "cost/term_fit.h"
#include "engine/prepare.h"
#include "engine/rank_stats.h"
#include "storage/hardware_profile.h"
#include "storage/machine_fingerprint.h"

namespace meshtune::engine {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The critical rank's terms of `trace` on `mesh` under `params` with scales 1; nullopt when
// it does not lower.
std::optional<v1::RunFeatures> FeaturesOf(const v1::Problem& problem, const std::string& mesh,
                                          const std::string& trace,
                                          const cost::CostParams& params) {
  v1::Mesh m;
  m.set_axes(mesh);
  v1::Trace t;
  t.set_text(trace);
  absl::StatusOr<codegen::Program> program = LowerTrace(problem, m, t);
  if (!program.ok()) return std::nullopt;
  cost::CostParams plain = params;
  plain.scales = cost::TermScales{};
  const cost::CostReport r = cost::EstimateCost(*program, cost::ForRanks(plain, program->Ranks()));
  double messages = 0;
  for (const cost::TransferCost& x : r.transfers) messages += static_cast<double>(x.messages);
  v1::RunFeatures f;
  f.set_compute_s(r.compute_seconds);
  f.set_point_to_point_s(r.point_to_point_seconds);
  f.set_collective_s(r.collective_seconds);
  f.set_reduction_s(r.reduction_seconds);
  f.set_overlap_s(r.overlap_seconds);
  f.set_messages(messages);
  return f;
}

// The fit's sample of a run (with features): its raw median, weighted by how closely its
// sample knows it (cost::SpreadWeight).
cost::TermSample SampleOf(const v1::MeasuredRun& r) {
  const v1::RunFeatures& f = r.features();
  const double weight =
      cost::SpreadWeight(r.measured_s(), r.sample().ci_low_s(), r.sample().ci_high_s());
  return {f.compute_s(), f.point_to_point_s(), f.collective_s(), f.reduction_s(),
          f.overlap_s(), r.measured_s(),       f.messages(),     weight};
}

// The time `scales` predict for a run: FitTermScales's model.
double Predict(const v1::MeasuredRun& r, const cost::TermScales& k) {
  const v1::RunFeatures& f = r.features();
  return f.compute_s() * k.compute + f.point_to_point_s() * k.point_to_point +
         f.collective_s() * k.collective + f.reduction_s() * k.reduction +
         f.messages() * k.message - f.overlap_s();
}

struct HeldOut {
  double rho = 0, error = 0;
};

// Mean Spearman rho over the groups of 3 or more runs and median relative error of the
// predictions `predicted[g][i]` of `groups[g][i]`.
HeldOut Score(const std::vector<std::vector<const v1::MeasuredRun*>>& groups,
              const std::vector<std::vector<double>>& predicted) {
  std::vector<double> rhos, errors;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> measured;
    for (size_t i = 0; i < groups[g].size(); ++i) {
      const double m = groups[g][i]->measured_s();
      measured.push_back(m);
      errors.push_back(std::abs(predicted[g][i] - m) / m);
    }
    if (measured.size() >= 3) rhos.push_back(SpearmanRho(predicted[g], measured));
  }
  HeldOut h;
  if (!rhos.empty()) {
    double sum = 0;
    for (double r : rhos) sum += std::isfinite(r) ? r : 0;
    h.rho = sum / static_cast<double>(rhos.size());
  }
  h.error = errors.empty() ? 0 : Median(errors);
  return h;
}

cost::TermScales ScalesOf(const v1::HardwareProfile& p) {
  if (!p.has_term_scales()) return {};
  const v1::TermScales& k = p.term_scales();
  return {k.compute(), k.point_to_point(), k.collective(), k.reduction(), k.message_s()};
}

}  // namespace

std::vector<v1::MeasuredRun> RunsOf(
    const std::string& source, const v1::Problem& problem, bool in_place,
    const google::protobuf::RepeatedPtrField<v1::MeasuredCandidate>& candidates,
    const RunNumbers& numbers) {
  const int64_t now = NowMs();
  const std::string group = absl::StrCat(source, "-", now, "-", getpid());
  std::vector<v1::MeasuredRun> runs;
  for (const v1::MeasuredCandidate& c : candidates) {
    v1::MeasuredRun r;
    r.set_created_unix_ms(now);
    r.set_source(source);
    r.set_group(group);
    r.set_problem(absl::StrCat(problem.expr(), " with ", problem.extents()));
    r.set_dtype(problem.dtype().empty() ? "f32" : problem.dtype());
    r.set_mesh(c.mesh());
    r.set_trace(c.trace().text());
    r.set_profile(numbers.profile);
    r.set_machine(numbers.machine);
    r.set_predicted_s(c.predicted_s());
    if (c.has_measured_s()) {
      r.set_measured_s(c.measured_s());
      r.set_timing("measured");
    }
    if (c.has_sample()) *r.mutable_sample() = c.sample();
    r.set_verified(c.verified());
    if (!in_place) {
      if (std::optional<v1::RunFeatures> f =
              FeaturesOf(problem, c.mesh(), c.trace().text(), numbers.params)) {
        *r.mutable_features() = *f;
      }
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

void MarkPacedRun(v1::MeasuredRun* run) {
  if (run->has_measured_s() && run->timing().empty()) run->set_timing("paced");
}

absl::Status KeepRuns(storage::TuningDb& db, const std::vector<v1::MeasuredRun>& runs) {
  for (const v1::MeasuredRun& r : runs) {
    storage::StoredRun stored;
    stored.created_unix_ms = r.created_unix_ms();
    stored.profile = r.profile();
    stored.machine = r.machine();
    v1::MeasuredRun without_id = r;
    without_id.clear_id();
    stored.run = without_id.SerializeAsString();
    MT_RETURN_IF_ERROR(db.AddRun(std::move(stored)).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::MeasuredRun>> ListMeasuredRuns(
    storage::TuningDb& db, const std::optional<std::string>& profile) {
  std::vector<v1::MeasuredRun> out;
  int64_t after = 0;
  while (true) {
    MT_ASSIGN_OR_RETURN(std::vector<storage::StoredRun> page,
                        db.ListRuns(profile, storage::kMaxListLimit, after));
    if (page.empty()) return out;
    for (const storage::StoredRun& s : page) {
      v1::MeasuredRun r;
      if (!r.ParseFromString(s.run)) {
        return absl::DataLossError(
            absl::StrCat("measured run ", s.id, " in the tuning database does not parse"));
      }
      r.set_id(s.id);
      r.set_created_unix_ms(s.created_unix_ms);
      MarkPacedRun(&r);
      out.push_back(std::move(r));
      after = s.id;
    }
  }
}

absl::StatusOr<std::optional<Refit>> RefitFromRuns(storage::TuningDb& db,
                                                   const std::string& profile, int min_new_runs) {
  MT_ASSIGN_OR_RETURN(v1::HardwareProfile p, storage::LoadProfile(profile));
  const std::string machine = storage::MachineFingerprint(&p);
  MT_ASSIGN_OR_RETURN(const std::vector<v1::MeasuredRun> all, ListMeasuredRuns(db, profile));
  std::map<std::string, std::vector<const v1::MeasuredRun*>> by_group;
  int fresh = 0;
  int64_t newest = p.term_scales().last_run_id();
  for (const v1::MeasuredRun& r : all) {
    // A paced run's time is not a measurement: it is never fitted beside measured ones.
    if (r.machine() != machine || !r.verified() || !r.has_measured_s() || !(r.measured_s() > 0) ||
        !r.has_features() || r.timing() != "measured") {
      continue;
    }
    by_group[r.group()].push_back(&r);
    if (r.id() > p.term_scales().last_run_id()) ++fresh;
    newest = std::max(newest, r.id());
  }
  if (fresh < min_new_runs || static_cast<int>(by_group.size()) < kRefitMinGroups) {
    return std::nullopt;
  }
  std::vector<std::vector<const v1::MeasuredRun*>> groups;
  for (auto& [name, runs] : by_group) groups.push_back(std::move(runs));
  Refit refit;
  refit.profile = profile;
  refit.groups = static_cast<int>(groups.size());
  const cost::TermScales current = ScalesOf(p);
  std::vector<std::vector<double>> before(groups.size()), after(groups.size());
  std::vector<cost::TermSample> everything;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<cost::TermSample> others;
    for (size_t h = 0; h < groups.size(); ++h) {
      if (h == g) continue;
      for (const v1::MeasuredRun* r : groups[h]) others.push_back(SampleOf(*r));
    }
    const absl::StatusOr<cost::TermScales> fold = cost::FitTermScales(others);
    for (const v1::MeasuredRun* r : groups[g]) {
      before[g].push_back(Predict(*r, current));
      after[g].push_back(Predict(*r, fold.ok() ? *fold : current));
      everything.push_back(SampleOf(*r));
    }
  }
  refit.runs = static_cast<int>(everything.size());
  const HeldOut was = Score(groups, before), now = Score(groups, after);
  refit.rho_before = was.rho;
  refit.rho_after = now.rho;
  refit.error_before = was.error;
  refit.error_after = now.error;
  const absl::StatusOr<cost::TermScales> fit = cost::FitTermScales(everything);
  refit.accepted = fit.ok() && now.rho >= was.rho && now.error <= was.error;
  if (fit.ok()) refit.scales = *fit;
  // Writing last_run_id makes term_scales present: scales absent meant 1 each, and stay so.
  const bool had_scales = p.has_term_scales();
  v1::TermScales* k = p.mutable_term_scales();
  if (refit.accepted || !had_scales) {
    const cost::TermScales& s = refit.accepted ? *fit : current;
    k->set_compute(s.compute);
    k->set_point_to_point(s.point_to_point);
    k->set_collective(s.collective);
    k->set_reduction(s.reduction);
    k->set_message_s(s.message);
  }
  if (refit.accepted) {
    k->set_schedules(refit.runs);
    k->set_runs(absl::StrCat(refit.runs, " measured runs of ", refit.groups,
                             " tunes and fidelity runs (automatic refit)"));
    k->set_automatic(true);
  }
  k->set_last_run_id(newest);
  MT_RETURN_IF_ERROR(storage::SaveProfile(p));
  return refit;
}

std::string RefitNote(const Refit& r) {
  const std::string held_out =
      absl::StrFormat("held-out rho %.2f -> %.2f, median error %.1f%% -> %.1f%%", r.rho_before,
                      r.rho_after, 100 * r.error_before, 100 * r.error_after);
  if (r.accepted) {
    return absl::StrFormat(
        "refitted the cost model of profile \"%s\" to %d measured runs of %d tunes: %s; term "
        "scales compute x%.3g, point-to-point x%.3g, collectives x%.3g, reductions x%.3g",
        r.profile, r.runs, r.groups, held_out, r.scales.compute, r.scales.point_to_point,
        r.scales.collective, r.scales.reduction);
  }
  return absl::StrFormat(
      "kept the cost model of profile \"%s\": a refit to %d measured runs of %d tunes would not "
      "improve held-out runs (%s)",
      r.profile, r.runs, r.groups, held_out);
}

}  // namespace meshtune::engine
