// The tuning database in memory: the SQLite one's behaviour over maps, one mutex around
// everything.
#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "storage/tuning_db.h"

namespace meshtune::storage {
namespace {

class MemoryTuningDb : public TuningDb {
 public:
  absl::StatusOr<int64_t> Add(const Workload& w, TuningRecord r) override {
    if (absl::Status s = CheckRecord(w, &r); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = workloads_.try_emplace(
        w.fingerprint, StoredWorkload{w.canonical, 0, w.expr, w.dtype, w.MeshText(), w.profile});
    if (!inserted && it->second.canonical != w.canonical) {
      return absl::DataLossError(absl::StrCat("tuning database (memory): workload ", w.fingerprint,
                                              " is stored with another canonical text"));
    }
    r.id = ++last_id_;
    const int64_t id = r.id;
    const TuningRecord& stored = records_.emplace(id, std::move(r)).first->second;
    int64_t& best = it->second.best_record_id;
    if (best == 0 || BetterRecord(stored, records_.at(best))) best = id;
    return id;
  }

  absl::StatusOr<int64_t> Generation() override {
    absl::MutexLock lock(&mu_);
    return last_id_;
  }

  absl::StatusOr<std::optional<TuningRecord>> Best(const std::string& fingerprint) override {
    absl::MutexLock lock(&mu_);
    auto it = workloads_.find(fingerprint);
    if (it == workloads_.end() || it->second.best_record_id == 0) return std::nullopt;
    return records_.at(it->second.best_record_id);
  }

  absl::StatusOr<std::optional<TuningRecord>> Get(int64_t id) override {
    absl::MutexLock lock(&mu_);
    auto it = records_.find(id);
    if (it == records_.end()) return std::nullopt;
    return it->second;
  }

  absl::StatusOr<std::vector<TuningRecord>> List(const std::string& fingerprint, int limit,
                                                 int64_t after_id) override {
    if (absl::Status s = CheckListArguments(limit, after_id); !s.ok()) return s;
    limit = std::min(limit, kMaxListLimit);
    absl::MutexLock lock(&mu_);
    std::vector<TuningRecord> out;
    for (auto it = records_.upper_bound(after_id);
         it != records_.end() && static_cast<int>(out.size()) < limit; ++it) {
      if (fingerprint.empty() || it->second.fingerprint == fingerprint) out.push_back(it->second);
    }
    return out;
  }

  absl::StatusOr<std::vector<TuningRecord>> BestOfSameStructure(const Workload& w) override {
    absl::MutexLock lock(&mu_);
    std::vector<TuningRecord> out;
    for (const auto& [fingerprint, stored] : workloads_) {
      if (fingerprint == w.fingerprint || stored.best_record_id == 0 || stored.expr != w.expr ||
          stored.dtype != w.dtype || stored.mesh != w.MeshText() || stored.profile != w.profile) {
        continue;
      }
      out.push_back(records_.at(stored.best_record_id));
    }
    std::sort(out.begin(), out.end(),
              [](const TuningRecord& a, const TuningRecord& b) { return a.id < b.id; });
    return out;
  }

  absl::StatusOr<int64_t> AddRun(StoredRun r) override {
    MT_RETURN_IF_ERROR(CheckRun(&r));
    absl::MutexLock lock(&mu_);
    r.id = ++last_run_id_;
    const int64_t id = r.id;
    runs_.emplace(id, std::move(r));
    return id;
  }

  absl::StatusOr<std::vector<StoredRun>> ListRuns(const std::optional<std::string>& profile,
                                                  int limit, int64_t after_id) override {
    MT_RETURN_IF_ERROR(CheckListArguments(limit, after_id));
    limit = std::min(limit, kMaxListLimit);
    absl::MutexLock lock(&mu_);
    std::vector<StoredRun> out;
    for (auto it = runs_.upper_bound(after_id);
         it != runs_.end() && static_cast<int>(out.size()) < limit; ++it) {
      if (!profile.has_value() || it->second.profile == *profile) out.push_back(it->second);
    }
    return out;
  }

 private:
  struct StoredWorkload {
    std::string canonical;
    int64_t best_record_id = 0;              // 0: none
    std::string expr, dtype, mesh, profile;  // the structure (BestOfSameStructure)
  };
  absl::Mutex mu_;
  int64_t last_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, StoredWorkload> workloads_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, TuningRecord> records_ ABSL_GUARDED_BY(mu_);
  int64_t last_run_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, StoredRun> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<TuningDb> NewInMemoryTuningDb() { return std::make_unique<MemoryTuningDb>(); }

}  // namespace meshtune::storage
