#include "ir/transfer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "base/check.h"
#include "ir/isl_util.h"

namespace meshtune::ir {

int TransferPrefix(const Computation& c, const Communication& t) {
  const int p = c.LoopIndex(t.loop);
  MT_CHECK(p >= 0);
  return c.loops()[p].kind == LoopKind::kTensorized ? p : p + 1;
}

isl::map TransferElements(const Computation& c, const Communication& t) {
  // The loops and the tensor's access decide it; its sharding does not.
  return c.MemoMap(absl::StrCat(c.LoopsKey(), "|TransferElements ", t.tensor, "@", t.loop), [&] {
    return c.RankAndTime(TransferPrefix(c, t)).reverse().apply_range(c.Access(t.tensor));
  });
}

namespace {

// The memo key of `question` about transfer `t`'s sources: the loops, the tensor's sharding
// (in TensorKey) and the transfer's loop decide them.
std::string SourcesKey(const Computation& c, const Communication& t, absl::string_view question) {
  return absl::StrCat(c.LoopsKey(), "|", question, " ", c.TensorKey(t.tensor), " via ", t.loop, "/",
                      absl::StrJoin(t.rotate, ","));
}

}  // namespace

isl::map TransferSources(const Computation& c, const Communication& t) {
  return c.MemoMap(SourcesKey(c, t, "TransferSources"), [&] {
    const int depth = TransferPrefix(c, t);
    const isl::map sources = TransferElements(c, t).apply_range(c.Owners(t.tensor));
    const Sharding* s = c.sharding(t.tensor);
    const size_t na = c.mesh().axes.size();
    std::vector<std::pair<unsigned, unsigned>> pin;  // replicated axes: read the own copy
    for (size_t a = 0; a < na; ++a) {
      if (s == nullptr || s->replicated_axes[a]) pin.emplace_back(a, a);
    }
    if (pin.empty()) return sources;
    return sources.intersect(
        Equalities(SetSpace(c.ctx(), "P", na + depth), SetSpace(c.ctx(), "Mesh", na), pin));
  });
}

namespace {

// TransferSources without the distributed loops (their values are the rank's coordinates).
isl::map SourcesByRank(const Computation& c, const Communication& t) {
  return c.MemoMap(SourcesKey(c, t, "SourcesByRank"), [&] {
    return DropDistributedLoops(c, TransferSources(c, t), TransferPrefix(c, t));
  });
}

}  // namespace

bool SourceAxisSingle(const Computation& c, const Communication& t, unsigned a) {
  return c.MemoBool(absl::StrCat(SourcesKey(c, t, "SourceAxisSingle"), " ", a),
                    [&] { return RangeComponent(SourcesByRank(c, t), a).is_single_valued(); });
}

bool SingleSource(const Computation& c, const Communication& t) {
  // A map into Mesh[s...] is single-valued exactly when each coordinate is; the
  // one-coordinate checks are cheaper and GatherAxes asks them too.
  for (unsigned a = 0; a < c.mesh().axes.size(); ++a) {
    if (!SourceAxisSingle(c, t, a)) return false;
  }
  return true;
}

isl::map DropDistributedLoops(const Computation& c, const isl::map& m, int prefix) {
  isl::map out = m;
  const unsigned na = c.mesh().axes.size();
  for (int j = prefix - 1; j >= 0; --j) {
    if (c.loops()[j].kind == LoopKind::kDistributed) out = ProjectOutDomain(out, na + j, 1);
  }
  return out.set_domain_tuple("P");
}

namespace {

// GatherAxes for a transfer whose sources (TransferSources) are known not to be
// single-valued. The cheaper necessary condition first: the fetched data must be the same
// along each axis the sources vary on; only then whether those sources cover the axes.
std::vector<int> GatherAxesOf(const Computation& c, const Communication& t) {
  const Mesh& mesh = c.mesh();
  const isl::map sources = SourcesByRank(c, t);
  std::vector<int> axes;
  std::vector<int64_t> box(mesh.axes.size(), 0);
  isl::map freed = sources;
  for (unsigned a = 0; a < mesh.axes.size(); ++a) {
    if (SourceAxisSingle(c, t, a)) continue;
    axes.push_back(static_cast<int>(a));
    box[a] = mesh.axes[a].size;
    freed = FreeRangeDim(freed, a);
  }
  if (axes.empty()) return {};
  // The group is the reader's own: along every other axis the data lives at the reader's
  // coordinate (the runtime gathers among the ranks that share its other coordinates).
  std::vector<std::pair<unsigned, unsigned>> own;
  for (unsigned a = 0; a < mesh.axes.size(); ++a) {
    if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end())
      own.emplace_back(a, a);
  }
  if (!own.empty() &&
      !sources.is_subset(Equalities(sources.domain().space(), sources.range().space(), own))) {
    return {};
  }
  for (int a : axes) {
    if (!ElementsAlignedAlong(c, t, a)) return {};
  }
  // Sources cover the whole group.
  freed = freed.intersect_range(Box(SetSpace(c.ctx(), "Mesh", mesh.axes.size()), box));
  if (!freed.is_subset(sources)) return {};
  return axes;
}

}  // namespace

bool ElementsAlignedAlong(const Computation& c, const Communication& t, int a) {
  // TransferElements without the distributed loops is independent of rank coordinate `a`.
  return c.MemoBool(absl::StrCat(c.LoopsKey(), "|ElementsAligned ", t.tensor, "@", t.loop, " ", a),
                    [&] {
                      return IndependentOfDim(
                          DropDistributedLoops(c, TransferElements(c, t), TransferPrefix(c, t)), a);
                    });
}

std::vector<int> ReductionAxes(const Computation& c) {
  std::vector<int> axes;
  for (const Loop& l : c.loops()) {
    if (l.kind == LoopKind::kDistributed && c.problem().IsReductionIndex(l.origin))
      axes.push_back(l.axis);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

std::vector<int> GatherAxes(const Computation& c, const Communication& t) {
  if (SingleSource(c, t)) return {};
  return GatherAxesOf(c, t);
}

}  // namespace meshtune::ir
