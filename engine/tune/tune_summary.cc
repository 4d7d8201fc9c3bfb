#include "engine/tune/tune_summary.h"

#include "absl/strings/str_cat.h"

namespace meshtune::engine {

namespace {

bool SameProgress(const v1::CurvePoint& a, const v1::CurvePoint& b) {
  return a.costed() == b.costed() && a.measured() == b.measured() &&
         a.has_best_predicted_s() == b.has_best_predicted_s() &&
         a.best_predicted_s() == b.best_predicted_s() &&
         a.has_best_measured_s() == b.has_best_measured_s() &&
         a.best_measured_s() == b.best_measured_s();
}

}  // namespace

void TuneCurve::Add(const v1::TuneProgress& progress) {
  v1::CurvePoint p;
  p.set_stage(progress.stage());
  p.set_elapsed_s(progress.elapsed_s());
  p.set_costed(progress.costed());
  if (progress.has_best_predicted_s()) p.set_best_predicted_s(progress.best_predicted_s());
  p.set_measured(progress.measured());
  if (progress.has_best_measured_s()) p.set_best_measured_s(progress.best_measured_s());
  if (!points_.empty() && SameProgress(points_.back(), p)) return;
  if (static_cast<int>(points_.size()) >= kMaxCurvePoints) {
    std::vector<v1::CurvePoint> half;
    for (size_t i = 0; i < points_.size(); i += 2) half.push_back(points_[i]);
    if (points_.size() % 2 == 0) half.push_back(points_.back());
    points_ = std::move(half);
  }
  points_.push_back(std::move(p));
}

v1::TuneSummary TuneSummaryOf(const v1::TuneResult& result, const v1::TuneRequest& request,
                              const std::vector<v1::CurvePoint>& curve) {
  v1::TuneSummary s;
  *s.mutable_problem() = request.problem();
  s.set_mesh(result.record().workload_mesh());
  s.set_strategy(result.strategy());
  s.set_seconds(result.seconds());
  s.set_enumerated(result.enumerated());
  s.set_legal(result.legal());
  *s.mutable_pruned() = result.pruned();
  s.set_legal_estimated(result.legal_estimated());
  s.set_costed(result.costed());
  s.set_duplicates(result.duplicates());
  s.set_bounded(result.bounded());
  for (const v1::CurvePoint& p : curve) *s.add_curve() = p;
  *s.mutable_measurements() = result.measurements();
  if (result.has_lower_bound_ratio()) s.set_lower_bound_ratio(result.lower_bound_ratio());
  s.set_comm_words_per_rank(result.comm_words_per_rank());
  *s.mutable_library() = result.library();
  if (result.has_vs_library()) s.set_vs_library(result.vs_library());
  if (result.has_comparison()) *s.mutable_comparison() = result.comparison();
  s.set_decision(result.decision());
  if (result.has_vs_library_ci_low()) s.set_vs_library_ci_low(result.vs_library_ci_low());
  if (result.has_vs_library_ci_high()) s.set_vs_library_ci_high(result.vs_library_ci_high());
  if (result.has_vs_library_ci_level()) s.set_vs_library_ci_level(result.vs_library_ci_level());
  return s;
}

}  // namespace meshtune::engine
