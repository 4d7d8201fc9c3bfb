// How a tune went, kept with its record for the tuning report: the tuning curve (the
// tuner's progress reports as points) and the result's counts and measurements, as a
// meshtune.v1.TuneSummary message.
#ifndef MESHTUNE_ENGINE_TUNE_TUNE_SUMMARY_H_
#define MESHTUNE_ENGINE_TUNE_TUNE_SUMMARY_H_

#include <vector>

#include "proto/meshtune.pb.h"

namespace meshtune::engine {

// The most points a curve keeps: beyond, it drops every other point (keeping the last).
inline constexpr int kMaxCurvePoints = 512;

// The tuning curve, built from a tune's progress reports in order. Not thread-safe.
class TuneCurve {
 public:
  // Adds the point of `progress`, unless it equals the last point in everything but time
  // and stage; when the curve is full, thins it to half first.
  void Add(const v1::TuneProgress& progress);
  const std::vector<v1::CurvePoint>& points() const { return points_; }

 private:
  std::vector<v1::CurvePoint> points_;
};

// The summary of the finished tune `result` of `request`, with `curve`.
v1::TuneSummary TuneSummaryOf(const v1::TuneResult& result, const v1::TuneRequest& request,
                              const std::vector<v1::CurvePoint>& curve);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_TUNE_TUNE_SUMMARY_H_
