// The MPI runner: one runtime::Launch per candidate that fits in memory.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/problem.h"
#include "runtime/executor.h"
#include "runtime/launch/memory_fit.h"
#include "search/runner.h"

namespace meshtune::search {

namespace {

// A launch's result as the tuner reads it.
CandidateRun RunOf(const runtime::LaunchResult& r) {
  CandidateRun out;
  out.verified = r.verified && !r.error.has_value();
  out.error = r.error;
  out.repetitions = r.seconds;
  out.bytes_sent_max = r.bytes_sent_max;
  SetSamples(r.samples, r.batch, &out);
  return out;
}

// `error` as a run that did not run.
CandidateRun NotRun(const std::string& error) {
  CandidateRun out;
  out.error = error;
  return out;
}

class MpiRunner : public Runner {
 public:
  explicit MpiRunner(const MpiRunnerOptions& options) : options_(options) {}
  bool measures() const override { return true; }

  CandidateRun Run(const MeasureInput& input) override {
    return RunPrepared(Prepare({&input, nullptr, nullptr}));
  }
  CandidateRun RunProgram(const ProgramMeasureInput& input) override {
    return RunPrepared(Prepare({nullptr, nullptr, &input}));
  }
  bool measures_library() const override { return true; }
  CandidateRun RunLibrary(const LibraryInput& input) override {
    return RunPrepared(Prepare({nullptr, &input, nullptr}));
  }

