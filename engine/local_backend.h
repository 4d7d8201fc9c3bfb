// The in-process Backend: the engine of this process (explain.h, records.h, tune_run.h)
// over a SQLite tuning database file — the same code the daemon runs.
#ifndef MESHTUNE_ENGINE_LOCAL_BACKEND_H_
#define MESHTUNE_ENGINE_LOCAL_BACKEND_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "proto/meshtune.pb.h"
#include "search/runner.h"

namespace meshtune::engine {

// What a tune in this process may set beyond a TuneRequest (the CLI's flags).
struct LocalTuneSettings {
  std::optional<double> alpha, beta, gamma;  // override the profile's machine numbers
  // Samples of a run alone; rounds at least (and at most max_rounds) of the candidates a
  // tune measures side by side (search::MpiRunnerOptions).
  int reps = 6, warmup = 1, max_rounds = 30;
  std::string worker;  // see runtime/launch/launcher.h
  // Where runs launch (engine/cluster.h): empty, the cluster of the tune's profile, if any.
  v1::Cluster cluster;
};

// The MPI runner of measurements made with `s` (repetitions, worker) on
// LaunchCluster(s.cluster, profile): the cluster `profile` (the tune's, nullptr for none)
// was calibrated on when `s` names none.
search::MpiRunnerOptions MpiRunnerOptionsOf(const LocalTuneSettings& s,
                                            const v1::HardwareProfile* profile = nullptr);

struct LocalBackendOptions {
  // The SQLite tuning database, opened at its first use: created when missing by a tune;
  // read-only for lookups, records and codegen of a record, which fail with NotFound "no
  // tuning database at PATH" when it does not exist (and create nothing). "" for none:
  // tunes are then not stored and the record calls fail with FailedPrecondition.
  std::string db_path;
  LocalTuneSettings tune;
  // Receives notes for the user (e.g. that built-in machine numbers stand in for a missing
  // default profile, or that a result could not be stored), each once; may be empty.
  std::function<void(const std::string&)> warn;
};

// A Backend in this process. Not thread-safe (the CLI calls it from one thread).
std::unique_ptr<Backend> NewLocalBackend(LocalBackendOptions options);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_LOCAL_BACKEND_H_
