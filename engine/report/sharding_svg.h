// The sharding picture of the tuning report: which block of a tensor's index space each rank
// of the mesh holds, as one self-contained SVG element (no scripts, no external references).
#ifndef MESHTUNE_ENGINE_REPORT_SHARDING_SVG_H_
#define MESHTUNE_ENGINE_REPORT_SHARDING_SVG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/program.h"

namespace meshtune::engine {

// Meshes of more ranks than this are not drawn cell by cell (the SVG says so instead).
inline constexpr int64_t kMaxDrawnRanks = 4096;

// The block of `tensor` that the rank at mesh coordinates `coords` (one per axis of
// `axis_names`) holds, e.g. "A[0:8, 8:16]" (half-open ranges of global indices; a dim the
// layout does not split is whole).
std::string BlockOfRank(const codegen::TensorInfo& tensor,
                        const std::vector<std::string>& axis_names,
                        const std::vector<int64_t>& coords);

// The SVG of `tensor`'s blocks on the mesh `axis_names` x `axis_sizes`: one cell (class
// "rank-cell") per rank, in row-major order (the last axis fastest) — a 1-D mesh as a row, a
// 2-D mesh as a grid (first axis down, second across), a 3-D mesh as one such grid per
// coordinate of its first axis — each filled with its block's colour (ranks holding the same
// block share one, so replication shows) and, up to 64 ranks, labelled with its coordinates
// and block (always in its tooltip); then a legend of the blocks and how many ranks hold each.
std::string ShardingSvg(const codegen::TensorInfo& tensor,
                        const std::vector<std::string>& axis_names,
                        const std::vector<int64_t>& axis_sizes);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REPORT_SHARDING_SVG_H_
