#include "cost/given_loads.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "runtime/box.h"

namespace meshtune::cost {

namespace {

constexpr size_t kMaxCached = 512;

// What the plans of `t` depend on: the layout, the shape, whether it goes in and out, and
// every rank's box.
std::string KeyOf(const codegen::Program& p, const codegen::TensorInfo& t) {
  std::string key = absl::StrCat(t.given.ToString(), " ", absl::StrJoin(t.shape, ","), " ",
                                 t.is_output, p.accumulate, " ", absl::StrJoin(p.axis_sizes, ","));
  runtime::ForEachPoint(p.axis_sizes, [&](const std::vector<int64_t>& c) {
    const runtime::Box b = runtime::ShardBox(p, t, c);
    absl::StrAppend(&key, "|", absl::StrJoin(b.start, ","), "+", absl::StrJoin(b.extent, ","));
  });
  return key;
}

}  // namespace

std::shared_ptr<const GivenLoads> LoadsOf(const codegen::Program& p, const codegen::TensorInfo& t) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<const GivenLoads>>();
  const std::string key = KeyOf(p, t);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  absl::StatusOr<runtime::GivenPlans> plans = runtime::PlanGiven(p, t);
  MT_CHECK(plans.ok());  // lowering only gives layouts ParseLayoutFlags took
  auto loads = std::make_shared<GivenLoads>();
  const int64_t ranks = runtime::Elements(p.axis_sizes);
  if (!plans->in.empty()) loads->in = runtime::LoadOf(plans->in, ranks);
  if (!plans->out.empty()) loads->out = runtime::LoadOf(plans->out, ranks);
  std::lock_guard<std::mutex> lock(mu);
  if (cache->size() >= kMaxCached) cache->clear();
  cache->emplace(key, loads);
  return loads;
}

}  // namespace meshtune::cost
