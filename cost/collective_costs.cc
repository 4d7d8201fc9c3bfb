#include "cost/collective_costs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace meshtune::cost {

namespace {
constexpr const char* kNames[kCollectives] = {"bcast",          "reduce",    "allgather",
                                              "reduce_scatter", "allreduce", "alltoall"};
}  // namespace

const char* CollectiveName(Collective c) { return kNames[static_cast<int>(c)]; }

std::optional<CollectiveForm> ParseCollective(absl::string_view name) {
  for (int i = 0; i < kCollectives; ++i) {
    if (name == kNames[i]) return CollectiveForm{static_cast<Collective>(i), false};
    if (name.size() > 1 && name[0] == 'i' && name.substr(1) == kNames[i])
      return CollectiveForm{static_cast<Collective>(i), true};
  }
  return std::nullopt;
}

std::string CollectiveFormName(const CollectiveForm& form) {
  return absl::StrCat(form.nonblocking ? "i" : "", CollectiveName(form.collective));
}

double LatencyTerm(Collective c, int64_t g) {
  const double n = static_cast<double>(g);
  switch (c) {
    case Collective::kBroadcast:
    case Collective::kReduce:
      return std::log2(n);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return n - 1;
    case Collective::kAllReduce:
      return 2 * std::log2(n);
  }
  return 0;
}

double VolumeTerm(Collective c, int64_t g) {
  const double n = static_cast<double>(g);
  switch (c) {
    case Collective::kBroadcast:
    case Collective::kReduce:
      return 1;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1) / n;
    case Collective::kAllReduce:
      return 2 * (n - 1) / n;
  }
  return 0;
}

absl::StatusOr<CollectiveCosts> CollectiveCosts::Create(
    const std::vector<std::pair<CollectiveForm, CollectiveLine>>& lines) {
  CollectiveCosts out;
  for (const auto& [form, line] : lines) {
    const std::string what = absl::StrCat(CollectiveFormName(form), " over ", line.group, " ranks");
    if (line.group < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("collective fit ", what, ": a group has at least 2 ranks"));
    }
    if (!(line.alpha >= 0) || !(line.beta >= 0) || !std::isfinite(line.alpha) ||
        !std::isfinite(line.beta)) {
      return absl::InvalidArgumentError(absl::StrCat("collective fit ", what, ": alpha ",
                                                     line.alpha, " and beta ", line.beta,
                                                     " must be non-negative and finite"));
    }
    std::vector<CollectiveLine>& v =
        out.lines_[form.nonblocking ? 1 : 0][static_cast<int>(form.collective)];
    if (std::any_of(v.begin(), v.end(),
                    [&](const CollectiveLine& l) { return l.group == line.group; })) {
      return absl::InvalidArgumentError(absl::StrCat("collective fit ", what, " is given twice"));
    }
    v.push_back(line);
  }
  for (auto& form : out.lines_) {
    for (std::vector<CollectiveLine>& v : form) {
      std::sort(v.begin(), v.end(),
                [](const CollectiveLine& a, const CollectiveLine& b) { return a.group < b.group; });
    }
  }
  return out;
}

bool CollectiveCosts::Empty() const {
  for (int c = 0; c < kCollectives; ++c) {
    if (Has(static_cast<Collective>(c))) return false;
  }
  return true;
}

double CollectiveCosts::Seconds(Collective c, int64_t g, double bytes, bool nonblocking) const {
  const std::vector<CollectiveLine>& v =
      Lines(c, nonblocking).empty() ? Lines(c, !nonblocking) : Lines(c, nonblocking);
  if (g <= 1 || v.empty()) return 0;
  const CollectiveLine* at = &v.front();
  for (const CollectiveLine& l : v) {
    if (l.group <= g) at = &l;
  }
  if (at->group == g) return at->alpha + at->beta * bytes;
  return at->alpha * LatencyTerm(c, g) / LatencyTerm(c, at->group) +
         at->beta * VolumeTerm(c, g) / VolumeTerm(c, at->group) * bytes;
}

}  // namespace meshtune::cost
