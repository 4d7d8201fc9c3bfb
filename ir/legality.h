// Legality of a scheduled Computation, decided with isl.
//
// CheckLegality returns every rule the computation breaks, each with a reason code
// (reason.h) and a message naming a witness (a rank, an element, an iteration):
//   - every element of every tensor is held by at least one rank;
//   - a communicate reads, for each rank and iteration of its loop, from one source rank:
//     the map (rank, loops up to the communicate loop) -> source rank is single-valued
//     (replicas along axes a tensor is copied over count as the reader's own copy), or
//     it is an all-gather: the data comes from every rank along whole mesh axes and
//     every rank along them needs the same data;
//   - every access to a tensor that is not communicated is local to the executing rank;
//   - every output element is written only on ranks that hold it, and each holder
//     computes all of it (several writers need a communicate that reduces);
//   - a reduced output's group adds up partial sums of the same elements at each step,
//     or its partial sums pass around a ring that ends on their holders (ir/ring.h);
//   - shards plus transfer buffers fit the mesh's per-rank memory budget (a prefetched
//     transfer's buffer counts twice: it has two halves);
//   - a prefetched communicate has a next step to overlap: its loop is serial with more
//     than one iteration (nothing_to_overlap otherwise).
// Divisibility and rotation conflicts are found earlier, by the primitives.
// Thread-compatible: uses the Computation's isl context.
#ifndef MESHTUNE_IR_LEGALITY_H_
#define MESHTUNE_IR_LEGALITY_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/computation.h"
#include "ir/footprint.h"
#include "ir/reason.h"

namespace meshtune::ir {

// Memo of the per-tensor checks, keyed by LegalityKey: the search judges thousands of
// schedules of one base that share loops and per-tensor choices, and each tensor's verdict
// depends on no more. Holds no isl objects. Use one cache per base
// Computation, on one thread. Without `messages`, rejections carry their code and an empty
// message (what a search needs, at a fraction of the cost). With `closed_forms` (and no
// messages) the checks are first asked of the closed forms (legality_closed_form.h) and of
// isl only outside them: the verdicts are the same.
class LegalityCache {
 public:
  explicit LegalityCache(bool messages = true, bool closed_forms = false)
      : messages_(messages), closed_forms_(closed_forms && !messages) {}

  struct TensorChecks {
    std::vector<Rejection> ownership;  // unowned_element
    // multi_source_transfer, non_local_access, unreduced_output, misaligned_reduction, then
    // nothing_to_overlap
    std::vector<Rejection> access;
    // The tensor's transfer buffer, both halves when prefetched: 0 when not communicated,
    // -1 when not computed (it is computed only for meshes with a memory budget).
    int64_t buffer_bytes = 0;
  };
  // The checks of `tensor` in `c`, computed on first use. A prefetched transfer's checks
  // are derived from those of the same transfer without prefetch.
  const TensorChecks& Get(const Computation& c, const std::string& tensor);
  size_t size() const { return checks_.size(); }
  // Tensors' checks decided without isl by the closed forms, and by isl.
  int64_t closed_form_checks() const { return closed_form_checks_; }
  int64_t isl_checks() const { return isl_checks_; }

 private:
  // Get as if `tensor`'s transfer were not prefetched.
  const TensorChecks& GetPlain(const Computation& c, const std::string& tensor);

  bool messages_;
  bool closed_forms_;
  int64_t closed_form_checks_ = 0, isl_checks_ = 0;
  std::unordered_map<std::string, TensorChecks> checks_;
  std::unordered_map<std::string, std::vector<Rejection>> ownership_;  // by tensor and layout
};

// What the checks of `tensor` in `c` depend on, as text: its sharding and transfer, the
// distributed loops (who executes what) and, for a communicated tensor, the loops up to its
// transfer (what each fetch holds). Serial loops inside the transfer, or any serial loop of
// a tensor that is not communicated, do not change its verdict: schedules that differ only
// there share the key. A prefetched transfer's key ends in "|prefetch=1".
std::string LegalityKey(const Computation& c, const std::string& tensor);

// Per-rank bytes of shards and transfer buffers (the box around each transfer's data,
// twice for a prefetched transfer).
Footprint ComputeFootprint(const Computation& c, LegalityCache* cache = nullptr);

// The checks of one tensor alone (what LegalityCache memoizes); buffer_bytes is computed
// only when the mesh has a memory budget; rejection messages only with `messages`.
LegalityCache::TensorChecks CheckTensor(const Computation& c, const std::string& tensor,
                                        bool messages);

// Every legality rule `c` breaks; empty when legal. With a cache, per-tensor checks are
// looked up (the result is the same). A transfer whose data lies on several ranks' shards
// that no all-gather covers (the cache's multi_source_transfer) is legal: it lowers to an
// all-to-all exchange (codegen::CommPattern::Kind::kAllToAll); the search proposes such
// points only with SpaceOptions::all_to_all.
std::vector<Rejection> CheckLegality(const Computation& c, LegalityCache* cache = nullptr);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_LEGALITY_H_