  // The items that fit in memory, by rank count, each group one job in rounds; a group's
  // job that fails as a whole (a crash, a timeout) is measured again one item at a time,
  // so that one candidate's crash costs the others nothing but time. Every job after the
  // first gets at most what is left of `budget_s` (a link down that hangs each job until
  // its timeout then costs the budget once, not once a job); an item with nothing left
  // keeps the failure of the job it was in.
  std::vector<CandidateRun> RunSideBySide(const std::vector<MeasureItem>& items,
                                          double budget_s) override {
    const auto start = std::chrono::steady_clock::now();
    const auto left_s = [&] {
      return budget_s -
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    // `p` with its timeout cut to what is left, or nullopt when less than a second is.
    const auto within_budget = [&](const Prepared& p) -> std::optional<Prepared> {
      const double left = left_s();
      if (left < 1) return std::nullopt;
      Prepared cut = p;
      cut.timeout_s = std::min(p.timeout_s, left);
      return cut;
    };
    std::vector<CandidateRun> out(items.size());
    std::vector<Prepared> prepared;
    for (const MeasureItem& item : items) prepared.push_back(Prepare(item));
    std::map<int64_t, std::vector<size_t>> groups;  // by ranks: the items that can run
    for (size_t i = 0; i < items.size(); ++i) {
      if (prepared[i].error) {
        out[i] = NotRun(*prepared[i].error);
      } else {
        groups[prepared[i].spec.ranks].push_back(i);
      }
    }
    for (const auto& [ranks, group] : groups) {
      std::vector<runtime::RunSpec> specs;
      double timeout_s = 0;
      ir::Footprint together;  // every item of the group held at once
      for (size_t i : group) {
        specs.push_back(prepared[i].spec);
        timeout_s = std::max(timeout_s, prepared[i].timeout_s);
        together.shard_bytes += prepared[i].footprint.shard_bytes;
        together.buffer_bytes += prepared[i].footprint.buffer_bytes;
      }
      const std::function<bool()>& cancelled = prepared[group[0]].cancelled;
      if (group.size() == 1 || (cancelled && cancelled()) ||
          !runtime::CheckRunFitsMemory(together, ranks, options_.launch).ok()) {
        for (size_t i : group) {
          const std::optional<Prepared> cut = within_budget(prepared[i]);
          out[i] = cut ? RunPrepared(*cut) : NotRun("not measured: the time budget was spent");
        }
        continue;
      }
      runtime::LaunchOptions launch = options_.launch;
      launch.timeout_s = std::max(1.0, std::min(timeout_s, left_s()));
      launch.cancelled = cancelled;
      runtime::RoundsOptions rounds;
      rounds.min_rounds = std::max(1, options_.reps);
      rounds.max_rounds = std::max(rounds.min_rounds, options_.max_rounds);
      rounds.budget_s = std::max(1.0, left_s());
      rounds.seed = options_.seed;
      const std::vector<runtime::LaunchResult> results =
          runtime::LaunchRounds(specs, rounds, launch);
      const bool whole_job_failed =
          group.size() > 1 && std::all_of(results.begin(), results.end(), [&](const auto& r) {
            return r.error.has_value() && r.error == results[0].error && r.seconds.empty();
          });
      for (size_t g = 0; g < group.size(); ++g) {
        const std::optional<Prepared> cut =
            whole_job_failed ? within_budget(prepared[group[g]]) : std::nullopt;
        out[group[g]] = cut ? RunPrepared(*cut) : RunOf(results[g]);
      }
    }
    return out;
  }

 private:
  // A run ready to launch, or why it cannot run.
  struct Prepared {
    runtime::RunSpec spec;
    double timeout_s = 300;
    std::function<bool()> cancelled;
    ir::Footprint footprint;  // each rank's (none counted for the library)
    std::optional<std::string> error;
  };

  // `item` as a RunSpec with this runner's repetitions — unless its ranks cannot hold its
  // footprint each (every worker would abort on std::bad_alloc): then an error.
  Prepared Prepare(const MeasureItem& item) const {
    Prepared p;
    ir::Footprint
        footprint;  // the library's is its own (runtime/library/library_gemm.h): unchecked
    if (item.schedule != nullptr) {
      const MeasureInput& in = *item.schedule;
      if (in.program == nullptr) {
        p.error = "not run: the candidate has no validated Program";
        return p;
      }
      p.spec.problem = runtime::ProblemSpecOf(*in.problem);
      p.spec.program = *in.program;
      p.spec.ranks = in.mesh->Ranks();
      footprint = in.footprint;
      p.timeout_s = in.timeout_s;
      p.cancelled = in.cancelled;
    } else if (item.program != nullptr) {
      const ProgramMeasureInput& in = *item.program;
      const ir::StatementProgram& program = *in.program;
      if (in.programs.size() != program.statements.size() || in.programs.empty()) {
        p.error = "not run: the program needs a validated Program per statement";
        return p;
      }
      p.spec.problem = runtime::ProblemSpecOf(program.statements[0]);
      p.spec.program = in.programs[0];
      for (size_t s = 1; s < in.programs.size(); ++s) {
        p.spec.later.push_back({runtime::ProblemSpecOf(program.statements[s]), in.programs[s]});
      }
      p.spec.ranks = in.mesh->Ranks();
      footprint = in.footprint;
      p.timeout_s = in.timeout_s;
      p.cancelled = in.cancelled;
    } else if (item.library != nullptr) {
      const LibraryInput& in = *item.library;
      std::vector<runtime::ProblemSpec> statements = LibraryStatements(in);
      p.spec.problem = statements[0];
      for (size_t s = 1; s < statements.size(); ++s) p.spec.later.push_back({statements[s], {}});
      p.spec.library = in.config;
      p.spec.library_dtype_bytes = LibraryDtypeBytes(in);
      p.spec.ranks = int64_t{in.config.prow} * in.config.pcol;
      p.timeout_s = in.timeout_s;
      p.cancelled = in.cancelled;
    } else {
      p.error = "not run: nothing to measure";
      return p;
    }
    p.spec.reps = options_.reps;
    p.spec.warmup = options_.warmup;
    p.spec.seed = options_.seed;
    p.footprint = footprint;
    if (absl::Status fits = runtime::CheckRunFitsMemory(footprint, p.spec.ranks, options_.launch);
        !fits.ok()) {
      p.error = absl::StrCat("not run: ", fits.message());
    }
    return p;
  }

  // `p` alone, with its own timeout; not started once its tune is cancelled (a group's job
  // the cancellation killed is not measured again one item at a time).
  CandidateRun RunPrepared(const Prepared& p) const {
    if (p.error) return NotRun(*p.error);
    if (p.cancelled && p.cancelled()) return NotRun("cancelled; the job was not started");
    runtime::LaunchOptions launch = options_.launch;
    launch.timeout_s = p.timeout_s;
    launch.cancelled = p.cancelled;
    return RunOf(runtime::Launch(p.spec, launch));
  }

  MpiRunnerOptions options_;
};

}  // namespace

std::unique_ptr<Runner> NewMpiRunner(const MpiRunnerOptions& options) {
  return std::make_unique<MpiRunner>(options);
}

}  // namespace meshtune::search
