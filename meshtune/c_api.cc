// The C API (meshtune/meshtune.h) over meshtune::Plan.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "meshtune/meshtune.h"
#include "meshtune/plan.h"

struct meshtune_plan {
  std::unique_ptr<meshtune::Plan> plan;
};

namespace {

thread_local std::string g_last_error;

// 0 for OK; else the status code, its message kept for meshtune_last_error().
int Report(const absl::Status& status) {
  g_last_error = std::string(status.message());
  return static_cast<int>(status.code());
}

}  // namespace

extern "C" {

int meshtune_plan_create(const char* expr, const char* extents, const char* dtype, MPI_Comm comm,
                         int mode, const char* wisdom_file, const char* mesh,
                         meshtune_plan** plan) {
  if (expr == nullptr || extents == nullptr || plan == nullptr) {
    return Report(absl::InvalidArgumentError("expr, extents and plan must not be NULL"));
  }
  if (mode != MESHTUNE_WISDOM && mode != MESHTUNE_ESTIMATE && mode != MESHTUNE_MEASURE) {
    return Report(absl::InvalidArgumentError(
        "mode must be MESHTUNE_WISDOM, MESHTUNE_ESTIMATE or MESHTUNE_MEASURE"));
  }
  meshtune::PlanOptions options;
  options.mode = mode == MESHTUNE_WISDOM     ? meshtune::PlanMode::kWisdom
                 : mode == MESHTUNE_ESTIMATE ? meshtune::PlanMode::kEstimate
                                             : meshtune::PlanMode::kMeasure;
  if (dtype != nullptr) options.dtype = dtype;
  if (wisdom_file != nullptr) options.wisdom_file = wisdom_file;
  if (mesh != nullptr) options.mesh = mesh;
  absl::StatusOr<std::unique_ptr<meshtune::Plan>> p =
      meshtune::Plan::Create(expr, extents, comm, options);
  if (!p.ok()) return Report(p.status());
  *plan = new meshtune_plan{*std::move(p)};
  return Report(absl::OkStatus());
}

int meshtune_plan_num_tensors(const meshtune_plan* plan) {
  return static_cast<int>(plan->plan->tensors().size());
}

const char* meshtune_plan_tensor(const meshtune_plan* plan, int i) {
  const std::vector<std::string>& t = plan->plan->tensors();
  return i >= 0 && i < static_cast<int>(t.size()) ? t[i].c_str() : nullptr;
}

int meshtune_plan_shard(const meshtune_plan* plan, const char* tensor, int64_t* start,
                        int64_t* extents, int64_t* strides) {
  absl::StatusOr<meshtune::ShardLayout> s = plan->plan->Shard(tensor == nullptr ? "" : tensor);
  if (!s.ok()) {
    Report(s.status());
    return -1;
  }
  for (size_t d = 0; d < s->extents.size(); ++d) {
    start[d] = s->start[d];
    extents[d] = s->extents[d];
    strides[d] = s->strides[d];
  }
  return static_cast<int>(s->extents.size());
}

int meshtune_plan_shard_storage(const meshtune_plan* plan, const char* tensor, int64_t* storage) {
  absl::StatusOr<meshtune::ShardLayout> s = plan->plan->Shard(tensor == nullptr ? "" : tensor);
  if (!s.ok()) {
    Report(s.status());
    return -1;
  }
  for (size_t d = 0; d < s->storage.size(); ++d) storage[d] = s->storage[d];
  return static_cast<int>(s->storage.size());
}

int meshtune_plan_provide_storage(meshtune_plan* plan, int provides) {
  return Report(plan->plan->ProvideStorage(provides != 0));
}

int meshtune_plan_holds(const meshtune_plan* plan, const char* tensor) {
  absl::StatusOr<meshtune::ShardLayout> s = plan->plan->Shard(tensor == nullptr ? "" : tensor);
  if (!s.ok()) {
    Report(s.status());
    return -1;
  }
  return s->holds_result ? 1 : 0;
}

const char* meshtune_plan_trace(const meshtune_plan* plan) { return plan->plan->trace().c_str(); }
const char* meshtune_plan_mesh(const meshtune_plan* plan) { return plan->plan->mesh().c_str(); }
const char* meshtune_plan_library(const meshtune_plan* plan) {
  return plan->plan->library().c_str();
}

int meshtune_plan_active(const meshtune_plan* plan) { return plan->plan->active() ? 1 : 0; }

int meshtune_plan_execute(meshtune_plan* plan, void* const* shards) {
  std::vector<void*> v(shards, shards + plan->plan->tensors().size());
  return Report(plan->plan->Execute(v));
}

void meshtune_plan_destroy(meshtune_plan* plan) { delete plan; }

const char* meshtune_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
